"""Read a submitted notebook's answers without running any of it.

Input: the path of a submitted ``.ipynb`` and the `Assignment` it answers. Output: an
`Extraction` with, for each `Answer`, the source text of the Python literal the student
bound to its name (``KERNEL = r\"\"\"...\"\"\"``) and its value, plus plain-words notes for
the feedback file (what was read from which cell, what was ignored, why an answer is missing).

Nothing in the notebook is executed: the file is parsed as JSON (nbformat), each answer cell
as Python with `ast.parse` (IPython's ``%magic`` and ``!shell`` lines are first turned into
plain calls, as text, so a cell that uses them still parses), and only the right-hand side of a
top-level ``NAME = <literal>`` is evaluated, with `ast.literal_eval`, which accepts strings,
numbers, tuples, lists, dicts, sets, booleans and None and nothing that calls code.

Which cell: the code cell whose ``metadata.nbgrader.grade_id`` is the answer's `cell`. If no
cell of the notebook has that grade_id (the metadata was lost, say by copying cells into a new
notebook), every code cell is searched and the last top-level binding of the name wins; the
notes say so. The last top-level statement that binds the name decides: a literal is the
answer; anything else (``KERNEL = make_kernel()``, ``KERNEL += "..."``) means "no literal
answer".
"""

from __future__ import annotations

import ast
import json
import os
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GradingError

__all__ = ["Extraction", "BadNotebook", "MAX_NOTEBOOK_BYTES", "read_notebook",
           "extract_answers", "extract_from_notebook"]

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
"""A submitted notebook larger than this (20 MiB) is not read: status bad_notebook."""


class BadNotebook(GradingError):
    """A submission that is not a readable Jupyter notebook (the message says why)."""


@dataclass
class Extraction:
    """What was read from one notebook.

    `sources` maps each answer's name to the exact source text of its literal (what the
    grading process re-reads with `ast.literal_eval`), `values` to its value; a missing answer
    is in neither. `notes` are sentences for the student's feedback file.
    """

    sources: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def read_notebook(path: Path):
    """Read `path` as a Jupyter notebook (nbformat 4) without running it.

    Refuses anything that is not a regular file (a symbolic link, a device such as
    /dev/zero, a FIFO), a file with more than one hard link (it may be another file of the
    machine, such as /etc/passwd, linked into the submission) and files over
    `MAX_NOTEBOOK_BYTES`. A file that is not a notebook is never quoted: the message names
    only where its JSON goes wrong. Returns the `nbformat.NotebookNode`; raises `BadNotebook`
    saying what is wrong.
    """
    import nbformat

    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise BadNotebook(f"cannot read {path.name}: {exc.strerror}") from None
    _refuse_odd_file(path, info)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            _refuse_odd_file(path, os.fstat(fh.fileno()))   # what was opened, not its name
            raw = fh.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as exc:
        raise BadNotebook(f"cannot read {path.name}: {exc.strerror}") from None
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise BadNotebook(f"{path.name} is over the {MAX_NOTEBOOK_BYTES // 2**20} MiB a "
                          f"submission may be: clear the outputs and hand it in again")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadNotebook(f"{path.name} is not UTF-8 text (byte {exc.start}): it is not a "
                          f"notebook file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:     # its message is the position only, no content
        raise BadNotebook(f"{path.name} is not a Jupyter notebook: not valid notebook JSON "
                          f"({exc.msg}: line {exc.lineno} column {exc.colno} (char "
                          f"{exc.pos}))") from None
    except (ValueError, RecursionError) as exc:
        raise BadNotebook(f"{path.name} is not a Jupyter notebook: its JSON cannot be read "
                          f"({type(exc).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise BadNotebook(f"{path.name} is not a Jupyter notebook: valid JSON, but not an "
                          f"object with a list of cells")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
    except Exception as exc:   # nbformat's messages may quote the file: name the type only
        raise BadNotebook(f"{path.name} is not a Jupyter notebook nbformat can read "
                          f"({type(exc).__name__})") from None
    cells = nb.get("cells")
    if not isinstance(cells, list):
        raise BadNotebook(f"{path.name} has no list of cells")
    return nb


def _refuse_odd_file(path: Path, info) -> None:
    """Raise `BadNotebook` unless `info` (an lstat or fstat) is a plain notebook-sized file
    with one link."""
    if stat.S_ISLNK(info.st_mode):
        raise BadNotebook(f"{path.name} is a symbolic link, not a regular file: hand in the "
                          f"notebook itself")
    if not stat.S_ISREG(info.st_mode):
        raise BadNotebook(f"{path.name} is not a regular file (a link, a device or a pipe): "
                          f"hand in the notebook itself")
    if info.st_nlink > 1:
        raise BadNotebook(f"{path.name} is a hard link ({info.st_nlink} names for one file): "
                          f"copy the file instead")
    if info.st_size > MAX_NOTEBOOK_BYTES:
        raise BadNotebook(f"{path.name} is {info.st_size / 2**20:.0f} MiB, over the "
                          f"{MAX_NOTEBOOK_BYTES // 2**20} MiB a submission may be: clear the "
                          f"outputs (Edit -> Clear Outputs of All Cells) and hand it in again")


def _cell_text(cell) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _grade_id(cell):
    meta = cell.get("metadata")
    if not isinstance(meta, dict):
        return None
    nbg = meta.get("nbgrader")
    return nbg.get("grade_id") if isinstance(nbg, dict) else None


def _parse(text: str):
    """The cell as a Python module AST, or (None, reason)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        text = TransformerManager().transform_cell(text)
    except Exception:       # IPython missing or the transformer gives up: parse the raw text
        pass
    try:
        return ast.parse(text), None
    except SyntaxError as exc:
        return None, f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _bound_names(stmt) -> list:
    """Names a top-level statement binds directly (plain names only)."""
    if isinstance(stmt, ast.Assign):
        out = []
        for target in stmt.targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    out.append(node.id)
        return out
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
        targets = [stmt.target] if isinstance(stmt, (ast.For, ast.AsyncFor)) else \
            [item.optional_vars for item in stmt.items if item.optional_vars is not None]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    return []


def _literal_rhs(stmt, name):
    """The value node if `stmt` is ``name = value`` / ``name: T = value``, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name:
        return stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
            stmt.target.id == name and stmt.value is not None:
        return stmt.value
    return None


def cell_literals(text: str) -> dict:
    """The answers one cell's source gives, read as the command reads them, without running
    anything: for each name bound at the cell's top level, the value of its *last* binding
    when that binding is ``NAME = <literal>``; a name whose last binding is anything else
    (a call, a loop variable, an import) is absent, as is everything of a cell that does not
    parse. Returns {name: value}."""
    tree, _ = _parse(text)
    found: dict = {}
    for stmt in (tree.body if tree is not None else []):
        for name in _bound_names(stmt):
            found.pop(name, None)
            rhs = _literal_rhs(stmt, name)
            if rhs is None:
                continue
            try:
                found[name] = ast.literal_eval(rhs)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                pass
    return found


def cell_bound_names(text: str) -> set:
    """Every name one cell's source binds at its top level (any kind of binding)."""
    tree, _ = _parse(text)
    return {n for stmt in (tree.body if tree is not None else []) for n in _bound_names(stmt)}


def _short(text: str, width: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[:width - 3] + "..."


def _source_of(node) -> str:
    """A node's source, shortened to one line, for a note."""
    try:
        return _short(ast.unparse(node))
    except (RecursionError, MemoryError, ValueError):
        return "..."


def _type_names(types) -> str:
    return " or ".join(t.__name__ for t in types)


def extract_from_notebook(nb, assignment) -> Extraction:
    """Read `assignment`'s answers from the notebook `nb` (a parsed nbformat notebook).

    Returns an `Extraction`; never raises for anything a notebook contains."""
    ex = Extraction()
    code_cells = [(i, c) for i, c in enumerate(nb.get("cells", []))
                  if isinstance(c, dict) and c.get("cell_type") == "code"]
    parsed: dict = {}

    def tree_of(index, cell):
        if index not in parsed:
            parsed[index] = _parse(_cell_text(cell))
        return parsed[index]

    answer_cells = {a.cell for a in assignment.answers}
    for answer in assignment.answers:
        where = [(i, c) for i, c in code_cells if _grade_id(c) == answer.cell]
        fallback = not where
        if fallback:
            where = code_cells
            ex.notes.append(f"No cell has the grade_id '{answer.cell}' where {answer.name} is "
                            f"answered (was the cell copied into a new notebook?); {answer.name} "
                            f"was looked for in every code cell instead.")
        last = None                      # (cell index, statement, cell's grade_id)
        for i, cell in where:
            tree, problem = tree_of(i, cell)
            if tree is None:
                if not fallback:
                    ex.notes.append(f"The answer cell '{answer.cell}' is not valid Python "
                                    f"({problem}), so {answer.name} could not be read.")
                continue
            for stmt in tree.body:
                if answer.name in _bound_names(stmt):
                    last = (i, stmt, _grade_id(cell))
        if last is None:
            ex.notes.append(f"{answer.name}: no literal answer: the "
                            + ("notebook" if fallback else f"cell '{answer.cell}'")
                            + f" never sets {answer.name} = <a literal value> at its top level.")
            continue
        i, stmt, gid = last
        place = f"cell '{gid}'" if gid else f"code cell {i + 1}"
        rhs = _literal_rhs(stmt, answer.name)
        if rhs is None:
            ex.notes.append(f"{answer.name}: no literal answer: in {place}, line {stmt.lineno} "
                            f"sets it with something that would have to be run "
                            f"('{_source_of(stmt)}'); the grader runs nothing, so write "
                            f"the value itself: {answer.name} = r'''...''' or a number.")
            continue
        try:
            value = ast.literal_eval(rhs)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            ex.notes.append(f"{answer.name}: no literal answer: in {place}, line {stmt.lineno} "
                            f"computes it ('{_source_of(rhs)}') instead of writing the "
                            f"value itself; the grader runs nothing, so write the literal value.")
            continue
        if not isinstance(value, tuple(answer.types)):
            ex.notes.append(f"{answer.name}: no answer of the right type: its value has type "
                            f"{type(value).__name__}; the assignment asks for "
                            f"{_type_names(answer.types)}.")
            continue
        try:
            ex.sources[answer.name] = repr(value) if isinstance(value, str) else ast.unparse(rhs)
        except (RecursionError, MemoryError, ValueError):
            ex.notes.append(f"{answer.name}: the literal is nested too deeply to pass on.")
            continue
        ex.values[answer.name] = value
        size = f" of {len(value):,} characters" if isinstance(value, str) else ""
        ex.notes.append(f"{answer.name}: read from {place}, line {stmt.lineno} "
                        f"(type {type(value).__name__}{size}).")

    # Everything else in the answer cells: ignored, and said so.
    for i, cell in code_cells:
        gid = _grade_id(cell)
        if gid not in answer_cells:
            continue
        tree, _ = tree_of(i, cell)
        if tree is None:
            continue
        names = {a.name for a in assignment.answers if a.cell == gid}
        for stmt in tree.body:
            bound = _bound_names(stmt)
            if len(bound) == 1 and bound[0] in names and _literal_rhs(stmt, bound[0]) is not None:
                continue
            ex.notes.append(f"Ignored in cell '{gid}', line {stmt.lineno}: "
                            f"'{_source_of(stmt)}' (the grader reads only the answer "
                            f"literals and runs nothing in the notebook).")
    # An answer also re-bound in another cell: only the answer cell counts.
    for answer in assignment.answers:
        if not any(_grade_id(c) == answer.cell for _, c in code_cells):
            continue
        for i, cell in code_cells:
            if _grade_id(cell) == answer.cell:
                continue
            tree, _ = tree_of(i, cell)
            if tree is not None and any(answer.name in _bound_names(s) for s in tree.body):
                ex.notes.append(f"{answer.name} is also set in code cell {i + 1}; only the "
                                f"answer cell '{answer.cell}' is graded.")
    return ex


def extract_answers(path: Path, assignment) -> Extraction:
    """Read `assignment`'s answers from the notebook file at `path` without running it.

    Raises `BadNotebook` if the file is not a readable notebook; see
    `extract_from_notebook` for the rest."""
    return extract_from_notebook(read_notebook(path), assignment)
