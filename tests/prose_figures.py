"""Finding the figures the course's prose quotes, and checking them against the data.

Used by tests/test_prose_figures.py; the claims themselves are in tests/figure_claims.py.

The prose is every markdown cell of the lesson and assignment notebooks, README.md and the
docs: sentences, with math (`$...$`), code spans and code blocks set aside for the search
of unclaimed figures.

(Claims are looked for in the whole text, code included: a reference answer's comment
"# 3,397 GB/s" is claimed like any sentence.) A *claim* pins a figure to the data: a pattern of the words around it, with ``{}`` where
each figure stands, and for each figure a function of the data giving the value it must have
(in the unit it is quoted in). The quoted figure holds when the data's value rounds to it at
the precision it is printed with ("42.2" is checked to one decimal, "21,148" to a unit), or,
for a claim written with ``cmp="<"`` (">"), when the data's value is below (above) it.

A sentence that speaks of measurements (GFLOP/s, cuBLAS, registers, Nsight Compute, the
H200, ...) has its every number looked at: it must be a claimed figure, or of a kind that is
not measured (a parameter after "=", a shape "128 × 128", a lesson or exercise number, a
formula's value in bytes per FMA, a count of threads, blocks or bytes derived in the text),
or listed in `figure_claims.EXEMPT` with the reason it is not a measurement.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent

NUMBER = r"[+−-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[+−-]?\d+(?:\.\d+)?"
_NUMBER_RE = re.compile(rf"(?<![\w.,/])(?:{NUMBER})(?![\w]|\.\d|,\d{{3}})")

#: Words that make a sentence one about measurements: its numbers are all looked at.
MARKERS = re.compile(
    r"GFLOP/s|TFLOP/s|GB/s|TB/s|cuBLAS|\bregisters\b|Nsight|\bncu\b|profiler|million|"
    r"\bwavefronts\b|conflicts|faster|slower|measured|\bpeak\b|bandwidth|H200|datasheet|"
    r"\bgains?\b|\bms\b|µs|\bspeed\b|\bruns at\b|times (?:faster|the)")

#: A number right after these is a parameter, a bound or a name, not a measurement.
_BEFORE_SKIP = re.compile(
    r"(?i:[=≤≥<>≈]|\b(?:lessons?|warp|block|bank|lane|thread|sections?|exercises?|steps?|[Aa]ssignments?|questions?|"
    r"lines?|cells?|rows?|columns?|versions?|CUDA|PyCUDA|driver|release|V|TILE|N|K|M|BM|BN|"
    r"BK|TM|TN|WM|WN|APAD|PAD|COARSE|P|T|of size|compute capability|sm_|at most|up to|"
    r"parts?|figures?|points?|kinds?|levels?|RTX|GTX)|\d-|×|=\s*(?:\d+,\s*)*\d+,?\s*(?:and|or)?)\s*$")
#: ... and a number right before these is a derived count or a formula's value.
_AFTER_SKIP = re.compile(
    r"^(?:\s*[×x]\s*\d|-(?:D|way|bit|byte|wide)|\s*(?:threads?|warps?|blocks?|SMs?|KiB|MiB|"
    r"GiB|B\b|bytes?|floats?|lanes?|accumulators?|FMAs?|tiles?|steps?|columns?|rows?|banks?|"
    r"sectors?|elements?|words?|outputs?|passes|points|iterations|values?|loads? per|"
    r"per (?:thread|lane|warp|block|step)|FLOP/B|FLOP/byte|FLOP per byte|B/FMA|"
    r"bytes? per FMA|shared bytes|instructions per|operands|multiply-adds|multiplies|"
    r"adds|divisors?|digits|KB|degrees|cycles|units?|sub-partitions?|quarters?|"
    r"to \d|and \d+ (?:KiB|B)\b|-(?:\d)))")
_SHAPE_BEFORE = re.compile(r"\d\s*[×x]\s*$")


@dataclass(frozen=True)
class Claim:
    """`file` (a repository path), `pattern` (the words around the figures, ``{}`` for
    each), `values` (one function of the data per ``{}``, giving the figure in its quoted
    unit), `cmp`: "=" (rounds to the quoted figure), "<" or ">" (the data is below or
    above it), one per figure or one for all; `what`: the data's entry, for messages."""

    file: str
    pattern: str
    values: tuple
    cmp: str | tuple = "="
    what: str = ""

    def regex(self) -> re.Pattern:
        parts = self.pattern.split("{}")
        out = []
        for i, literal in enumerate(parts):
            words = [re.escape(w) for w in literal.split()]
            piece = r"\s+".join(words)
            if literal[:1].isspace() and words:
                piece = r"\s+" + piece
            if literal[-1:].isspace() and words:
                piece = piece + r"\s+"
            if not words and literal:
                piece = r"\s+"
            out.append(piece)
            if i < len(parts) - 1:
                out.append(f"({NUMBER})")
        return re.compile("".join(out))

    def comparisons(self) -> tuple:
        if isinstance(self.cmp, str):
            return (self.cmp,) * len(self.values)
        return tuple(self.cmp)


def C(file: str, pattern: str, *values: Callable, cmp="=", what: str = "") -> Claim:
    return Claim(_path(file), pattern, tuple(values), cmp, what)


@dataclass(frozen=True)
class Exempt:
    """Figures in the sentence of `file` matching `pattern` that are not measurements:
    `figures` (the quoted numbers, as written; empty: all of the sentence's) and why."""

    file: str
    pattern: str
    figures: tuple = ()
    reason: str = ""


def E(file: str, pattern: str, *figures: str, reason: str) -> Exempt:
    return Exempt(_path(file), pattern, tuple(figures), reason)


_SHORT = {f"{n:02d}": None for n in range(1, 9)}


def _path(file: str) -> str:
    """"08" -> the lesson notebook, "a4" -> the assignment, "README" -> README.md."""
    if re.fullmatch(r"\d\d", file):
        found = sorted((ROOT / "notebooks").glob(f"{file}_*.ipynb"))
        return str(found[0].relative_to(ROOT))
    if re.fullmatch(r"a\d", file):
        found = sorted((ROOT / "notebooks" / "assignments").glob(f"{file}_*/{file}_*.ipynb"))
        return str(found[0].relative_to(ROOT))
    if file == "README":
        return "README.md"
    return file


# -- the prose ---------------------------------------------------------------------------

@dataclass
class Prose:
    """One markdown cell (or one document): its `file`, `cell` (index, None for a
    document), the `text` with whitespace collapsed, and `masked`, the same text with math,
    code spans and code (other than code comments) blanked out, same length."""

    file: str
    cell: int | None
    text: str
    masked: str = ""
    used: list = field(default_factory=list)     # (start, end) of claimed figures

    def where(self) -> str:
        return self.file if self.cell is None else f"{self.file}, cell {self.cell}"

    def sentence_at(self, pos: int) -> str:
        start = max(self.text.rfind(". ", 0, pos), self.text.rfind(": ", 0, pos),
                    self.text.rfind(" - ", 0, pos), self.text.rfind("| ", 0, pos))
        start = 0 if start < 0 else start + 2
        ends = [e for e in (self.text.find(". ", pos), self.text.find(" - ", pos),
                            self.text.find(" |", pos)) if e >= 0]
        end = min(ends) + 1 if ends else len(self.text)
        return self.text[start:end].strip()


def _blank(m: re.Match) -> str:
    return " " * len(m.group(0))


def _mask(text: str) -> str:
    text = re.sub(r"```.*?```", _blank, text, flags=re.S)   # code (a claim may still quote it)
    text = re.sub(r"\$\$.*?\$\$", _blank, text, flags=re.S)
    text = re.sub(r"\$[^$]*\$", _blank, text)
    text = re.sub(r"`[^`]*`", _blank, text)
    text = re.sub(r"<[^>]+>", _blank, text)                 # HTML tags (<details>, ...)
    text = re.sub(r"\]\([^)]*\)", _blank, text)             # a link's target
    text = re.sub(r"\(\s*\d+(?:\s*,\s*\d+)+\s*\)", _blank, text)   # a tuple: (0, 0, 0)
    text = re.sub(r"(?m)^(\s*)(\d+)(\.\s)", lambda m: m.group(1) + " " * len(m.group(2))
                  + m.group(3), text)                       # a numbered list's numbers
    text = re.sub(r"\*\*(\d+)\.", lambda m: "**" + " " * len(m.group(1)) + ".", text)
    return text


def _collapse(text: str, masked: str) -> tuple[str, str]:
    """Whitespace runs to one space, in both texts alike (they stay the same length)."""
    out_t, out_m = [], []
    space = False
    for ch, mc in zip(text, masked):
        if ch.isspace():
            if not space:
                out_t.append(" ")
                out_m.append(" ")
            space = True
        else:
            out_t.append(ch)
            out_m.append(mc)
            space = False
    return "".join(out_t), "".join(out_m)


def prose_of(path: str) -> list[Prose]:
    full = ROOT / path
    if path.endswith(".ipynb"):
        nb = json.loads(full.read_text(encoding="utf-8"))
        pieces = [(i, "".join(c["source"])) for i, c in enumerate(nb["cells"])
                  if c["cell_type"] == "markdown"]
    else:
        pieces = [(None, full.read_text(encoding="utf-8"))]
    out = []
    for cell, text in pieces:
        t, m = _collapse(text, _mask(text))
        out.append(Prose(path, cell, t, m))
    return out


def prose_files() -> list[str]:
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("0*.ipynb"))
    files += sorted(str(p.relative_to(ROOT))
                    for p in (ROOT / "notebooks" / "assignments").glob("*/*.ipynb"))
    files += ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))
    return files


# -- checking ----------------------------------------------------------------------------

def decimals(quoted: str) -> int:
    q = quoted.replace(",", "")
    return len(q.split(".")[1]) if "." in q else 0


def as_float(quoted: str) -> float:
    return float(quoted.replace(",", "").replace("−", "-"))


def holds(quoted: str, value: float, cmp: str) -> bool:
    q = as_float(quoted)
    if cmp == "<":
        return value < q
    if cmp == ">":
        return value > q
    return abs(value - q) <= 0.5 * 10 ** -decimals(quoted) + 1e-9


def shown(value: float, quoted: str) -> str:
    """`value` printed as `quoted` is (its decimals, its thousands separator)."""
    d = decimals(quoted)
    text = f"{value:,.{d}f}" if "," in quoted or abs(value) >= 10_000 else f"{value:.{d}f}"
    return ("+" + text) if quoted.startswith("+") and value >= 0 else text


def find_claim(claim: Claim, units: list[Prose]) -> list[tuple[Prose, re.Match]]:
    rx = claim.regex()
    found = []
    for p in units:
        if p.file != claim.file:
            continue
        found += [(p, m) for m in rx.finditer(p.text)]
    return found


def unclaimed(units: list[Prose], exempt: list[Exempt]) -> list[str]:
    """'file, cell N: «sentence»: the figure X is neither claimed nor exempt' for every
    number of a measurement sentence that nothing accounts for."""
    problems = []
    for p in units:
        for m in _NUMBER_RE.finditer(p.masked):
            s, e = m.span()
            number = m.group(0)
            signed = number[0] in "+−-"
            if any(a <= s + signed and e <= b for a, b in p.used):
                continue
            before, after = p.masked[max(0, s - 40):s], p.masked[e:e + 40]
            if _BEFORE_SKIP.search(before) or _AFTER_SKIP.match(after) or \
                    _SHAPE_BEFORE.search(before):
                continue
            sentence = p.sentence_at(s)
            if not MARKERS.search(sentence):
                continue
            if any(x.file == p.file and re.search(x.pattern, sentence)
                   and (not x.figures or number in x.figures) for x in exempt):
                continue
            problems.append(f"{p.where()}: «{sentence}»: the figure {number} is neither "
                            f"claimed (tests/figure_claims.py CLAIMS) nor exempt (EXEMPT)")
    return problems
