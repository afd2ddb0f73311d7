"""What a submission puts into the instructor's files and terminal: names written safely,
lists capped.

Input: names as Python gives them for what is on disk (a file or folder name that is not valid
UTF-8 arrives with its bad bytes as lone surrogates, PEP 383), and lists of sentences.
Output: text that can always be written as UTF-8 (`shown_name`, `printable`) and lists of
at most `MAX_LISTED` items (`capped`, `listing`).

One rule, used wherever a name or a list that a student controls is written: grades.csv,
grades.json, the feedback files and stderr.
"""

from __future__ import annotations

import os
import re

__all__ = ["MAX_LISTED", "is_utf8_name", "shown_name", "printable", "capped", "listing"]

MAX_LISTED = 20
"""Items of a list a submission can make as long as it likes (notes, names) that are written
out; the rest is counted ("... and 1,234 more")."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def is_utf8_name(name: str) -> bool:
    """Whether the file or folder name `name` (as `os.listdir` gives it) is valid UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """`name` (or any text holding one) as it is written in grades.csv, grades.json and the
    feedback: itself when it is valid UTF-8, else with each byte that is not written as
    ``\\xNN`` (the folder ``b'caf\\xe9'`` is written ``caf\\xe9``: errors='backslashreplace')."""
    if is_utf8_name(name):
        return name
    try:
        raw = os.fsencode(name)
    except UnicodeEncodeError:      # a lone surrogate that stands for no byte
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def printable(text: str) -> str:
    """`text` for a terminal line: `shown_name`, with control characters (a newline, an
    escape sequence) written as ``\\xNN`` so a name cannot start a line or move the cursor."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", shown_name(text))


def capped(items, limit: int = MAX_LISTED, what: str = "more") -> list:
    """The first `limit` of `items` (a list of str), then, if there were more, one line
    ``"... and N more"`` (`what` names them: "more notes")."""
    items = list(items)
    if len(items) <= limit:
        return items
    return items[:limit] + [f"... and {len(items) - limit:,} {what}"]


def listing(names, limit: int = MAX_LISTED) -> str:
    """Names joined with ", " for one line of text (each through `printable`), at most
    `limit` of them, then "and N more"."""
    names = list(names)
    shown = ", ".join(printable(n) for n in names[:limit])
    if len(names) > limit:
        shown += f" and {len(names) - limit:,} more"
    return shown
