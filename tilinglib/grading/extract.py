"""Read a submitted notebook's answers without running any of it.

Input: the path of a submitted ``.ipynb`` and the `Assignment` it answers. Output: an
`Extraction` with, for each `Answer`, the source text of the Python literal the student
bound to its name (``KERNEL = r\"\"\"...\"\"\"``) and its value, plus plain-words notes for
the feedback file (what was read from which cell, what was ignored, why an answer is missing).

Nothing in the notebook is executed: the file is parsed as JSON (nbformat 4), each answer cell
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
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GradingError
from .names import MAX_LISTED, capped

__all__ = ["Extraction", "BadNotebook", "MAX_NOTEBOOK_BYTES", "MAX_FILE_BYTES", "open_notebook",
           "read_notebook", "read_notebook_fd", "extract_answers", "extract_from_notebook"]

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
"""A notebook whose cells' sources add up to more than this (20 MiB of UTF-8) is not read:
status bad_notebook. Outputs do not count: they are dropped first."""

MAX_FILE_BYTES = 128 * 1024 * 1024
"""A submitted file larger than this (128 MiB, outputs included) is not read at all."""


class BadNotebook(GradingError):
    """A submission that is not a readable Jupyter notebook (the message says why)."""


@dataclass
class Extraction:
    """What was read from one notebook.

    `sources` maps each answer's name to the exact source text of its literal (what the
    grading process re-reads with `ast.literal_eval`), `values` to its value; a missing answer
    is in neither. `notes` are sentences for the student's feedback file, at most
    `names.MAX_LISTED` of them and a last one counting the rest.
    """

    sources: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def open_notebook(path: Path) -> int:
    """Open the submitted file `path` for reading, without reading any of it; returns the file
    descriptor (the caller closes it).

    Refuses anything that is not a regular file (a symbolic link, a device such as
    /dev/zero, a FIFO), a file with more than one hard link (it may be another file of the
    machine, such as /etc/passwd, linked into the submission) and files over
    `MAX_FILE_BYTES`, checking what was opened, not only its name. Raises `BadNotebook`."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise BadNotebook(f"cannot read {_name(path)}: {exc.strerror}") from None
    _refuse_odd_file(path, info)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise BadNotebook(f"cannot read {_name(path)}: {exc.strerror}") from None
    try:
        _refuse_odd_file(path, os.fstat(fd))     # what was opened, not its name
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_notebook(path: Path):
    """Read `path` as a Jupyter notebook (nbformat 4) without running it: `open_notebook`,
    then `read_notebook_fd`. Returns the notebook as a dict (outputs dropped); raises
    `BadNotebook` saying what is wrong."""
    fd = open_notebook(path)
    return read_notebook_fd(fd, _name(Path(path)))


def read_notebook_fd(fd: int, name: str) -> dict:
    """Read the open file `fd` (closed afterwards) as a Jupyter notebook named `name`.

    The file must be UTF-8 JSON: an object with ``"nbformat": 4`` and a list of cells
    (nbformat's own reader is not used: importing it takes seconds, in every grading
    process, for a schema check whose failures nbformat only logs). Every cell's outputs,
    execution count and attachments are dropped before anything else is looked at; the size
    rule (`MAX_NOTEBOOK_BYTES`) applies to what is left, the cells' sources. A file that is
    not a notebook is never quoted: the message names only where its JSON goes wrong.
    Returns the notebook as a dict (what `json.loads` gives); raises `BadNotebook`."""
    try:
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise BadNotebook(f"cannot read {name}: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise BadNotebook(f"{name} is over the {MAX_FILE_BYTES // 2**20} MiB a submitted file "
                          f"may be: clear the outputs (Edit -> Clear Outputs of All Cells) and "
                          f"hand it in again")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadNotebook(f"{name} is not UTF-8 text (byte {exc.start}): it is not a "
                          f"notebook file") from None
    del raw
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:     # its message is the position only, no content
        raise BadNotebook(f"{name} is not a Jupyter notebook: not valid notebook JSON "
                          f"({exc.msg}: line {exc.lineno} column {exc.colno} (char "
                          f"{exc.pos}))") from None
    except (ValueError, RecursionError) as exc:
        raise BadNotebook(f"{name} is not a Jupyter notebook: its JSON cannot be read "
                          f"({type(exc).__name__})") from None
    del text
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise BadNotebook(f"{name} is not a Jupyter notebook: valid JSON, but not an "
                          f"object with a list of cells")
    version = data.get("nbformat")
    if version != 4 or isinstance(version, bool):
        raise BadNotebook(f"{name} says it is in notebook format {_short(repr(version), 20)}, "
                          f"not 4 (the format every current Jupyter writes): open it in "
                          f"Jupyter, save it and hand it in again")
    sources = 0
    for cell in data["cells"]:
        if isinstance(cell, dict):
            if "outputs" in cell:
                cell["outputs"] = []
            if "execution_count" in cell:
                cell["execution_count"] = None
            cell.pop("attachments", None)
            sources += len(_cell_text(cell).encode("utf-8", "surrogatepass"))
    if sources > MAX_NOTEBOOK_BYTES:
        raise BadNotebook(f"{name}'s cells hold {sources / 2**20:.1f} MiB of source, over the "
                          f"{MAX_NOTEBOOK_BYTES // 2**20} MiB a submission may be (outputs "
                          f"not counted): hand in the notebook of the assignment, without "
                          f"the extra code")
    return data


def _name(path: Path) -> str:
    from .names import shown_name

    return shown_name(path.name)


def _refuse_odd_file(path: Path, info) -> None:
    """Raise `BadNotebook` unless `info` (an lstat or fstat) is a plain notebook-sized file
    with one link."""
    if stat.S_ISLNK(info.st_mode):
        raise BadNotebook(f"{_name(path)} is a symbolic link, not a regular file: hand in the "
                          f"notebook itself")
    if not stat.S_ISREG(info.st_mode):
        raise BadNotebook(f"{_name(path)} is not a regular file (a link, a device or a pipe): "
                          f"hand in the notebook itself")
    if info.st_nlink > 1:
        raise BadNotebook(f"{_name(path)} is a hard link ({info.st_nlink} names for one file): "
                          f"copy the file instead")
    if info.st_size > MAX_FILE_BYTES:
        raise BadNotebook(f"{_name(path)} is {info.st_size / 2**20:.0f} MiB, over the "
                          f"{MAX_FILE_BYTES // 2**20} MiB a submitted file may be: clear the "
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


def _parse(text: str, strict: bool = False):
    """The cell as a Python module AST, or (None, reason). `strict`: a MemoryError (a cell of
    far too much code for the process's memory limit) is raised, not a reason."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        text = TransformerManager().transform_cell(text)
    except Exception:       # IPython missing or the transformer gives up: parse the raw text
        pass
    try:
        return ast.parse(text), None
    except SyntaxError as exc:
        return None, f"line {exc.lineno}: {exc.msg}"
    except MemoryError:
        if strict:
            raise
        return None, "MemoryError: far too much code for the memory this may use"
    except (ValueError, RecursionError) as exc:
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
    """Read `assignment`'s answers from the notebook `nb` (parsed: `read_notebook`'s dict or
    an nbformat.NotebookNode).

    Returns an `Extraction`; raises nothing for anything a notebook contains but
    MemoryError, for a cell of more code than the process's memory holds."""
    ex = Extraction()
    code_cells = [(i, c) for i, c in enumerate(nb.get("cells", []))
                  if isinstance(c, dict) and c.get("cell_type") == "code"]
    parsed: dict = {}

    def tree_of(index, cell):
        if index not in parsed:
            parsed[index] = _parse(_cell_text(cell), strict=True)
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

    ex.notes += _duplicate_cells(enumerate(nb.get("cells", [])))
    # Everything else in the answer cells: ignored, and said so (the first MAX_LISTED).
    ignored = 0
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
            ignored += 1
            if ignored <= MAX_LISTED:
                ex.notes.append(f"Ignored in cell '{gid}', line {stmt.lineno}: "
                                f"'{_source_of(stmt)}' (the grader reads only the answer "
                                f"literals and runs nothing in the notebook).")
    if ignored > MAX_LISTED:
        ex.notes.append(f"... and {ignored - MAX_LISTED:,} more statements of the answer cells "
                        f"ignored ({ignored:,} in all).")
    # An answer also re-bound in another cell: only the answer cell counts.
    also = []
    for answer in assignment.answers:
        if not any(_grade_id(c) == answer.cell for _, c in code_cells):
            continue
        for i, cell in code_cells:
            if _grade_id(cell) == answer.cell:
                continue
            tree, _ = tree_of(i, cell)
            if tree is not None and any(answer.name in _bound_names(s) for s in tree.body):
                also.append(f"{answer.name} is also set in code cell {i + 1}; only the "
                            f"answer cell '{answer.cell}' is graded.")
    ex.notes += capped(also, what="more cells that set an answer")
    return ex


def _duplicate_cells(cells) -> list:
    """Notes naming each nbgrader grade_id that more than one cell of `cells` ((index, cell)
    pairs) carries, as nbgrader counts them (cells marked grade, solution or locked)."""
    where: dict = {}
    for i, cell in cells:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
        if not isinstance(nbg, dict) or not any(nbg.get(k) for k in ("grade", "solution",
                                                                     "locked")):
            continue
        gid = nbg.get("grade_id")
        if isinstance(gid, str):
            where.setdefault(gid, []).append(i + 1)
    notes = []
    for gid, at in where.items():
        if len(at) > 1:
            shown = ", ".join(map(str, at[:MAX_LISTED])) + (" ..." if len(at) > MAX_LISTED else "")
            notes.append(f"The cell '{_short(gid, 40)}' appears {len(at):,} times (cells "
                         f"{shown}): nbgrader refuses a notebook whose grade_ids repeat (its "
                         f"autograde stops on it with 'Duplicate grade id'). This command read "
                         f"them all, the last binding of an answer winning, as when the "
                         f"notebook runs top to bottom; delete the copies and hand it in again.")
    return notes


def extract_answers(path: Path, assignment) -> Extraction:
    """Read `assignment`'s answers from the notebook file at `path` without running it.

    Raises `BadNotebook` if the file is not a readable notebook; see
    `extract_from_notebook` for the rest."""
    return extract_from_notebook(read_notebook(path), assignment)
