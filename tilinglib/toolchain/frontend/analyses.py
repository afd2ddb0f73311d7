"""Two analyses of a kernel's pycparser AST, shared by the emulator's compiler (its run-time
warnings, docs/emulator.md "Diagnostics") and the grader's source checks
(`tilinglib.grading.source_checks`):

- `unset_reads`: definite assignment, which reads of which locals may see them unset (only
  those are checked per thread at run time);
- `thread_indexed_stores`: which index positions of each `__shared__` array every store fills
  with one threadIdx component (compared with the launch's block).
"""

from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast

from .lower import SHARED_MARK

__all__ = ["UnsetRead", "line_of", "thread_component", "thread_indexed_stores", "type_names",
           "unset_reads", "walk"]


def line_of(node) -> int | None:
    coord = getattr(node, "coord", None)
    return getattr(coord, "line", None)


def type_names(type_node) -> tuple[list[str], bool, bool]:
    """(names of the base type, is_pointer, is_array) of a declaration's type."""
    pointer = array = False
    t = type_node
    while not isinstance(t, (c_ast.TypeDecl, c_ast.IdentifierType)):
        if isinstance(t, c_ast.PtrDecl):
            pointer = True
        elif isinstance(t, c_ast.ArrayDecl):
            array = True
        t = getattr(t, "type", None)
        if t is None:
            return [], pointer, array
    if isinstance(t, c_ast.TypeDecl):
        t = t.type
    names = list(getattr(t, "names", []) or [])
    return names, pointer, array


def walk(node):
    """Every node under `node` (itself included), in source order."""
    if node is None:
        return
    yield node
    for _, child in node.children():
        yield from walk(child)



@dataclass(frozen=True)
class UnsetRead:
    """A read of the local scalar `name` (declared by `decl`, without a value) at `node` (a
    pycparser `ID`), on some path from the declaration to which nothing assigns it."""

    name: str
    decl: c_ast.Decl
    node: c_ast.ID
    line: int | None


def unset_reads(func: c_ast.FuncDef) -> list[UnsetRead]:
    """The reads of local scalars in `func` that are not definitely assigned, in source order.

    Definite assignment over the AST: the set of variables assigned on every path is carried
    through statements, intersected where paths join (after `if`/`else`, `?:`, `switch`, at
    a loop's exit and its `break`s), and a `return`, `break` or `continue` ends a path. A
    loop body is analysed with the state on entry to the loop (what the first iteration
    sees), which is sound for every later iteration. The right side of `&&`/`||` may not run,
    so what it assigns does not count afterwards. Parameters, `__shared__` variables and
    arrays are not tracked (the emulator checks local arrays element by element at run
    time). The analysis is conservative: a read it reports may still be set at run time on
    every path the program really takes (`if (i > 0) use(x); x = ...;` in a loop); the
    emulator confirms each reported read per thread when it runs (docs/emulator.md)."""
    da = _DefiniteAssignment()
    da.stmt(func.body, frozenset())
    out = [UnsetRead(da.tracked[key].name, da.tracked[key], node, line_of(node))
           for key, node in da.reads]
    out.sort(key=lambda r: (r.line or 0, getattr(r.node.coord, "column", 0) or 0))
    return out


def _always_true(cond) -> bool:
    """A loop condition that never fails (`for (;;)`, `while (1)`, `while (true)`): the loop
    ends only by `break` (or `return`)."""
    if cond is None:
        return True
    if isinstance(cond, c_ast.Constant) and cond.type == "int":
        try:
            return int(cond.value.rstrip("uUlL"), 0) != 0
        except ValueError:
            return False
    return isinstance(cond, c_ast.ID) and cond.name == "true"


def _meet(*states):
    """Variables assigned on every one of `states` (None: a path that never gets here)."""
    live = [s for s in states if s is not None]
    if not live:
        return None
    out = live[0]
    for s in live[1:]:
        out = out & s
    return out


class _DefiniteAssignment:
    """The walk behind `unset_reads`. A state is a frozenset of declarations (by id) that are
    definitely assigned, or None for code no path reaches."""

    def __init__(self):
        self.scopes: list[dict] = [{}]
        self.tracked: dict[int, c_ast.Decl] = {}
        self.reads: list[tuple[int, c_ast.ID]] = []
        self.breaks: list[list] = []
        self.continues: list[list] = []

    def _resolve(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def _read(self, node, s):
        key = self._resolve(node.name)
        if key is not None and s is not None and key not in s:
            self.reads.append((key, node))

    @staticmethod
    def _assign(s, key):
        return s if s is None or key is None else s | {key}

    @staticmethod
    def _base_var(e):
        """The variable a `v`, `v.x` or `v.a.b` lvalue names (None for memory lvalues)."""
        while isinstance(e, c_ast.StructRef) and e.type == ".":
            e = e.name
        return e.name if isinstance(e, c_ast.ID) else None

    # -- expressions
    def expr(self, e, s):
        if e is None:
            return s
        if isinstance(e, c_ast.ID):
            self._read(e, s)
            return s
        if isinstance(e, c_ast.Assignment):
            name = self._base_var(e.lvalue)
            if name is not None and self._resolve(name) is not None:
                if e.op != "=":                 # x += v reads x
                    self._read_lvalue(e.lvalue, s)
                s = self.expr(e.rvalue, s)
                return self._assign(s, self._resolve(name))
            s = self.expr(e.lvalue, s)
            return self.expr(e.rvalue, s)
        if isinstance(e, c_ast.UnaryOp):
            if e.op == "sizeof":
                return s
            if e.op in ("++", "--", "p++", "p--"):
                name = self._base_var(e.expr)
                if name is not None and self._resolve(name) is not None:
                    self._read_lvalue(e.expr, s)
                    return self._assign(s, self._resolve(name))
            return self.expr(e.expr, s)
        if isinstance(e, c_ast.BinaryOp):
            s = self.expr(e.left, s)
            if e.op in ("&&", "||"):
                self.expr(e.right, s)
                return s
            return self.expr(e.right, s)
        if isinstance(e, c_ast.TernaryOp):
            s = self.expr(e.cond, s)
            return _meet(self.expr(e.iftrue, s), self.expr(e.iffalse, s))
        if isinstance(e, c_ast.StructRef):
            return self.expr(e.name, s)
        if isinstance(e, c_ast.Cast):
            return self.expr(e.expr, s)
        if isinstance(e, c_ast.FuncCall):
            for a in (e.args.exprs if e.args is not None else []):
                s = self.expr(a, s)
            return s
        if isinstance(e, (c_ast.Typename, c_ast.Constant)):
            return s
        for _, child in e.children():
            s = self.expr(child, s)
        return s

    def _read_lvalue(self, lv, s):
        """The read of `x` (or of `v` in `v.x`) by a compound assignment or `++`/`--`."""
        while isinstance(lv, c_ast.StructRef):
            lv = lv.name
        if isinstance(lv, c_ast.ID):
            self._read(lv, s)

    # -- statements
    def stmt(self, n, s):
        if n is None:
            return s
        method = getattr(self, "stmt_" + type(n).__name__, None)
        if method is not None:
            return method(n, s)
        return self.expr(n, s)

    def stmt_Compound(self, n, s):
        self.scopes.append({})
        for item in n.block_items or []:
            s = self.stmt(item, s)
        self.scopes.pop()
        return s

    def stmt_Decl(self, n, s):
        if n.name is None or isinstance(n.type, c_ast.FuncDecl):
            return s
        storage = n.storage or []
        _, pointer, array = type_names(n.type)
        if n.init is not None:
            s = self.expr(n.init, s)
        if array or SHARED_MARK in storage or "extern" in storage or "static" in storage:
            self.scopes[-1][n.name] = None          # not tracked (and hides an outer name)
            return s
        key = id(n)
        self.scopes[-1][n.name] = key
        if n.init is not None:
            return self._assign(s, key)
        self.tracked[key] = n
        return s if s is None else s - {key}

    def stmt_DeclList(self, n, s):
        for d in n.decls:
            s = self.stmt_Decl(d, s)
        return s

    def stmt_If(self, n, s):
        s = self.expr(n.cond, s)
        return _meet(self.stmt(n.iftrue, s), self.stmt(n.iffalse, s) if n.iffalse else s)

    def _loop_body(self, body, s):
        self.breaks.append([])
        self.continues.append([])
        end = self.stmt(body, s)
        return end, self.breaks.pop(), self.continues.pop()

    def stmt_For(self, n, s):
        self.scopes.append({})
        s = self.stmt(n.init, s)
        head = self.expr(n.cond, s)
        end, breaks, continues = self._loop_body(n.stmt, head)
        self.expr(n.next, _meet(end, *continues))
        self.scopes.pop()
        return _meet(None if _always_true(n.cond) else head, *breaks)

    def stmt_While(self, n, s):
        head = self.expr(n.cond, s)
        _, breaks, _ = self._loop_body(n.stmt, head)
        return _meet(None if _always_true(n.cond) else head, *breaks)

    def stmt_DoWhile(self, n, s):
        end, breaks, continues = self._loop_body(n.stmt, s)
        after = self.expr(n.cond, _meet(end, *continues))
        return _meet(after, *breaks)

    def stmt_Break(self, n, s):
        if self.breaks:
            self.breaks[-1].append(s)
        return None

    def stmt_Continue(self, n, s):
        if self.continues:
            self.continues[-1].append(s)
        return None

    def stmt_Return(self, n, s):
        self.expr(n.expr, s)
        return None

    def stmt_Goto(self, n, s):
        return None

    def stmt_Switch(self, n, s):
        s = self.expr(n.cond, s)
        self.breaks.append([])
        self.scopes.append({})
        cur, has_default = None, False
        items = n.stmt.block_items if isinstance(n.stmt, c_ast.Compound) else [n.stmt]
        for item in items or []:
            cur, d = self._case(item, cur, s)
            has_default = has_default or d
        self.scopes.pop()
        breaks = self.breaks.pop()
        return _meet(cur, *breaks, None if has_default else s)

    def _case(self, item, cur, entry):
        """One item of a switch body: a label joins the switch's entry state."""
        if isinstance(item, (c_ast.Case, c_ast.Default)):
            cur = _meet(cur, entry)
            has_default = isinstance(item, c_ast.Default)
            for st in item.stmts or []:
                cur, d = self._case(st, cur, entry)
                has_default = has_default or d
            return cur, has_default
        return self.stmt(item, cur), False

    def stmt_Label(self, n, s):
        return self.stmt(n.stmt, None)

    def stmt_Typedef(self, n, s):
        return s

    def stmt_Pragma(self, n, s):
        return s

    def stmt_EmptyStatement(self, n, s):
        return s


# ----------------------------------------------------------------------------- thread-indexed shared arrays

def thread_component(e, aliases: dict) -> str | None:
    """'x', 'y' or 'z' when `e` is exactly one threadIdx component: `threadIdx.y`, a cast of
    it, or a local alias (`int ty = threadIdx.y;`, never assigned again); else None."""
    while isinstance(e, c_ast.Cast):
        e = e.expr
    if isinstance(e, c_ast.StructRef) and e.type == "." and isinstance(e.name, c_ast.ID) \
            and e.name.name == "threadIdx" and e.field.name in ("x", "y", "z"):
        return e.field.name
    if isinstance(e, c_ast.ID):
        return aliases.get(e.name)
    return None


def _thread_aliases(func: c_ast.FuncDef) -> dict:
    """Locals declared as a plain threadIdx component and never assigned afterwards."""
    found: dict = {}
    bad: set = set()
    for n in walk(func.body):
        if isinstance(n, c_ast.Decl) and n.name:
            c = thread_component(n.init, {}) if n.init is not None else None
            if c is None or found.get(n.name, c) != c:
                bad.add(n.name)
            else:
                found[n.name] = c
        elif isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.ID):
            bad.add(n.lvalue.name)
        elif isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--", "&") \
                and isinstance(n.expr, c_ast.ID):
            bad.add(n.expr.name)
    if func.decl.type.args is not None:
        bad |= {p.name for p in func.decl.type.args.params if getattr(p, "name", None)}
    return {k: v for k, v in found.items() if k not in bad}


def _chain(e):
    """(base, [index, ...]) of `a[i][j]`, outermost index first."""
    idx = []
    while isinstance(e, c_ast.ArrayRef):
        idx.append(e.subscript)
        e = e.name
    return e, idx[::-1]


def _walk_parents(node, parent=None):
    if node is None:
        return
    yield node, parent
    for _, child in node.children():
        yield from _walk_parents(child, node)


def thread_indexed_stores(func: c_ast.FuncDef, ranks: dict) -> dict:
    """For the `__shared__` arrays named in `ranks` (name -> number of dimensions): which
    index positions every store into the array fills with one threadIdx component.

    Returns name -> (component or None per position, outermost first), e.g.
    ``{"As": ("y", "x")}`` for a kernel whose only stores are ``As[ty][tx] = ...`` with
    ``int ty = threadIdx.y, tx = threadIdx.x``. A store is an assignment (``=``, ``+=``,
    ...), ``++``/``--`` or an atomic on ``&As[...]...``; a position gets a component only if
    every store has that same component there. An array that is used otherwise than by
    full subscripts (its address taken, passed to a function, a row used as a pointer) is
    left out, since it may be written through a pointer."""
    aliases = _thread_aliases(func)
    stores: dict = {name: [] for name in ranks}
    escaped: set = set()
    bases: set = set()
    atomic_targets: set = set()      # `&s[i]` as the first argument of atomicAdd(...) etc.
    for n in walk(func.body):
        if isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID) \
                and n.name.name.startswith("atomic") and n.args is not None and n.args.exprs:
            first = n.args.exprs[0]
            if isinstance(first, c_ast.UnaryOp) and first.op == "&":
                atomic_targets.add(id(first))
    for n, parent in _walk_parents(func.body):
        if isinstance(n, c_ast.ArrayRef) and not (isinstance(parent, c_ast.ArrayRef)
                                                  and parent.name is n):
            base, idx = _chain(n)
            if isinstance(base, c_ast.ID) and base.name in ranks:
                bases.add(id(base))
                if len(idx) != ranks[base.name]:
                    escaped.add(base.name)
        target = None
        if isinstance(n, c_ast.Assignment):
            target = n.lvalue
        elif isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--"):
            target = n.expr
        elif isinstance(n, c_ast.UnaryOp) and n.op == "&":
            if id(n) in atomic_targets:
                target = n.expr
            else:
                base, _ = _chain(n.expr)
                if isinstance(base, c_ast.ID) and base.name in ranks:
                    escaped.add(base.name)
        if target is not None:
            base, idx = _chain(target)
            if isinstance(base, c_ast.ID) and base.name in ranks:
                stores[base.name].append(idx)
    for n in walk(func.body):
        if isinstance(n, c_ast.ID) and n.name in ranks and id(n) not in bases:
            escaped.add(n.name)
    out = {}
    for name, idxs in stores.items():
        if name in escaped or not idxs:
            continue
        comps = []
        for p in range(ranks[name]):
            cs = {thread_component(ix[p], aliases) if p < len(ix) else None for ix in idxs}
            comps.append(cs.pop() if len(cs) == 1 else None)
        out[name] = tuple(comps)
    return out
