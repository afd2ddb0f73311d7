"""The package's layout: no import circles inside tilinglib.

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
# removes the circles through it and parse.py; until then those, and only those, are known.


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
    assert {"tilinglib.emulator.access", "tilinglib.emulator.warps",
            "tilinglib.emulator.barriers"} <= graph["tilinglib.emulator.execute"]
    assert "tilinglib.errors" in graph["tilinglib.emulator.memory"]
    assert "tilinglib.emulator" in graph["tilinglib.backend"]          # a lazy import
    # The runtime's parts are below execute, and codegen is below the runtime: none of
    # them imports execute.py or its parts.
    runtime = {f"tilinglib.emulator.{m}" for m in
               ("execute", "access", "barriers", "warps", "diagnostics")}
    for m in ("access", "barriers", "warps", "diagnostics", "memory", "races", "trace",
              "compiler", "expressions", "statements", "builtins", "closures", "values"):
        name = f"tilinglib.emulator.{m}"
        assert not (graph[name] & (runtime | {"tilinglib.emulator.module"})), name


def test_no_import_circle_in_tilinglib():
    found = circles(import_graph(PACKAGE))
    assert not found, f"import circles inside tilinglib:\n{_text(found)}"


def test_the_front_end_imports_nothing_above_it():
    # tilinglib/frontend/ is the bottom layer the emulator, the PyCUDA backend and the grader
    # use: it may import only itself, tilinglib.errors and tilinglib.platform_support (what
    # is asked of the OS, such as prlimit for clang; it imports no tilinglib module itself)
    graph = import_graph(PACKAGE)
    front = {m for m in graph if m.startswith("tilinglib.frontend")}
    assert front, "no tilinglib.frontend modules found"
    leaves = {"tilinglib.errors", "tilinglib.platform_support"}
    assert not graph["tilinglib.platform_support"], graph["tilinglib.platform_support"]
    for m in front:
        above = {t for t in graph[m] if t not in front and t not in leaves}
        assert not above, f"{m} imports {sorted(above)}"
