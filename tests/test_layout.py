"""The package's layout: no import circles inside tilinglib, and docs/architecture.md's layout
block and import rules true of the files and the code.

The import graph is read from the source files with `ast` (nothing is imported): one node
per module, an edge for every `import` / `from ... import` that names a tilinglib module,
wherever it stands (a function-level import is a dependency too, only a later one). Importing
a submodule runs its packages' `__init__` first, but Python has already started those, so
that implicit edge is not counted; an explicit `from . import emulator` is. Imports under
`if TYPE_CHECKING:` never run and are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tilinglib"

# The front end (branch `frontend`) moves preprocess.py out of tilinglib/emulator/ and
# removes the circles through it and program.py; until then those, and only those, are known.


def module_names(package_dir: Path) -> dict[str, Path]:
    """{dotted module name: file} of every .py file under `package_dir` (a package
    `__init__.py` is named after its folder)."""
    names = {}
    top = package_dir.parent
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(top).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _target(name: str, modules) -> str | None:
    """The module of `modules` that importing dotted `name` loads last: `name` itself, or
    the longest package or module above it (`a.b.func` -> `a.b`); None outside."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _runtime_nodes(tree):
    """Every node of `tree` except those under `if TYPE_CHECKING:` (imports for type
    checkers only, which never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                todo.extend(child.orelse)
            else:
                todo.append(child)


def _is_type_checking(test) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
            or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """{module: modules of the same package it imports}, from the sources' `ast`."""
    modules = module_names(package_dir)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _runtime_nodes(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")
                    base = base[:len(base) - (node.level - 1)]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                # `from pkg import x`: x is a submodule when there is one, else a name in pkg.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for t in targets:
                m = _target(t, modules)
                if m is not None and m != name:
                    graph[name].add(m)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle (a list of modules, the first repeated at the end) for every strongly
    connected group of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    group = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        group.append(w)
                        if w == v:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return [_one_circle(graph, set(g)) for g in groups]


def _one_circle(graph, group: set) -> list[str]:
    """A shortest circle through the first module of `group`, inside `group` (BFS)."""
    start = min(group)
    parent = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & group):
                if w == start:
                    path = [v]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    return path[::-1] + [start]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no circle in {sorted(group)}")  # a group always has one


def _text(found) -> str:
    return "\n".join(" -> ".join(c) for c in found)


# ----------------------------------------------------------------------------- the reader

def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root / "pkg"


def test_the_reader_finds_a_circle_through_a_function_level_relative_import(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from .b import f\n",
        "pkg/b.py": "def f():\n    from . import c\n",
        "pkg/c.py": "import pkg.a as a\n",
        "pkg/d.py": "from pkg import a\nfrom .sub.e import g\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/e.py": "from ..a import x\nimport numpy\n",
        "pkg/f.py": "import typing\nif typing.TYPE_CHECKING:\n    from .d import y\n",
    })
    graph = import_graph(pkg)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"},
                     "pkg.d": {"pkg.a", "pkg.sub.e"}, "pkg.sub": set(),
                     "pkg.sub.e": {"pkg.a"}, "pkg.f": set()}
    assert circles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_the_reader_counts_an_explicit_package_import_but_not_the_implicit_one(tmp_path):
    pkg = _write(tmp_path, {
        "pkg/__init__.py": "def __getattr__(n):\n    from .backend import get\n",
        "pkg/backend.py": "def get():\n    from . import sub\n",
        "pkg/sub/__init__.py": "from .m import run\n",
        "pkg/sub/m.py": "from ..backend import get\n",      # m -> backend -> sub -> m
        "pkg/other.py": "from .sub.m import run\n",          # implies pkg.sub: not counted
    })
    graph = import_graph(pkg)
    assert graph["pkg.other"] == {"pkg.sub.m"}
    assert circles(graph) == [["pkg.backend", "pkg.sub", "pkg.sub.m", "pkg.backend"]]


def test_a_two_module_circle_and_two_separate_circles(tmp_path):
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "x": {"y"}, "y": {"z"}, "z": {"x"}}
    assert circles(graph) == [["a", "b", "a"], ["x", "y", "z", "x"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


# ----------------------------------------------------------------------------- tilinglib

def test_the_graph_of_tilinglib_has_the_emulator_pipeline():
    graph = import_graph(PACKAGE)
    # The reader resolves tilinglib's relative imports (a sample of known edges).
    assert {"tilinglib.toolchain.runtime.access", "tilinglib.toolchain.runtime.warps",
            "tilinglib.toolchain.runtime.barriers"} <= graph["tilinglib.toolchain.runtime.execute"]
    assert "tilinglib.errors" in graph["tilinglib.toolchain.model.memory"]
    assert "tilinglib.toolchain.backends.emulator" in graph["tilinglib.backend"]   # a lazy import
    # The runtime's parts are below execute: none of them imports execute.py or module.py.
    top = {"tilinglib.toolchain.runtime.execute", "tilinglib.toolchain.runtime.module"}
    for m in ("access", "barriers", "warps", "atomics"):
        name = f"tilinglib.toolchain.runtime.{m}"
        assert not graph[name] & top, name


def test_no_import_circle_in_tilinglib():
    found = circles(import_graph(PACKAGE))
    assert not found, f"import circles inside tilinglib:\n{_text(found)}"


# ----------------------------------------------------------- docs/architecture.md, checked

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _block_after(text: str, heading: str) -> list[str]:
    """The lines of the first ``` block after the line `heading` of `text`."""
    lines = text.splitlines()
    at = lines.index(heading)
    start = next(i for i in range(at + 1, len(lines)) if lines[i].startswith("```"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    return lines[start + 1:end]


def layout_files(block: list[str]) -> set[str]:
    """The paths a layout block names: one entry per line whose first word ends in ``/`` (a
    folder) or ``.py`` and stands two spaces in from the folder above it (the top folder at
    the margin); the rest of the line, and lines indented further, describe it."""
    paths, stack = set(), []          # stack: (indent, folder path)
    for line in block:
        word = line.split()[0] if line.split() else ""
        indent = len(line) - len(line.lstrip())
        if not (word.endswith("/") or word.endswith(".py")):
            continue
        if indent != (stack[-1][0] + 2 if stack else 0) and not any(i + 2 == indent for i, _ in stack):
            continue                  # a description line that starts with a file's name
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (stack[-1][1] if stack else "") + word
        paths.add(path.rstrip("/"))
        if word.endswith("/"):
            stack.append((indent, path))
    return paths


def package_files(package_dir: Path) -> set[str]:
    """Every .py file and every folder holding one under `package_dir`, as paths from its
    parent (``tilinglib/launch.py``, ``tilinglib/grading``)."""
    top = package_dir.parent
    found = set()
    for path in package_dir.rglob("*.py"):
        rel = path.relative_to(top)
        found.add(rel.as_posix())
        found.update(p.as_posix() for p in rel.parents if p.as_posix() != ".")
    return found


def parse_rules(block: list[str]) -> list[tuple[str, set[str], set[str]]]:
    """``group: allowed, !forbidden, ...`` lines -> [(group, allowed, forbidden)], module
    prefixes relative to tilinglib (``toolchain.model``; ``tilinglib`` itself is the whole
    package); ``(nothing)`` allows nothing outside the group."""
    rules = []
    for line in block:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        group, _, rest = line.partition(":")
        allowed, forbidden = set(), set()
        for item in (s.strip() for s in rest.split(",")):
            if item in ("", "(nothing)"):
                continue
            (forbidden if item.startswith("!") else allowed).add(item.lstrip("!"))
        for g in group.split("+"):
            rules.append((g.strip(), allowed, forbidden))
    return rules


def _full(prefix: str) -> str:
    return "tilinglib" if prefix == "tilinglib" else f"tilinglib.{prefix}"


def _under(module: str, prefix: str) -> bool:
    p = _full(prefix)
    return module == p or module.startswith(p + ".")


def rule_violations(graph: dict[str, set[str]], rules) -> list[str]:
    """Each import of `graph` that its module's rule (the one with the longest matching
    group) does not allow: a module may import its own group, and what `allowed` names
    unless `forbidden` names it."""
    found = []
    for module in sorted(graph):
        matching = [r for r in rules if _under(module, r[0])]
        if not matching:
            found.append(f"{module}: no rule names its group")
            continue
        group, allowed, forbidden = max(matching, key=lambda r: len(_full(r[0])))
        for target in sorted(graph[module]):
            ok = _under(target, group) or any(_under(target, a) for a in allowed)
            if not ok or any(_under(target, f) for f in forbidden):
                found.append(f"{module} imports {target} (rule for {group})")
    return found


def test_the_layout_block_names_every_file_and_only_files_that_exist():
    block = _block_after(ARCHITECTURE.read_text(encoding="utf-8"), "## Package layout")
    listed, present = layout_files(block), package_files(PACKAGE)
    assert not present - listed, f"not in docs/architecture.md's layout: {sorted(present - listed)}"
    assert not listed - present - {"tilinglib/data", "tilinglib/kernels/*.cu"}, \
        f"named by docs/architecture.md but missing: {sorted(listed - present)}"


def test_the_import_rules_of_the_architecture_hold():
    rules = parse_rules(_block_after(ARCHITECTURE.read_text(encoding="utf-8"), "## Import rules"))
    assert rules, "docs/architecture.md has no import rules"
    found = rule_violations(import_graph(PACKAGE), rules)
    assert not found, "imports against docs/architecture.md's rules:\n" + "\n".join(found)


def test_the_rule_reader_on_a_small_case():
    rules = parse_rules(["errors + gpu: (nothing)", "# a comment", "toolchain.model: errors",
                         "toolchain: errors, launch", "tilinglib: tilinglib, !grading"])
    assert rules[0] == ("errors", set(), set()) and rules[1] == ("gpu", set(), set())
    graph = {"tilinglib.errors": set(), "tilinglib.gpu": {"tilinglib.errors"},
             "tilinglib.toolchain.model.values": {"tilinglib.errors", "tilinglib.toolchain.model.memory"},
             "tilinglib.toolchain.model.memory": {"tilinglib.launch"},
             "tilinglib.toolchain.runtime.execute": {"tilinglib.launch", "tilinglib.toolchain.model.memory"},
             "tilinglib.widgets": {"tilinglib.grading.sgemm", "tilinglib.toolchain.runtime.execute"},
             "tilinglib.grading.sgemm": set()}
    assert rule_violations(graph, rules) == [
        "tilinglib.gpu imports tilinglib.errors (rule for gpu)",
        "tilinglib.toolchain.model.memory imports tilinglib.launch (rule for toolchain.model)",
        "tilinglib.widgets imports tilinglib.grading.sgemm (rule for tilinglib)"]
    assert layout_files(["tilinglib/", "  a.py   text", "  sub/   more", "    b.py", "      detail.py x",
                         "  c.py"]) == {"tilinglib", "tilinglib/a.py", "tilinglib/sub",
                                        "tilinglib/sub/b.py", "tilinglib/c.py"}


def test_the_front_end_imports_nothing_above_it():
    # tilinglib/toolchain/frontend/ is the bottom layer the emulator, the PyCUDA backend and the grader
    # use: it may import only itself, tilinglib.errors, tilinglib.gpu (the hardware's numbers) and
    # tilinglib.toolchain.platform_support (what is asked of the OS, such as prlimit for clang)
    # and tilinglib.toolchain.disk_cache (the cache of its results across processes);
    # the last three import no tilinglib module themselves
    graph = import_graph(PACKAGE)
    front = {m for m in graph if m.startswith("tilinglib.toolchain.frontend")}
    assert front, "no tilinglib.toolchain.frontend modules found"
    leaves = {"tilinglib.errors", "tilinglib.gpu", "tilinglib.toolchain.platform_support",
              "tilinglib.toolchain.disk_cache"}
    assert not graph["tilinglib.toolchain.platform_support"], graph["tilinglib.toolchain.platform_support"]
    assert not graph["tilinglib.toolchain.disk_cache"], graph["tilinglib.toolchain.disk_cache"]
    assert not graph["tilinglib.gpu"], graph["tilinglib.gpu"]
    for m in front:
        above = {t for t in graph[m] if t not in front and t not in leaves}
        assert not above, f"{m} imports {sorted(above)}"
