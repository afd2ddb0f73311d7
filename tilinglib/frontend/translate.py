"""Stage 3 of the front end: clang's JSON AST -> pycparser `c_ast` nodes.

pycparser's `c_ast` is only the IR that the emulator's compiler (emulator/compiler.py and
co.) and the source checks (_source_checks.py) consume; this module writes it the way
pycparser would have written it for the equivalent C, with the markers the compiler reads
back: a kernel's function specifier ``_Noreturn``, a ``__device__`` function's ``inline``,
the storage class ``_Thread_local`` for ``__shared__`` and ``register`` for ``__constant__``.
Every node carries ``Coord("kernel.cu", line, column)``: the student's own line and column.

C++ is lowered here, each construct in one place (the table is in docs/frontend.md):

- namespaces are flattened; a function keeps its qualified name (``ns::f``);
- each template instantiation clang made becomes a function of its own, named by its text
  (``k<128, float>``): templates are never instantiated here, only read;
- a class or struct (templates too) becomes a struct of its fields; each method a function
  taking the object as a first parameter ``this``, by value (so a method may read its object
  but not assign to its fields: refused); a constructor a function returning the object;
  conversion operators and operator overloads are methods like the others;
- a reference parameter or variable becomes a pointer with implicit dereference (a ``const``
  reference parameter: a value); ``constexpr`` becomes ``const``; ``static_assert`` goes
  (clang evaluated it); default arguments are written out at each call (CXXDefaultArgExpr);
  ``nullptr``/``NULL`` become 0; every C++ cast becomes a C cast; ``auto`` is the type clang
  deduced.

A construct still refused raises `UnsupportedFeatureError` naming it, its line, and what to
write instead.
"""

from __future__ import annotations

import re

from pycparser import c_ast
from pycparser.c_parser import Coord

from ..errors import UnsupportedFeatureError
from .prelude import PRELUDE_TYPEDEFS, VECTOR_NAMES

SOURCE_NAME = "kernel.cu"

_BUILTIN_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed",
                  "unsigned", "bool", "_Bool"}
_RECORD_KINDS = ("CXXRecordDecl", "ClassTemplateSpecializationDecl")
_FUNCTION_KINDS = ("FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl",
                   "CXXConversionDecl", "CXXDestructorDecl")
_TRANSPARENT = ("ExprWithCleanups", "MaterializeTemporaryExpr", "CXXBindTemporaryExpr",
                "ConstantExpr", "ParenExpr", "FullExpr", "CXXFunctionalCastExpr_noop")


def _norm(name: str) -> str:
    """A type or template name in one spelling: no 'struct '/'class ', no spaces, no integer
    suffixes on template arguments (clang writes both 32U and 32)."""
    name = re.sub(r"\b(struct|class|union|enum)\s+", "", name)
    name = re.sub(r"(?<![\w.])(\d+)[uUlL]+\b", r"\1", name)
    return re.sub(r"\s+", "", name)


def normalize_kernel_name(name: str) -> str:
    """The kernel name `name` as get_function compares it (spaces and integer suffixes
    removed: ``'k<128,  float>'`` and ``'k<128U, float>'`` are ``'k<128,float>'``)."""
    return _norm(name)


def _split_function_type(text: str):
    """'float (float, int) const' -> ('float', ['float', 'int'])."""
    text = re.sub(r"\)\s*(const|volatile|noexcept|&|&&|\s)*$", ")", text.strip())
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                ret, args = text[:i].strip(), text[i + 1:-1]
                return ret, _split_commas(args)
    return text, []


def _split_commas(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for c in text:
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return [a for a in out if a != "void"]


class Translator:
    """One translation unit: `translate()` returns a `c_ast.FileAST`.

    After it: `kernel_names` maps each kernel's name as get_function takes it (``'k'``,
    ``'k<128, float>'``) to its mangled name (clang's ``mangledName``: the Itanium ABI name
    nvcc gives it too), and `template_kernels` lists the kernel templates' names."""

    def __init__(self, root: dict, source_lines=(), offset: int = 0):
        self.root = root
        self.offset = offset             # clang's line L is the student's L - offset
        self.source_lines = source_lines
        self.records: dict = {}          # id -> (c name, node)
        self.record_by_name: dict = {}   # normalised qualified name -> c name
        self.functions: dict = {}        # id -> c name (functions with a body we translate)
        self.fnodes: dict = {}           # id -> node, for every function declaration seen
        self.fqual: dict = {}            # id -> qualified name
        self.builtins: set = set()       # ids of functions the prelude declares (no body)
        self.ref_vars: set = set()       # ids of reference variables lowered to pointers
        self.ref_returns: set = set()    # ids of functions returning a reference
        self.aliases: dict = {}          # namespace alias -> namespace
        self.typedefs: dict = {}         # typedef name -> the type it names (clang's text)
        self.kernel_names: dict = {}
        self.template_kernels: list = []
        self.ext: list = []
        self._emitted: set = set()
        self._method_of: dict = {}       # function id -> record id
        self._ctors: dict = {}           # record id -> [(ctor type text, node)]
        self._enums: list = []
        self._enum_values: dict = {}     # enumerator -> its value's text, where clang gave it
        self._defaults: set = set()
        self._tparams: dict = {}         # instantiation id -> its template's parameter types
        self._late: list = []            # functions made by the translator

    # ------------------------------------------------------------------ errors
    def coord(self, n) -> Coord | None:
        loc = n.get("loc") if isinstance(n, dict) else None
        if not loc:
            rng = n.get("range") if isinstance(n, dict) else None
            loc = rng.get("begin") if rng else None
        if loc and "spellingLoc" in loc:
            loc = loc["expansionLoc"]
        line = (loc.get("line") or 0) - self.offset if loc else 0
        if line <= 0:
            return Coord(SOURCE_NAME, None, None) if loc else None
        return Coord(SOURCE_NAME, line, loc.get("col"))

    def unsupported(self, n, what, advice=""):
        c = self.coord(n) if isinstance(n, dict) else None
        line = c.line if c else None
        msg = f"{SOURCE_NAME}:{line}: the CPU emulator does not support {what}"
        if advice:
            msg += f": {advice}"
        src = self.source_lines[line - 1] if line and 0 < line <= len(self.source_lines) \
            else None
        return UnsupportedFeatureError(msg, line=line, column=c.column if c else None,
                                       source_line=src)

    # ------------------------------------------------------------------ walk
    def translate(self) -> c_ast.FileAST:
        for name in VECTOR_NAMES:
            if name != "dim3":
                self.ext.append(c_ast.Typedef(name, [], ["typedef"], c_ast.TypeDecl(
                    name, [], None, c_ast.Struct("__cuda_" + name, None))))
        self.ext.append(c_ast.Typedef("dim3", [], ["typedef"], c_ast.TypeDecl(
            "dim3", [], None, c_ast.Struct("__cuda_uint3", None))))
        for name, words in PRELUDE_TYPEDEFS.items():
            self.ext.append(c_ast.Typedef(name, [], ["typedef"], c_ast.TypeDecl(
                name, [], None, c_ast.IdentifierType(words.split()))))
        bodies = []
        self._collect(self.root.get("inner", []), [], bodies, in_template=False)
        self._name_overloads()
        for e in self._enums:
            self.ext.append(e)
        for rid in list(self.records):
            self._emit_record(rid)
        for kind, n, extra in bodies:
            if kind == "var":
                d = self.var_decl(n, file_scope=True)
                if d is not None:
                    self.ext.append(d)
        for kind, n, extra in bodies:
            if kind == "fn":
                f = self.function(n, extra)
                if f is not None:
                    self.ext.append(f)
        self.ext.extend(self._late)
        return c_ast.FileAST(self.ext)

    def _in_prelude(self, n) -> bool:
        loc = n.get("loc") or {}
        if "spellingLoc" in loc:
            loc = loc["expansionLoc"]
        return (loc.get("line") or 0) <= self.offset

    def _collect(self, items, scope, bodies, in_template):
        for n in items:
            if not isinstance(n, dict):
                continue
            kind = n.get("kind")
            if kind == "NamespaceDecl":
                self._collect(n.get("inner", []), scope + [n.get("name") or ""], bodies,
                              in_template)
            elif kind == "NamespaceAliasDecl":
                self.aliases[n["name"]] = n.get("aliasedNamespace", {}).get("name", "")
            elif kind == "LinkageSpecDecl":
                self._collect(n.get("inner", []), scope, bodies, in_template)
            elif kind == "FunctionTemplateDecl":
                inner = n.get("inner", [])
                self._note_template_params(n)
                for f in inner:
                    if f.get("kind") in _FUNCTION_KINDS and "mangledName" not in f:
                        if any(a.get("kind") == "CUDAGlobalAttr" for a in f.get("inner", [])) \
                                and not self._in_prelude(f):
                            self.template_kernels.append("::".join(scope + [n["name"]]))
                self._collect([f for f in inner if f.get("kind") in _FUNCTION_KINDS
                               and "mangledName" in f], scope, bodies, in_template)
            elif kind == "ClassTemplateDecl":
                self._note_template_params(n)
                self._collect([r for r in n.get("inner", [])
                               if r.get("kind") == "ClassTemplateSpecializationDecl"],
                              scope, bodies, in_template)
            elif kind in _RECORD_KINDS:
                if n.get("isImplicit") or not n.get("completeDefinition"):
                    continue
                if in_template or (n.get("name") in VECTOR_NAMES and self._in_prelude(n)):
                    continue
                qual = "::".join(scope + [n.get("name") or "<anonymous>"])
                if kind == "ClassTemplateSpecializationDecl":
                    qual += "<" + ", ".join(self._template_args(n)) + ">"
                self.records[n["id"]] = (qual, n)
                self.record_by_name[_norm(qual)] = qual
                self._ctors[n["id"]] = []
                members = []
                for m in n.get("inner", []):
                    mk = m.get("kind")
                    if mk in _FUNCTION_KINDS:
                        self._method_of[m["id"]] = n["id"]
                        members.append(m)
                    elif mk == "FunctionTemplateDecl":
                        for f in m.get("inner", []):
                            if f.get("kind") in _FUNCTION_KINDS and "mangledName" in f:
                                self._method_of[f["id"]] = n["id"]
                                members.append(f)
                    elif mk in _RECORD_KINDS or mk in ("ClassTemplateDecl", "EnumDecl"):
                        self._collect([m], scope + [n.get("name") or ""], bodies, in_template)
                    elif mk == "VarDecl":
                        bodies.append(("var", m, None))
                for m in members:
                    if m.get("kind") == "CXXConstructorDecl":
                        self._ctors[n["id"]].append((_norm(m["type"]["qualType"]), m))
                self._collect_functions(members, scope + [qual.split("::")[-1]], bodies,
                                        record=n["id"])
            elif kind in _FUNCTION_KINDS:
                self._collect_functions([n], scope, bodies, record=None)
            elif kind == "VarDecl":
                if not self._in_prelude(n):
                    bodies.append(("var", n, None))
            elif kind == "EnumDecl":
                self._enum(n)
            elif kind in ("TypedefDecl", "TypeAliasDecl"):
                self.typedefs[n["name"]] = self.type_text(n["type"])
                self.typedefs["::".join(scope + [n["name"]])] = self.type_text(n["type"])
            elif kind in ("UsingDirectiveDecl", "UsingDecl",
                          "StaticAssertDecl", "EmptyDecl", "UsingShadowDecl",
                          "TypeAliasTemplateDecl", "VarTemplateDecl"):
                continue

    def _collect_functions(self, fns, scope, bodies, record):
        for f in fns:
            fid = f["id"]
            self.fnodes[fid] = f
            qual = "::".join(scope + [f.get("name", "")])
            if f.get("inner") and any(a.get("kind") == "TemplateArgument"
                                      for a in f["inner"]):
                if not f["name"].startswith("operator"):
                    qual += "<" + ", ".join(self._template_args(f)) + ">"
            self.fqual[fid] = qual
            ret, _ = _split_function_type(f["type"]["qualType"])
            if ret.endswith("&") and f.get("kind") != "CXXConstructorDecl":
                self.ref_returns.add(fid)
            body = [c for c in f.get("inner", []) if c.get("kind") == "CompoundStmt"]
            if self._in_prelude(f) and record is None and not body:
                self.builtins.add(fid)
                continue
            if f.get("isImplicit") or not body:
                continue
            attrs = {a.get("kind") for a in f.get("inner", [])}
            if "CUDAGlobalAttr" not in attrs and "CUDADeviceAttr" not in attrs:
                continue           # host code: never run on the device
            self.functions[fid] = qual
            bodies.append(("fn", f, record))
            if "CUDAGlobalAttr" in attrs:
                self.kernel_names[qual] = f.get("mangledName", qual)

    def _note_template_params(self, n):
        """Remember a template's parameter types for its instantiations' names (clang
        writes a bool argument as an integer)."""
        types = [p.get("type", {}).get("qualType") if p.get("kind") == "NonTypeTemplateParmDecl"
                 else None for p in n.get("inner", []) if p.get("kind", "").endswith("ParmDecl")]
        for f in n.get("inner", []):
            if f.get("kind") in _FUNCTION_KINDS or f.get("kind") in _RECORD_KINDS:
                self._tparams[f.get("id")] = types

    def _name_overloads(self):
        """Overloads (`__device__ float f(float)`, `int f(int)`) share a name in C++: each
        gets its parameter types after it (`f(float)`), so the compiler sees two functions."""
        by_name: dict = {}
        for fid, name in self.functions.items():
            by_name.setdefault(name, []).append(fid)
        # A student's overload of a built-in (`static __device__ float atomicMax(float *,
        # float)` beside CUDA's integer atomicMax) is renamed too, so that the calls clang
        # resolved to the built-in stay the built-in's (a redefinition of the built-in's own
        # declaration is the student's function under the built-in's name, as before).
        builtin_names = {self.fqual.get(fid) for fid in self.builtins}
        for name, fids in by_name.items():
            if len(fids) < 2 and not (name in builtin_names and not any(
                    self.fnodes[f].get("previousDecl") in self.builtins for f in fids)):
                continue
            for fid in fids:
                _, params = _split_function_type(self.fnodes[fid]["type"]["qualType"])
                new = f"{name}({', '.join(params)})"
                self.functions[fid] = new
                if name in self.kernel_names:
                    self.kernel_names[new] = self.fnodes[fid].get("mangledName", new)
            self.kernel_names.pop(name, None)

    def _template_args(self, n) -> list[str]:
        out = []
        types = self._tparams.get(n.get("id"), [])
        for a in n.get("inner", []):
            if a.get("kind") != "TemplateArgument":
                continue
            i = len(out)
            if "value" in a:
                if i < len(types) and types[i] == "bool":
                    out.append("true" if a["value"] else "false")
                else:
                    out.append(str(a["value"]))
            elif "type" in a:
                t = a["type"]
                out.append(t.get("desugaredQualType", t["qualType"]))
            else:
                out.append("?")
        return out

    def _enum(self, n):
        items = []
        following = 0                        # the next enumerator's value, where known
        for e in n.get("inner", []):
            if e.get("kind") != "EnumConstantDecl":
                continue
            value = None
            if e.get("inner"):
                value = self.expr(e["inner"][0])
                v = e["inner"][0]
                while "value" not in v and v.get("kind") in ("ImplicitCastExpr",
                                                               "ConstantExpr") and v.get("inner"):
                    v = v["inner"][0]
                following = int(v["value"]) if "value" in v else None
            if following is not None:        # its value, for record_name
                self._enum_values[e["name"]] = str(following)
                following += 1
            items.append(c_ast.Enumerator(e["name"], value, self.coord(e)))
        # c_ast.Enum's third argument is `underlying_type` in pycparser 3 (required) and
        # `coord` in 2.x: None is right for both (the emulator's enums are int).
        self._enums.append(c_ast.Decl(None, [], [], [], [], c_ast.Enum(
            n.get("name"), c_ast.EnumeratorList(items), None), None, None,
            coord=self.coord(n)))

    # ------------------------------------------------------------------ types
    def record_name(self, text: str) -> str | None:
        key = _norm(text)
        for alias, real in self.aliases.items():
            if key.startswith(alias + "::"):
                key = real + key[len(alias):]
        if key in self.record_by_name:
            return self.record_by_name[key]
        tail = [v for k, v in self.record_by_name.items()
                if k == key.split("::")[-1] or k.endswith("::" + key)]
        if len(tail) == 1:
            return tail[0]
        last = key.split("::")[-1]
        tail = [v for k, v in self.record_by_name.items() if k.split("::")[-1] == last]
        if len(tail) == 1:
            return tail[0]
        if "<" in key:
            # an enumerator as a template argument, as written ('cuda::barrier<cuda::
            # thread_scope::thread_scope_block>' of an auto variable) or as clang writes a
            # deduced one ('Box<(Mode)2U>'): the record is named by its value
            # ('cuda::barrier<2>')
            valued = re.sub(r"\((?:\w+::)*\w+\)(-?\d+)", r"\1", key)
            valued = re.sub(r"(?:\w+::)*(\w+)",
                            lambda m: self._enum_values.get(m.group(1), m.group(0)), valued)
            if valued != key:
                return self.record_name(valued)
        return None

    def type_text(self, t: dict) -> str:
        """clang's spelling of a type: as written when it names only built-in types, vector
        types and the prelude's typedefs (so `(size_t)r` stays `size_t` in messages), else
        the desugared type (a template parameter's argument, a student's typedef)."""
        q = t.get("qualType", "int")
        words = re.findall(r"[A-Za-z_]\w*", q)
        if "desugaredQualType" not in t or all(
                w in _BUILTIN_WORDS or w in VECTOR_NAMES or w in PRELUDE_TYPEDEFS
                or w in ("const", "volatile", "__restrict") for w in words):
            return q
        if "<>" in t["desugaredQualType"] and "<>" not in q:
            # clang leaves out template arguments equal to their defaults when it desugars
            # (block_tile_memory<1024U> -> block_tile_memory<>): the written type names them
            return q
        return t["desugaredQualType"]

    def type_node(self, text: str, declname, n=None, by_value_refs=False):
        """A pycparser type node for clang's type spelling `text` ('const float *__restrict',
        'float[32][33]', 'SharedMemory<float>'); a reference becomes a pointer (or, with
        `by_value_refs` and a const reference, the type itself)."""
        text = text.strip()
        if "(lambda at" in text:
            raise self.unsupported(n, "C++ lambdas", "write a __device__ function")
        if re.search(r"\(\*\)\s*\(", text):
            raise self.unsupported(n, f"function pointers ('{text}')",
                                   "call the __device__ function by its name")
        if "(*)" in text or "(&)" in text:
            raise self.unsupported(n, f"the type '{text}' (a pointer or reference to an "
                                      f"array)", "index a plain pointer instead")
        dims = []
        while True:
            m = re.search(r"\[(\d*)\]\s*$", text)
            if not m:
                break
            dims.insert(0, m.group(1))
            text = text[:m.start()].rstrip()
        ref = False
        if text.endswith("&&"):
            ref, text = True, text[:-2].rstrip()
        elif text.endswith("&"):
            ref, text = True, text[:-1].rstrip()
        if ref and by_value_refs and re.match(r"^const\b", text) and "*" not in text:
            ref = False
            text = text[len("const"):].strip()
        parts = self._split_pointers(text)
        base, ptrs = parts[0], parts[1:]
        words = base.split()
        quals = [w for w in words if w in ("const", "volatile")]
        words = [w for w in words if w not in ("const", "volatile", "struct", "class",
                                               "union", "enum", "__restrict")]
        named = " ".join(words)
        if named in PRELUDE_TYPEDEFS:
            node = c_ast.TypeDecl(declname, quals, None, c_ast.IdentifierType([named]))
            words = None
        if words is None:
            pass
        elif named in self.typedefs and named not in VECTOR_NAMES:
            again = " ".join(quals + [self.typedefs[named]]) + "".join("*" + p for p in ptrs)
            again += "".join(f"[{d}]" for d in dims)
            return self.type_node(again + ("&" if ref else ""), declname, n, by_value_refs)
        if words is not None:
            node = c_ast.TypeDecl(declname, quals, None, self._base_type(words, n))
        for pq in ptrs:
            pquals = []
            for w in pq.split():
                if w in ("const", "volatile"):
                    pquals.append(w)
                elif w in ("__restrict", "__restrict__", "restrict"):
                    pquals.append("restrict")
            node = c_ast.PtrDecl(pquals, node)
        if ref:
            node = c_ast.PtrDecl([], node)
        for d in reversed(dims):
            node = c_ast.ArrayDecl(node, c_ast.Constant("int", d) if d else None, [])
        return node

    @staticmethod
    def _split_pointers(text: str) -> list[str]:
        out, depth, cur = [], 0, ""
        for c in text:
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
            if c == "*" and depth == 0:
                out.append(cur)
                cur = ""
            else:
                cur += c
        out.append(cur)
        return out

    def _base_type(self, words, n):
        if words and all(w in _BUILTIN_WORDS for w in words):
            return c_ast.IdentifierType(["_Bool" if w == "bool" else w for w in words])
        name = " ".join(words)
        if name in ("std::nullptr_t", "nullptr_t"):
            return c_ast.IdentifierType(["long"])
        if name in VECTOR_NAMES:
            return c_ast.IdentifierType([name])
        rec = self.record_name(name)
        if rec is not None:
            return c_ast.Struct(rec, None)
        if name.split("::")[-1] in [e.type.name for e in self._enums if e.type.name]:
            return c_ast.IdentifierType(["int"])
        if name.startswith("__half") or name in ("half", "half2"):
            raise self.unsupported(n, f"half-precision type '{name}'", "use float")
        raise self.unsupported(n, f"the type '{name}'")

    # ------------------------------------------------------------------ records
    def _emit_record(self, rid):
        if rid in self._emitted:
            return
        self._emitted.add(rid)
        qual, n = self.records[rid]
        if n.get("bases"):
            raise self.unsupported(n, f"inheritance ('{qual}' derives from a base class)",
                                   "write the base's fields into the struct")
        if n.get("tagUsed") == "union":
            # a C struct would give each member its own bytes: u.f = 1.0f; u.i read 0
            raise self.unsupported(n, f"unions ('{qual}')", "reinterpret bits with "
                                   "__float_as_int / __int_as_float, or use separate fields")
        decls = []
        for f in n.get("inner", []):
            if f.get("kind") != "FieldDecl":
                continue
            if f.get("isBitfield"):
                # the field would hold its whole type: 'int x : 3' set to 7 read 7, not -1
                raise self.unsupported(f, f"bit-fields ('{f.get('name')}' in '{qual}')",
                                       "use a whole int and mask or shift it yourself")
            ttext = self.type_text(f["type"])
            for other, (oqual, _) in self.records.items():   # fields' structs first
                if other != rid and _norm(oqual) in _norm(ttext):
                    self._emit_record(other)
            decls.append(c_ast.Decl(f.get("name"), [], [], [], [],
                                    self.type_node(ttext, f.get("name"), f), None, None,
                                    coord=self.coord(f)))
        if not decls:     # an empty class (thread_block): one byte, as in C++
            decls.append(c_ast.Decl("__empty", [], [], [], [], c_ast.TypeDecl(
                "__empty", [], None, c_ast.IdentifierType(["char"])), None, None))
        self.ext.append(c_ast.Decl(None, [], [], [], [], c_ast.Struct(qual, decls), None, None,
                                   coord=self.coord(n)))

    # ------------------------------------------------------------------ functions
    def function(self, f, record):
        fid = f["id"]
        name = self.functions[fid]
        attrs = {a.get("kind") for a in f.get("inner", [])}
        spec = ["_Noreturn"] if "CUDAGlobalAttr" in attrs else ["inline"]
        ret, _ = _split_function_type(f["type"]["qualType"])
        ctor = f.get("kind") == "CXXConstructorDecl"
        params = []
        this_type = None
        if record is not None:
            this_type = self.records[record][0]
            if not ctor and f.get("storageClass") != "static":   # a static method has no object
                params.append(c_ast.Decl("this", [], [], [], [], c_ast.TypeDecl(
                    "this", [], None, c_ast.Struct(this_type, None)), None, None,
                    coord=self.coord(f)))
        for p in f.get("inner", []):
            if p.get("kind") != "ParmVarDecl":
                continue
            params.append(self.param(p))
        if ctor:
            rtype = c_ast.TypeDecl(name, [], None, c_ast.Struct(this_type, None))
        elif fid in self.ref_returns:
            rtype = self.type_node(ret, name, f)
        else:
            rtype = self.type_node(ret, name, f, by_value_refs=True)
        body_node = [c for c in f["inner"] if c.get("kind") == "CompoundStmt"][-1]
        self._returns_ref = fid in self.ref_returns
        body = self.compound(body_node)
        if ctor:
            init = [c_ast.Decl("this", [], [], [], [], c_ast.TypeDecl(
                "this", [], None, c_ast.Struct(this_type, None)), None, None,
                coord=self.coord(f))]
            for ci in f["inner"]:
                if ci.get("kind") != "CXXCtorInitializer":
                    continue
                field = ci.get("anyInit", {}).get("name")
                if field is None:
                    raise self.unsupported(f, "a constructor that initializes a base class")
                value = self.expr(ci["inner"][0]) if ci.get("inner") else None
                if value is not None:
                    init.append(c_ast.Assignment("=", c_ast.StructRef(
                        c_ast.ID("this"), ".", c_ast.ID(field)), value, self.coord(f)))
            body.block_items = init + (body.block_items or []) + [
                c_ast.Return(c_ast.ID("this"), self.coord(f))]
        elif record is not None:
            self._check_const_method(f, body_node)
        fdecl = c_ast.FuncDecl(c_ast.ParamList(params) if params else None, rtype)
        decl = c_ast.Decl(name, [], [], [], spec, fdecl, None, None, coord=self.coord(f))
        return c_ast.FuncDef(decl, None, body, coord=self.coord(f))

    def _check_const_method(self, f, body):
        """Methods get their object by value: refuse one that assigns to a field of it."""
        stack = [body]
        while stack:
            n = stack.pop()
            if not isinstance(n, dict):
                continue
            k = n.get("kind")
            if k in ("BinaryOperator", "CompoundAssignOperator", "UnaryOperator"):
                op = n.get("opcode", "")
                if k != "UnaryOperator" and op not in ("=",) and k == "BinaryOperator":
                    pass
                elif k == "UnaryOperator" and op not in ("++", "--"):
                    pass
                else:
                    target = n["inner"][0]
                    while target.get("kind") in ("ImplicitCastExpr", "ParenExpr"):
                        target = target["inner"][0]
                    if target.get("kind") == "MemberExpr" and target["inner"][0].get(
                            "kind") == "CXXThisExpr":
                        raise self.unsupported(
                            n, f"a method that changes its object's fields "
                               f"('{target.get('name')}' in '{f.get('name')}')",
                            "return the new value, or keep the field in a local variable")
            stack.extend(n.get("inner", []))

    def param(self, p):
        ttext = self.type_text(p["type"])
        name = p.get("name") or None
        if ttext.rstrip().endswith("&") and not re.match(r"^const\b", ttext.strip()):
            self.ref_vars.add(p["id"])
            tnode = self.type_node(ttext, name, p)
        elif ttext.rstrip().endswith("&") and "*" in ttext:
            self.ref_vars.add(p["id"])
            tnode = self.type_node(ttext, name, p)
        else:
            tnode = self.type_node(ttext, name, p, by_value_refs=True)
        quals = tnode.quals if isinstance(tnode, c_ast.TypeDecl) else []
        return c_ast.Decl(name, list(quals), [], [], [], tnode, None, None, coord=self.coord(p))

    # ------------------------------------------------------------------ statements
    def compound(self, n) -> c_ast.Compound:
        items = []
        for s in n.get("inner", []):
            items.extend(self.stmt_list(s))
        return c_ast.Compound(items, self.coord(n))

    def stmt_list(self, s) -> list:
        if s.get("kind") == "DeclStmt":
            return [d for d in (self.decl_in_block(x) for x in s.get("inner", [])) if d]
        r = self.stmt(s)
        return [] if r is None else [r]

    def decl_in_block(self, d):
        k = d.get("kind")
        if k == "VarDecl":
            return self.var_decl(d)
        if k in ("StaticAssertDecl", "NamespaceAliasDecl", "TypedefDecl", "TypeAliasDecl",
                 "UsingDecl", "UsingDirectiveDecl", "UsingShadowDecl", "EmptyDecl"):
            if k == "NamespaceAliasDecl":
                self.aliases[d["name"]] = d.get("aliasedNamespace", {}).get("name", "")
            if k in ("TypedefDecl", "TypeAliasDecl"):
                self.typedefs[d["name"]] = self.type_text(d["type"])
            return None
        if k in _RECORD_KINDS:
            raise self.unsupported(d, "a struct or class defined inside a function",
                                   "define it at file scope")
        if k == "EnumDecl":
            raise self.unsupported(d, "an enum defined inside a function",
                                   "define it at file scope")
        raise self.unsupported(d, f"the declaration '{k}' here")

    def stmt(self, s):
        if not s:
            return None
        k = s.get("kind")
        coord = self.coord(s)
        if k == "CompoundStmt":
            return self.compound(s)
        if k == "NullStmt":
            return c_ast.EmptyStatement(coord)
        if k == "DeclStmt":
            items = self.stmt_list(s)
            return c_ast.Compound(items, coord) if len(items) != 1 else items[0]
        if k == "IfStmt":
            if s.get("hasInit") or s.get("hasVar"):
                raise self.unsupported(s, "a declaration inside an if's condition",
                                       "declare the variable before the if")
            inner = s["inner"]
            return c_ast.If(self.expr(inner[0]), self.stmt(inner[1]),
                            self.stmt(inner[2]) if len(inner) > 2 else None, coord)
        if k == "ForStmt":
            init, var, cond, nxt, body = (s["inner"] + [{}] * 5)[:5]
            if var:
                raise self.unsupported(s, "a declaration inside a for's condition")
            if init and init.get("kind") == "DeclStmt":
                init_node = c_ast.DeclList([self.decl_in_block(x) for x in init["inner"]],
                                           self.coord(init))
            else:
                init_node = self.expr(init) if init else None
            return c_ast.For(init_node, self.expr(cond) if cond else None,
                             self.expr(nxt) if nxt else None, self.stmt(body) or
                             c_ast.EmptyStatement(coord), coord)
        if k == "WhileStmt":
            if s.get("hasVar"):
                raise self.unsupported(s, "a declaration inside a while's condition")
            return c_ast.While(self.expr(s["inner"][0]), self.stmt(s["inner"][1]), coord)
        if k == "DoStmt":
            return c_ast.DoWhile(self.expr(s["inner"][1]), self.stmt(s["inner"][0]), coord)
        if k == "ReturnStmt":
            e = self.expr(s["inner"][0]) if s.get("inner") else None
            if e is not None and getattr(self, "_returns_ref", False):
                e = self.address_of(s["inner"][0], e, coord)
            return c_ast.Return(e, coord)
        if k == "BreakStmt":
            return c_ast.Break(coord)
        if k == "ContinueStmt":
            return c_ast.Continue(coord)
        if k == "SwitchStmt":
            inner = s["inner"]
            cond, body = inner[0], inner[-1]
            return c_ast.Switch(self.expr(cond), self.switch_body(body), coord)
        if k in ("AttributedStmt",):
            return self.stmt(s["inner"][-1])
        if k == "LabelStmt":
            return c_ast.Label(s["name"], self.stmt(s["inner"][0]), coord)
        if k == "GotoStmt":
            return c_ast.Goto(s.get("targetLabelDeclId", "label"), coord)
        if k in ("CaseStmt", "DefaultStmt"):
            raise self.unsupported(s, "a case label outside a switch's braces")
        if k in ("CXXTryStmt", "CXXThrowExpr"):
            raise self.unsupported(s, "C++ exceptions (try/throw)")
        if k == "CXXForRangeStmt":
            raise self.unsupported(s, "a range-based for loop", "write for (int i = 0; ...)")
        return self.expr(s)

    def switch_body(self, body):
        items = []
        for s in body.get("inner", []) if body.get("kind") == "CompoundStmt" else [body]:
            while s and s.get("kind") in ("CaseStmt", "DefaultStmt"):
                if s["kind"] == "CaseStmt":
                    value = s["inner"][0]
                    items.append(c_ast.Case(self.expr(value), [], self.coord(s)))
                    s = s["inner"][-1] if len(s["inner"]) > 1 else None
                else:
                    items.append(c_ast.Default([], self.coord(s)))
                    s = s["inner"][0] if s.get("inner") else None
            if s:
                stmts = self.stmt_list(s)
                if items and isinstance(items[-1], (c_ast.Case, c_ast.Default)):
                    items[-1].stmts.extend(stmts)
                else:
                    items.extend(stmts)
        return c_ast.Compound(items, self.coord(body))

    def var_decl(self, d, file_scope=False):
        name = d["name"]
        attrs = {a.get("kind") for a in d.get("inner", []) if isinstance(a, dict)}
        storage = []
        sc = d.get("storageClass")
        if "CUDASharedAttr" in attrs:
            storage = (["extern"] if sc == "extern" else []) + ["_Thread_local"]
        elif "CUDAConstantAttr" in attrs:
            storage = ["register"]
        elif sc == "static":
            storage = ["static"]
        elif sc == "extern":
            storage = ["extern"]
        ttext = self.type_text(d["type"])
        init_nodes = [c for c in d.get("inner", []) if isinstance(c, dict) and
                      not c.get("kind", "").endswith("Attr")]
        init_node = init_nodes[0] if init_nodes else None
        is_ref = ttext.rstrip().endswith("&")
        if is_ref:
            temp = init_node is not None and init_node.get("kind") in (
                "MaterializeTemporaryExpr", "ExprWithCleanups")
            if temp:
                tnode = self.type_node(ttext, name, d, by_value_refs=True)
                if isinstance(tnode, c_ast.PtrDecl):
                    raise self.unsupported(d, "a non-const reference to a temporary")
            else:
                self.ref_vars.add(d["id"])
                tnode = self.type_node(ttext, name, d)
        else:
            tnode = self.type_node(ttext, name, d)
        quals = list(tnode.quals) if isinstance(tnode, c_ast.TypeDecl) else []
        if d.get("constexpr") and "const" not in quals:
            quals.append("const")
            if isinstance(tnode, c_ast.TypeDecl):
                tnode.quals = quals
        if isinstance(tnode, c_ast.ArrayDecl):
            t = tnode
            while isinstance(t, c_ast.ArrayDecl):
                t = t.type
            if isinstance(t, c_ast.TypeDecl):
                quals = list(t.quals)
        init = None
        if init_node is not None:
            init = self.init_expr(init_node, d)
            if init is None and init_node.get("kind") == "CXXConstructExpr":
                rid = next((i for i, (q, _) in self.records.items()
                            if q == self.record_name(ttext)), None)
                if rid is not None and self._is_empty(rid):
                    init = self.default_value(rid, init_node)   # thread_block b;
            if is_ref and d["id"] in self.ref_vars and init is not None:
                init = self.address_of(init_node, init, self.coord(d))
        return c_ast.Decl(name, quals, [], storage, [], tnode, init, None,
                          coord=self.coord(d))

    def _scalar_type(self, n) -> bool:
        """Whether expression `n` has a scalar type (arithmetic, enum or pointer): not an
        array, a struct or class, or a vector type."""
        text = _norm(self.type_text(n.get("type", {})))
        words = [w for w in re.findall(r"[A-Za-z_]\w*", text)
                 if w not in ("const", "volatile", "__restrict")]
        return not text.endswith("]") and self.record_id(n) is None \
            and not (len(words) == 1 and words[0] in VECTOR_NAMES and "*" not in text)

    def init_expr(self, n, d, nested=False):
        k = n.get("kind")
        if k == "InitListExpr" and self._scalar_type(n):
            # A scalar initialised by braces (C++11): `float v{};`, `T{}`, `float{2.0f}`,
            # `int a = {4};`: value-initialisation (zero) or the one element, as the type.
            items = n.get("inner", [])
            if len(items) > 1:
                raise self.unsupported(n, "a brace initializer of a scalar with more than "
                                          "one value", "give it one value: float v{1.0f};")
            tn = self.type_node(self.type_text(n["type"]), None, n)
            value = self.expr(items[0]) if items else c_ast.Constant("int", "0", self.coord(n))
            return c_ast.Cast(c_ast.Typename(None, [], None, tn), value, self.coord(n))
        if k == "InitListExpr" and "inner" not in n and "array_filler" in n:
            # An array initialised in part ('int l[4] = {4, 5}'): clang's JSON writes the
            # filler, then the elements, under 'array_filler' and no 'inner' (read as empty,
            # every element was 0: l[1] read 0, not 5). An inner list, or one of structs, is
            # filled out to its length (the compiler lays nested lists out one after another).
            filler, items = n["array_filler"][0], n["array_filler"][1:]
            out = [self.init_expr(e, d, nested=True) for e in items]
            m = re.search(r"\[(\d+)\]$", n.get("type", {}).get("qualType", ""))
            if m and (nested or filler.get("kind") != "ImplicitValueInitExpr"):
                missing = int(m.group(1)) - len(out)
                if missing > 65536:
                    raise self.unsupported(n, "an initializer list this much shorter than its "
                                              "array", "write the zeros out, or set it in a loop")
                out += [self.init_expr(filler, d, nested=True) for _ in range(missing)]
            return c_ast.InitList([x for x in out if x is not None], self.coord(n))
        if k == "InitListExpr":
            return c_ast.InitList([x for x in (self.init_expr(e, d, nested=True) for e in
                                               n.get("inner", [])) if x is not None],
                                  self.coord(n))
        if k == "CXXConstructExpr":
            return self.construct(n)
        if k == "ImplicitValueInitExpr":
            return c_ast.Constant("int", "0", self.coord(n))
        return self.expr(n)

    # ------------------------------------------------------------------ expressions
    def construct(self, n):
        """A CXXConstructExpr: a copy or move is its argument; the implicit default
        constructor nothing; a constructor of ours a call."""
        args = n.get("inner", [])
        ttext = _norm(self.type_text(n["type"]))
        rec = self.record_name(ttext)
        rid = next((i for i, (q, _) in self.records.items() if q == rec), None)
        ctype = _norm(n.get("ctorType", {}).get("qualType", ""))
        for ct_text, ctor in self._ctors.get(rid, []):
            if ct_text == ctype and ctor["id"] in self.functions:
                return c_ast.FuncCall(c_ast.ID(self.functions[ctor["id"]], self.coord(n)),
                                      c_ast.ExprList(self.call_args(ctor, args))
                                      if args else None, self.coord(n))
        if len(args) == 1:
            return self.expr(args[0])
        if not args:
            if rid is not None and self._is_empty(rid):
                return self.default_value(rid, n)
            return None
        raise self.unsupported(n, f"this constructor of '{ttext}'")

    def record_id(self, n):
        """The id of the record (struct or class) that expression `n` has as its type, or None."""
        name = self.record_name(self.type_text(n["type"]))
        return next((i for i, (q, _) in self.records.items() if q == name), None)

    def _is_empty(self, rid) -> bool:
        return not any(f.get("kind") == "FieldDecl" for f in self.records[rid][1].get("inner", []))

    def default_value(self, rid, n):
        """A value-initialized object of record `rid` (``T()``, ``SharedMemory<float>()``):
        a call of a function made once per record that returns one with its fields 0."""
        qual, rec = self.records[rid]
        name = qual + "::<value-initialized>"
        if name not in self._defaults:
            self._defaults.add(name)
            fields = [f.get("name") for f in rec.get("inner", []) if f.get("kind") == "FieldDecl"
                      and not re.search(r"\[\d*\]\s*$", self.type_text(f["type"]))
                      and self.record_name(self.type_text(f["type"])) is None]
            fields = fields if fields or not self._is_empty(rid) else ["__empty"]
            items = [c_ast.Decl("this", [], [], [], [], c_ast.TypeDecl(
                "this", [], None, c_ast.Struct(qual, None)), None, None)]
            items += [c_ast.Assignment("=", c_ast.StructRef(c_ast.ID("this"), ".",
                                                            c_ast.ID(f)),
                                       c_ast.Constant("int", "0")) for f in fields]
            items.append(c_ast.Return(c_ast.ID("this")))
            decl = c_ast.Decl(name, [], [], [], ["inline"], c_ast.FuncDecl(None, c_ast.TypeDecl(
                name, [], None, c_ast.Struct(qual, None))), None, None)
            self._late.append(c_ast.FuncDef(decl, None, c_ast.Compound(items)))
        return c_ast.FuncCall(c_ast.ID(name, self.coord(n)), None, self.coord(n))

    def expr(self, n):
        if not n:
            return None
        k = n.get("kind")
        coord = self.coord(n)
        inner = n.get("inner", [])
        if k in _TRANSPARENT or (k == "ImplicitCastExpr"):
            return self.expr(inner[0])
        if k == "IntegerLiteral":
            t = self.type_text(n["type"])
            suffix = {"unsigned int": "u", "long": "l", "unsigned long": "ul",
                      "long long": "ll", "unsigned long long": "ull"}.get(t, "")
            return c_ast.Constant("int", n["value"] + suffix, coord)
        if k == "FloatingLiteral":
            t = self.type_text(n["type"])
            v = n["value"]
            if not re.search(r"[.eEn]", v):
                v += ".0"
            if t == "float":
                return c_ast.Constant("float", v + "f", coord)
            return c_ast.Constant("double", v, coord)
        if k == "CharacterLiteral":
            v = int(n["value"])
            if self.type_text(n["type"]) == "char":      # char is signed, as nvcc's
                v &= 0xFF
                v = v - 256 if v >= 128 else v
            if v < 0:
                return c_ast.UnaryOp("-", c_ast.Constant("int", str(-v), coord), coord)
            return c_ast.Constant("int", str(v), coord)
        if k == "StringLiteral":
            return c_ast.Constant("string", n["value"], coord)
        if k == "CXXBoolLiteralExpr":
            return c_ast.ID("true" if n["value"] else "false", coord)
        if k in ("CXXNullPtrLiteralExpr", "GNUNullExpr"):
            return c_ast.Constant("int", "0", coord)
        if k == "DeclRefExpr":
            ref = n["referencedDecl"]
            rk = ref.get("kind")
            if rk in _FUNCTION_KINDS:
                if ref["id"] in self.builtins:
                    return c_ast.ID(ref["name"], coord)
                name = self.functions.get(ref["id"])
                if name is None:
                    name = self.fqual.get(ref["id"], ref.get("name"))
                return c_ast.ID(name, coord)
            if rk == "EnumConstantDecl":
                return c_ast.ID(ref["name"], coord)
            if rk == "NonTypeTemplateParmDecl":
                raise self.unsupported(n, "this template parameter")
            node = c_ast.ID(ref.get("name"), coord)
            if ref.get("id") in self.ref_vars:
                return c_ast.UnaryOp("*", node, coord)
            return node
        if k == "SubstNonTypeTemplateParmExpr":
            return self.expr(inner[-1])
        if k in ("CStyleCastExpr", "CXXStaticCastExpr", "CXXReinterpretCastExpr",
                 "CXXConstCastExpr", "CXXFunctionalCastExpr"):
            sub = inner[0]
            if k == "CXXFunctionalCastExpr" and sub.get("kind") in ("CXXConstructExpr",):
                return self.construct(sub)
            if k == "CXXFunctionalCastExpr" and sub.get("kind") == "InitListExpr" \
                    and not sub.get("inner"):
                rid = self.record_id(n)         # T{} of an aggregate: a value-initialized T
                if rid is not None:
                    return self.default_value(rid, n)
            if n.get("castKind") in ("NoOp", "ConstructorConversion", "UserDefinedConversion") \
                    and k != "CStyleCastExpr":
                return self.expr(sub)
            ttext = self.type_text(n["type"])
            if n.get("castKind") == "ToVoid":
                ttext = "void"
            tn = self.type_node(ttext, None, n)
            return c_ast.Cast(c_ast.Typename(None, [], None, tn), self.expr(sub), coord)
        if k == "UnaryOperator":
            op = n["opcode"]
            if op in ("++", "--") and n.get("isPostfix"):
                op = "p" + op
            if op == "__extension__":
                return self.expr(inner[0])
            if op == "*" and inner[0].get("kind") == "CXXThisExpr":
                # was "cannot dereference a value of type C": the method's object is a value
                raise self.unsupported(n, "'*this' (a method gets its object by value, not "
                                          "a pointer)", "name the field itself: n, not "
                                                        "(*this).n; return a new object "
                                                        "instead of assigning *this")
            if op == "&":
                return self.address_of(inner[0], self.expr(inner[0]), coord)
            return c_ast.UnaryOp(op, self.expr(inner[0]), coord)
        if k == "BinaryOperator":
            op = n["opcode"]
            lhs, rhs = self.expr(inner[0]), self.expr(inner[1])
            if op == "=":
                return c_ast.Assignment("=", lhs, rhs, coord)
            if op == ",":
                exprs = (lhs.exprs if isinstance(lhs, c_ast.ExprList) else [lhs]) + [rhs]
                return c_ast.ExprList(exprs, coord)
            return c_ast.BinaryOp(op, lhs, rhs, coord)
        if k == "CompoundAssignOperator":
            return c_ast.Assignment(n["opcode"], self.expr(inner[0]), self.expr(inner[1]),
                                    coord)
        if k == "ConditionalOperator":
            return c_ast.TernaryOp(self.expr(inner[0]), self.expr(inner[1]),
                                   self.expr(inner[2]), coord)
        if k == "ArraySubscriptExpr":
            return c_ast.ArrayRef(self.expr(inner[0]), self.expr(inner[1]), coord)
        if k == "MemberExpr":
            base = inner[0]
            b = self.expr(base)
            arrow = "->" if n.get("isArrow") else "."
            if base.get("kind") == "CXXThisExpr":
                arrow = "."
            return c_ast.StructRef(b, arrow, c_ast.ID(n["name"], coord), coord)
        if k == "CXXThisExpr":
            return c_ast.ID("this", coord)
        if k == "CallExpr":
            return self.call(n)
        if k == "CXXMemberCallExpr":
            return self.member_call(n)
        if k == "CXXOperatorCallExpr":
            return self.operator_call(n)
        if k == "CXXConstructExpr":
            r = self.construct(n)
            if r is None:
                raise self.unsupported(n, "a default-constructed temporary")
            return r
        if k in ("CXXTemporaryObjectExpr", "CXXScalarValueInitExpr"):
            if k == "CXXScalarValueInitExpr":
                tn = self.type_node(self.type_text(n["type"]), None, n)
                return c_ast.Cast(c_ast.Typename(None, [], None, tn),
                                  c_ast.Constant("int", "0"), coord)
            r = self.construct(n)
            if r is None:
                rid = self.record_id(n)
                if rid is None:
                    raise self.unsupported(n, "this temporary object")
                r = self.default_value(rid, n)
            return r
        if k == "UnaryExprOrTypeTraitExpr":
            name = n.get("name", "sizeof")
            if name != "sizeof":
                raise self.unsupported(n, f"'{name}'")
            if "argType" in n:
                tn = self.type_node(self.type_text(n["argType"]), None, n)
                return c_ast.UnaryOp("sizeof", c_ast.Typename(None, [], None, tn), coord)
            return c_ast.UnaryOp("sizeof", self.expr(inner[0]), coord)
        if k == "InitListExpr":
            return self.init_expr(n, n)
        if k == "CXXDefaultArgExpr":
            raise self.unsupported(n, "this default argument")
        if k == "ImplicitValueInitExpr":
            return c_ast.Constant("int", "0", coord)
        if k == "LambdaExpr":
            raise self.unsupported(n, "C++ lambdas", "write a __device__ function")
        if k in ("CXXNewExpr", "CXXDeleteExpr"):
            raise self.unsupported(n, "C++ new and delete",
                                   "allocate memory on the host and pass a pointer")
        if k == "RecoveryExpr":
            raise self.unsupported(n, "this expression")
        raise self.unsupported(n, f"the C++ construct '{k}'")

    def address_of(self, n, lowered, coord):
        """`&lowered` for the C++ expression `n` (a reference bound to it, or `&n`). A field
        of a method's object is refused: the method has a copy of its object, so a write
        through the address would be lost."""
        e = n
        while e.get("kind") in ("ImplicitCastExpr", "ParenExpr", "MaterializeTemporaryExpr"):
            e = e["inner"][0]
        field = None
        while e.get("kind") == "MemberExpr":
            field = field or e.get("name")
            base = e["inner"][0]
            while base.get("kind") in ("ImplicitCastExpr", "ParenExpr"):
                base = base["inner"][0]
            if base.get("kind") == "CXXThisExpr":
                raise self.unsupported(
                    n, f"taking the address of a local variable ('{field}' is a field of the "
                       f"method's copy of its object)", "a method gets its object by value: "
                       "return the new value, or keep the field in a local variable")
            if e.get("isArrow"):
                break
            e = base
        return c_ast.UnaryOp("&", lowered, coord)

    def callee_decl(self, callee):
        while callee.get("kind") in ("ImplicitCastExpr", "ParenExpr"):
            callee = callee["inner"][0]
        if callee.get("kind") == "DeclRefExpr":
            return callee, callee["referencedDecl"]
        if callee.get("kind") == "MemberExpr":
            return callee, {"id": callee.get("referencedMemberDecl"), "kind": "CXXMethodDecl",
                            "name": callee.get("name")}
        return callee, None

    def call_args(self, fnode, args):
        """Arguments in C: a default argument written out, one bound to a (non-const)
        reference parameter passed by address."""
        params = [p for p in fnode.get("inner", []) if p.get("kind") == "ParmVarDecl"] \
            if fnode else []
        out = []
        for i, a in enumerate(args):
            p = params[i] if i < len(params) else None
            if a.get("kind") == "CXXDefaultArgExpr":
                if p is None or not p.get("inner"):
                    raise self.unsupported(a, "this default argument")
                e = self.expr(p["inner"][0])
            else:
                e = self.expr(a)
            if p is not None and p["id"] in self.ref_vars:
                e = self.address_of(a, e, self.coord(a))
            out.append(e)
        return out

    def call(self, n):
        inner = n["inner"]
        callee, ref = self.callee_decl(inner[0])
        args = inner[1:]
        coord = self.coord(n)
        if ref is None:
            raise self.unsupported(n, "a call through a function pointer",
                                   "call the function by its name")
        if ref.get("id") in self.builtins:
            args = [a for a in args if a.get("kind") != "CXXDefaultArgExpr"]
            return c_ast.FuncCall(c_ast.ID(ref["name"], coord),
                                  c_ast.ExprList([self.expr(a) for a in args], coord)
                                  if args else None, coord)
        fnode = self.fnodes.get(ref.get("id"))
        if ref.get("id") in self._method_of:   # a static method
            pass
        name = self.functions.get(ref.get("id")) or self.fqual.get(ref.get("id"), ref["name"])
        call = c_ast.FuncCall(c_ast.ID(name, coord), c_ast.ExprList(
            self.call_args(fnode, args), coord) if args else None, coord)
        if ref.get("id") in self.ref_returns:
            return c_ast.UnaryOp("*", call, coord)
        return call

    def member_call(self, n):
        inner = n["inner"]
        member = inner[0]
        while member.get("kind") in ("ParenExpr",):
            member = member["inner"][0]
        if member.get("kind") != "MemberExpr":
            raise self.unsupported(n, "a call through a pointer to a member function")
        mid = member.get("referencedMemberDecl")
        obj = self.expr(member["inner"][0])
        if member.get("isArrow") and member["inner"][0].get("kind") != "CXXThisExpr":
            obj = c_ast.UnaryOp("*", obj, self.coord(member))
        return self._method_call(mid, obj, inner[1:], n)

    def _method_call(self, mid, obj, args, n):
        coord = self.coord(n)
        name = self.functions.get(mid)
        fnode = self.fnodes.get(mid)
        if name is None and fnode is not None and self._in_prelude(fnode):
            # a method the prelude declares without a body (cuda::barrier's): the built-in
            # named by its class template and name ('cuda::barrier::arrive_and_wait'),
            # given the object's address first
            builtin = self.fqual.get(mid, "")
            while re.search(r"<[^<>]*>", builtin):
                builtin = re.sub(r"<[^<>]*>", "", builtin)
            args = [a for a in args if a.get("kind") != "CXXDefaultArgExpr"]
            return c_ast.FuncCall(c_ast.ID(builtin, coord), c_ast.ExprList(
                [c_ast.UnaryOp("&", obj, coord)] + [self.expr(a) for a in args], coord), coord)
        if name is None:
            what = self.fqual.get(mid, "this method")
            raise self.unsupported(n, f"the method '{what}' (clang gave no body for it: "
                                      f"is it __device__?)")
        static = (fnode or {}).get("storageClass") == "static"     # s.f() of a static f
        call = c_ast.FuncCall(c_ast.ID(name, coord), c_ast.ExprList(
            ([] if static else [obj]) + self.call_args(fnode, args), coord), coord)
        if mid in self.ref_returns:
            return c_ast.UnaryOp("*", call, coord)
        return call

    def operator_call(self, n):
        inner = n["inner"]
        callee, ref = self.callee_decl(inner[0])
        if ref is None:
            raise self.unsupported(n, "this overloaded operator")
        fid = ref.get("id")
        if ref.get("name") == "operator=" and fid not in self.functions:
            # the implicit copy or move assignment of a struct: C's struct assignment
            return c_ast.Assignment("=", self.expr(inner[1]), self.expr(inner[2]),
                                    self.coord(n))
        if fid in self._method_of:
            return self._method_call(fid, self.expr(inner[1]), inner[2:], n)
        coord = self.coord(n)
        name = self.functions.get(fid)
        if name is None:
            raise self.unsupported(n, f"the operator '{ref.get('name')}'")
        call = c_ast.FuncCall(c_ast.ID(name, coord), c_ast.ExprList(
            self.call_args(self.fnodes.get(fid), inner[1:]), coord), coord)
        if fid in self.ref_returns:
            return c_ast.UnaryOp("*", call, coord)
        return call
