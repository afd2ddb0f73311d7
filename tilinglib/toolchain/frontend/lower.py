"""Stage 3 of the front end: clang's JSON AST -> pycparser `c_ast` nodes.

pycparser's `c_ast` is only the IR that the emulator's compiler (toolchain/codegen/compiler.py and
co.) and the source checks (grading/source_checks.py) consume; this module writes it the way
pycparser would have written it for the equivalent C, with the markers the compiler reads
back (`KERNEL_MARK`, `DEVICE_MARK`, `SHARED_MARK`, `CONSTANT_MARK`): a kernel's function
specifier ``_Noreturn``, a ``__device__`` function's ``inline``, the storage class
``_Thread_local`` for ``__shared__`` and ``register`` for ``__constant__``.
Every node carries ``Coord("kernel.cu", line, column)``: the student's own line and column.

C++ is lowered here, each construct in one place (the table is in docs/frontend.md):

- namespaces are flattened; a function keeps its qualified name (``ns::f``);
- each template instantiation clang made becomes a function of its own, named by its text
  (``k<128, float>``): templates are never instantiated here, only read;
- a class or struct (templates too) becomes a struct of its fields (a base class a first
  member ``__base<i>``); each method a function taking the object as a first parameter
  ``this``: by value, or by address when the method changes its object
  (`_find_pointer_methods`); a constructor a function returning the object; conversion
  operators and operator overloads are methods like the others; a lambda a function taking
  its captures first (`lambda_function`);
- a reference parameter or variable becomes a pointer with implicit dereference (a ``const``
  reference parameter: a value); ``constexpr`` becomes ``const``; ``static_assert`` goes
  (clang evaluated it); default arguments are written out at each call (CXXDefaultArgExpr);
  ``nullptr``/``NULL`` become 0; every C++ cast becomes a C cast; ``auto`` is the type clang
  deduced.

A construct still refused raises `UnsupportedFeatureError` naming it, its line, and what to
write instead.
"""

from __future__ import annotations

import json
import re

from pycparser import c_ast
from pycparser.c_parser import Coord

from ...errors import UnsupportedFeatureError
from .host_prelude import HOST_RECORDS
from .prelude import CMATH_FLOAT, PRELUDE_TYPEDEFS, VECTOR_NAMES

# The markers this module writes into pycparser's c_ast for CUDA's qualifiers, which C has
# no words for: C keywords that a lowered kernel never uses otherwise, in the fields where
# pycparser keeps them (Decl.funcspec, Decl.storage). program.is_kernel, the compiler
# (toolchain/codegen) and the analyses read them back by these names.
KERNEL_MARK = "_Noreturn"          # funcspec of a __global__ function (a kernel)
DEVICE_MARK = "inline"             # funcspec of a __device__ function
SHARED_MARK = "_Thread_local"      # storage of a __shared__ variable ("extern" too: dynamic)
CONSTANT_MARK = "register"         # storage of a __constant__ variable

SOURCE_NAME = "kernel.cu"

_BUILTIN_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed",
                  "unsigned", "bool", "_Bool"}
_RECORD_KINDS = ("CXXRecordDecl", "ClassTemplateSpecializationDecl")
_FUNCTION_KINDS = ("FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl",
                   "CXXConversionDecl", "CXXDestructorDecl")
# clang's implicit conversions between arithmetic types (the castKinds of ImplicitCastExpr)
_ARITHMETIC_CASTS = frozenset({"IntegralCast", "IntegralToFloating", "FloatingToIntegral",
                               "FloatingCast", "IntegralToBoolean", "FloatingToBoolean",
                               "BooleanToSignedIntegral"})
_TRANSPARENT = ("ExprWithCleanups", "MaterializeTemporaryExpr", "CXXBindTemporaryExpr",
                "ConstantExpr", "ParenExpr", "FullExpr", "CXXFunctionalCastExpr_noop")


def _norm(name: str) -> str:
    """A type or template name in one spelling: no 'struct '/'class ', no spaces, no integer
    suffixes on template arguments (clang writes both 32U and 32)."""
    name = re.sub(r"\b(struct|class|union|enum)\s+", "", name)
    name = re.sub(r"(?<![\w.])(\d+)[uUlL]+\b", r"\1", name)
    return re.sub(r"\s+", "", name)


# clang's built-in names of size_t and ptrdiff_t (the type of sizeof and of p - q, where
# clang writes a type without desugaring it: a deduced return type)
_CLANG_TYPEDEFS = {"__size_t": "unsigned long", "__ptrdiff_t": "long"}
# the arithmetic types as _norm spells them
_ARITHMETIC_TYPES = frozenset(_norm(t) for t in (
    "bool", "char", "signed char", "unsigned char", "short", "unsigned short", "int",
    "unsigned int", "long", "unsigned long", "long long", "unsigned long long", "float",
    "double")) | frozenset(PRELUDE_TYPEDEFS)


def normalize_kernel_name(name: str) -> str:
    """The kernel name `name` as get_function compares it (spaces and integer suffixes
    removed: ``'k<128,  float>'`` and ``'k<128U, float>'`` are ``'k<128,float>'``)."""
    return _norm(name)


def _split_function_type(text: str):
    """'float (float, int) const' -> ('float', ['float', 'int']); a trailing return type
    ('auto (float) -> float') is the return type."""
    text = text.strip()
    trailing = re.match(r"^auto\s*(\(.*\))[^()]*->\s*(.+)$", text)
    if trailing:
        text = trailing.group(2) + " " + trailing.group(1)
    text = re.sub(r"\)\s*(const|volatile|noexcept|&|&&|\s)*$", ")", text)
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


# the binary operators `Translator._const_value` folds, on Python ints (then wrapped)
_CONST_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
              "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b,
              "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
              "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
              "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b),
              "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b)}


def _close_of(text: str, lt: int) -> int:
    """The index of the '>' that closes the '<' at `lt` (-1 if none); a '<' or '>' inside
    parentheses is an operator ('enable_if_t<(K >= 0), float>')."""
    depth = parens = 0
    for i in range(lt, len(text)):
        c = text[i]
        if c in "([":
            parens += 1
        elif c in ")]":
            parens -= 1
        elif parens == 0 and c == "<":
            depth += 1
        elif parens == 0 and c == ">":
            depth -= 1
            if depth == 0:
                return i
    return -1


# <type_traits>' type aliases as clang leaves them in a function's type, which it never
# desugars ('std::enable_if_t<std::is_floating_point<float>::value, float> (float)'): in a
# well-formed instantiation an enable_if's condition held, so the alias is its type
_STD_ALIAS = re.compile(r"(?:typename\s+)?(?:::)?std::(enable_if_t|conditional_t|remove_cv_t"
                        r"|remove_const_t|remove_volatile_t|remove_reference_t"
                        r"|remove_pointer_t|add_const_t|add_pointer_t|enable_if|conditional)"
                        r"\s*<")


def _template_args_of(text: str) -> list[str]:
    """A template argument list split at its top-level commas (a '<' or '>' inside
    parentheses is an operator)."""
    out, angles, parens, cur = [], 0, 0, ""
    for c in text:
        if c in "([":
            parens += 1
        elif c in ")]":
            parens -= 1
        elif parens == 0 and c == "<":
            angles += 1
        elif parens == 0 and c == ">":
            angles -= 1
        if c == "," and angles == 0 and parens == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    return out + [cur.strip()] if cur.strip() else out


def _resolve_std_aliases(text: str) -> str:
    """`text` with each of <type_traits>' aliases of `_STD_ALIAS` replaced by the type it
    names: ``std::enable_if_t<C, T>`` and ``typename std::enable_if<C, T>::type`` by T
    (void without T), ``std::conditional_t<true, A, B>`` by A (B for false; another
    condition is left as written), ``std::remove_cv_t<const T>`` by T, and so on."""
    for _ in range(50):
        found = list(_STD_ALIAS.finditer(text))
        if not found:
            return text
        m = found[-1]                 # the last one first: an inner alias before its outer
        close = _close_of(text, m.end() - 1)
        if close < 0:
            return text
        args = _template_args_of(text[m.end():close])
        end = close + 1
        name = m.group(1)
        if name in ("enable_if", "conditional"):
            tail = re.match(r"\s*::\s*type\b", text[end:])
            if not tail:
                return text
            end += tail.end()
            name += "_t"
        if name == "enable_if_t":
            new = args[1] if len(args) > 1 else "void"
        elif name == "conditional_t":
            if len(args) != 3 or args[0].strip() not in ("true", "false", "1", "0"):
                return text
            new = args[1] if args[0].strip() in ("true", "1") else args[2]
        else:
            t = args[0].strip() if args else ""
            if name in ("remove_cv_t", "remove_const_t", "remove_volatile_t"):
                words = {"remove_cv_t": ("const", "volatile"), "remove_const_t": ("const",),
                         "remove_volatile_t": ("volatile",)}[name]
                if "*" not in t and "&" not in t:
                    t = " ".join(w for w in t.split() if w not in words)
                else:       # the top level only: 'const float *const' -> 'const float *'
                    t = re.sub(r"\s*\b(" + "|".join(words) + r")\s*$", "", t)
            elif name == "remove_reference_t":
                t = re.sub(r"\s*&&?\s*$", "", t)
            elif name == "remove_pointer_t":
                t = re.sub(r"\s*\*\s*(const|volatile|__restrict)?\s*$", "", t)
            elif name == "add_const_t":
                t = "const " + t
            elif name == "add_pointer_t":
                t = re.sub(r"\s*&&?\s*$", "", t) + " *"
            new = t
        text = text[:m.start()] + new.strip() + text[end:]
    return text


# a pointer or reference to an array, as clang spells it: 'float (*)[32]',
# 'const float (*__restrict)[4][4]', 'float (**)[8]', 'float (&)[4]', 'float &[4]'
_ARRAY_POINTER = re.compile(r"^(?P<base>.*?)\s*(?:\((?P<ptr>[*&][*&\s\w]*)\)|(?P<ptr2>&&?))"
                            r"\s*(?P<dims>(?:\[\d+\]\s*)+)$")


def _is_reference(text: str) -> bool:
    """Whether clang's type `text` is a reference (`float &`, `const T &`, `float (&)[4]`)."""
    text = text.rstrip()
    if text.endswith("&"):
        return True
    m = _ARRAY_POINTER.match(text)
    return bool(m) and ("&" in (m.group("ptr") or "") or bool(m.group("ptr2")))


def _is_array_reference(text: str) -> bool:
    """A reference to an array (`float (&)[4]`): never by value, unlike `const T &`."""
    return _is_reference(text) and not text.rstrip().endswith("&")


def _mentions_this(node) -> bool:
    """Whether clang's JSON `node` uses `this` (a member of the method's object)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            if n.get("kind") == "CXXThisExpr":
                return True
            stack.extend(n.get("inner", []))
    return False


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


_INTEGER_TYPES = re.compile(r"^(const\s+)?(unsigned\s+|signed\s+)?(int|long|long long|short|char|"
                            r"size_t|std::size_t|unsigned|u?int(8|16|32|64)_t|bool)$")


def _template_param_list(n: dict) -> tuple:
    """((kind, name), ...) of template `n`'s parameters (clang's JSON), as
    `Translator.template_params` gives them."""
    out = []
    for p in n.get("inner", []):
        kind = p.get("kind", "")
        if not kind.endswith("ParmDecl"):
            continue
        qual = (p.get("type") or {}).get("qualType", "")
        if p.get("isParameterPack"):
            what = "other"
        elif kind == "NonTypeTemplateParmDecl" and _INTEGER_TYPES.match(qual.strip()):
            what = "int"
        elif kind == "TemplateTypeParmDecl":
            what = "type"
        else:
            what = "other"
        out.append((what, p.get("name") or ""))
    return tuple(out)


class Translator:
    """One translation unit: `translate()` returns a `c_ast.FileAST`.

    After it: `kernel_names` maps each kernel's name as get_function takes it (``'k'``,
    ``'k<128, float>'``) to its mangled name (clang's ``mangledName``: the Itanium ABI name
    nvcc gives it too), `template_kernels` lists the kernel templates' names and
    `template_params` gives each one's parameters, in order, as (kind, name) pairs: kind
    "int" for a non-type parameter of an integer type, "type" for a type parameter, "other"
    for the rest (a pointer, a template template parameter, a parameter pack)."""

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
        self.template_params: dict = {}  # kernel template name -> ((kind, name), ...)
        self.ext: list = []
        self._emitted: set = set()
        self._method_of: dict = {}       # function id -> record id
        self._ctors: dict = {}           # record id -> [(ctor type text, node)]
        self._enums: list = []
        self._enum_values: dict = {}     # enumerator -> its value's text, where clang gave it
        self._enum_types: dict = {}      # enum name -> its integer type (clang's spelling)
        self._defaults: set = set()
        self._tparams: dict = {}         # instantiation id -> its template's parameter types
        self._late: list = []            # functions made by the translator
        self._range_arrays: dict = {}    # a range-for's __range1 id -> the array expression
        self._lambdas: dict = {}         # LambdaExpr id -> (function name, captures)
        self._lambda_methods: dict = {}  # a lambda's operator() id -> the same
        self._lambda_vars: dict = {}     # `auto f = [..]` VarDecl id -> (name, captures,
        #                                  hidden copies)
        self._static_names: dict = {}    # static member VarDecl id -> 'Class::name'
        self._failed_records: dict = {}  # record id -> why it cannot be lowered
        self._by_pointer: set = set()    # methods that get their object by address
        self._this_ptr = False           # translating such a method's body
        self._decomp: dict = {}          # DecompositionDecl id -> its hidden variable
        self.failed: dict = {}           # function name -> the UnsupportedFeatureError it met
        self._device_refs = None         # ids of declarations device code names
        self._file_vars: dict = {}       # id -> file-scope VarDecl
        self._bindings: dict = {}        # BindingDecl id -> its expression
        self._shared_vars: dict = {}     # a kernel's __shared__ VarDecl id -> its node

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
        self._find_pointer_methods()
        for e in self._enums:
            self.ext.append(e)
        for rid in list(self.records):
            self._emit_host_or_record(rid)
        for kind, n, extra in bodies:
            if kind == "var":
                d = self._file_scope_var(n)
                if d is not None:
                    self.ext.append(d)
        for kind, n, extra in bodies:
            if kind == "fn":
                try:
                    f = self.function(n, extra)
                except UnsupportedFeatureError as exc:
                    # a construct the emulator lacks, in one function of a whole file:
                    # the kernels that use it are refused with it (compiler.py), the
                    # others still run
                    self.failed[self.functions[n["id"]]] = exc
                    continue
                if f is not None:
                    self.ext.append(f)
        self.ext.extend(self._late)
        return c_ast.FileAST(self.ext)

    def _emit_host_or_record(self, rid):
        """Emit record `rid`; one device code cannot use (no __device__ method, a member
        of a host type: `std::vector<float> v;`) is host code, left out when it cannot be
        lowered (clang refuses device code that uses it)."""
        qual, rec = self.records[rid]
        try:
            self._emit_record(rid)
        except UnsupportedFeatureError:
            if any(not m.get("isImplicit") and any(
                    a.get("kind") in ("CUDADeviceAttr", "CUDAGlobalAttr") and not a.get("implicit")
                    for a in m.get("inner", []) if isinstance(a, dict))
                   for m in rec.get("inner", []) if isinstance(m, dict)):
                raise                   # a class with __device__ methods: device code
            name = qual.split("::")[-1].split("<")[0]
            if re.search(rf"\b{re.escape(name)}\b", self.device_types()):
                raise                   # a type device code uses
            self._emitted.add(rid)

    def _file_scope_var(self, n):
        """A file-scope variable: `__device__`, `__constant__` and `__shared__` ones, and
        const ones (device code may read a constant), are lowered; a host variable
        (`int h_n = 4;`, `std::vector<float> data;`) is host code and left out (clang
        refuses device code that uses it: "identifier ... is undefined in device code")."""
        # (clang gives a constexpr variable an implicit __constant__: only a written one
        # counts here; such a constant is lowered below if device code uses it)
        attrs = {a.get("kind") for a in n.get("inner", []) if isinstance(a, dict)
                 and not a.get("implicit")}
        if attrs & {"CUDADeviceAttr", "CUDAConstantAttr", "CUDASharedAttr"}:
            return self.var_decl(n, file_scope=True)
        qual = n.get("type", {}).get("qualType", "")
        if not (n.get("constexpr") or re.match(r"^const\b", qual) or " const" in qual
                or n.get("id") in self._static_names):
            return None                       # a host variable
        if n.get("id") not in self._static_names and n.get("id") not in self.device_refs():
            return None                       # a constant only host code uses
        n = self._folded_constant(n)
        try:
            return self.var_decl(n, file_scope=True)
        except UnsupportedFeatureError:
            return None                       # a constant of a host type (std::string)

    # ------------------------------------------------------------------ constexpr calls
    _INT_BITS = {"bool": 1, "char": 8, "signedchar": 8, "unsignedchar": 8, "short": 16,
                 "unsignedshort": 16, "int": 32, "unsignedint": 32, "long": 64,
                 "unsignedlong": 64, "longlong": 64, "unsignedlonglong": 64}

    def _folded_constant(self, n):
        """Constant `n` (a file-scope or static constexpr VarDecl of an integer type) with
        its value folded into a literal where the value calls constexpr functions
        (`static constexpr int Y = M << helper::max(0, S);`): nvcc evaluates those at
        compile time, and the emulator's constant folding knows no calls. `n` itself where
        there is no call or the value is beyond `_const_value`."""
        t = _norm(self.type_text(n.get("type", {}))).replace("const", "", 1) \
            if n.get("type") else ""
        t = _norm(PRELUDE_TYPEDEFS.get(t, t))
        init = next((c for c in n.get("inner", []) if isinstance(c, dict) and not
                     c.get("kind", "").endswith(("Attr", "TemplateArgument"))), None)
        if init is None or t not in self._INT_BITS or '"CallExpr"' not in json.dumps(init):
            return n
        try:
            value = self._const_value(init, {}, 0)
        except (KeyError, ValueError, TypeError, ZeroDivisionError, RecursionError):
            return n
        lit = {"kind": "IntegerLiteral", "type": init.get("type", n["type"]),
               "value": str(int(value)), "range": init.get("range")}
        return {**n, "inner": [lit if c is init else c for c in n["inner"]]}

    def _wrap(self, value: int, node) -> int:
        t = _norm(self.type_text(node.get("type", {})) if node.get("type") else "int")
        t = t.replace("const", "", 1)
        t = _norm(PRELUDE_TYPEDEFS.get(t, t))       # size_t, uint32_t: their types
        bits = self._INT_BITS.get(t)
        if bits is None:
            raise ValueError(t)
        if bits == 1:
            return int(bool(value))
        value &= (1 << bits) - 1
        if not t.startswith("unsigned") and value >= 1 << (bits - 1):
            value -= 1 << bits
        return value

    def _var_nodes(self) -> dict:
        if getattr(self, "_var_node_map", None) is None:
            found, stack = {}, [self.root]
            while stack:
                x = stack.pop()
                if isinstance(x, dict):
                    if x.get("kind") in ("VarDecl", "VarTemplateSpecializationDecl") \
                            and x.get("inner"):
                        found[x["id"]] = x
                    stack.extend(x.get("inner", []))
            self._var_node_map = found
        return self._var_node_map

    def _const_value(self, e, env: dict, depth: int) -> int:
        """The value of integer expression `e` (clang's JSON) as C++ evaluates it at
        compile time: literals, parameters (`env`), constants, + - * / % << >> & | ^,
        comparisons, && || !, ?:, casts between integer types, and calls of constexpr
        functions whose body is one `return`. Raises ValueError for anything else."""
        if depth > 200:
            raise ValueError("too deep")
        k = e.get("kind")
        inner = [c for c in e.get("inner", []) if isinstance(c, dict)]
        if k == "ConstantExpr" and re.fullmatch(r"-?\d+", str(e.get("value", ""))):
            return int(e["value"])
        if k == "ConstantExpr" and e.get("value") in ("true", "false"):
            return int(e["value"] == "true")
        if k in ("ParenExpr", "ConstantExpr", "ExprWithCleanups", "SubstNonTypeTemplateParmExpr",
                 "ImplicitCastExpr", "CStyleCastExpr", "CXXStaticCastExpr",
                 "CXXFunctionalCastExpr"):
            v = self._const_value(inner[-1], env, depth + 1)
            return self._wrap(v, e) if k != "ParenExpr" else v
        if k == "IntegerLiteral":
            return int(e["value"])
        if k == "CXXBoolLiteralExpr":
            return int(bool(e["value"]))
        if k == "DeclRefExpr":
            ref = e["referencedDecl"]
            if ref.get("kind") == "ParmVarDecl":
                return env[ref["id"]]
            if ref.get("kind") in ("VarDecl", "VarTemplateSpecializationDecl"):
                lit = self._std_constants().get(ref["id"])
                if lit is not None:
                    return self._const_value(lit, env, depth + 1)
                d = self._var_nodes()[ref["id"]]
                if not d.get("constexpr") and "const" not in d.get("type", {}).get("qualType", ""):
                    raise ValueError("not a constant")
                init = next(c for c in d["inner"] if isinstance(c, dict) and not
                            c.get("kind", "").endswith(("Attr", "TemplateArgument")))
                return self._wrap(self._const_value(init, {}, depth + 1), d)
            if ref.get("kind") == "EnumConstantDecl":
                raise ValueError("enumerator")
            raise ValueError(ref.get("kind"))
        if k == "UnaryOperator":
            v = self._const_value(inner[0], env, depth + 1)
            op = e["opcode"]
            out = {"-": -v, "+": v, "!": int(not v), "~": ~v}.get(op)
            if out is None:
                raise ValueError(op)
            return self._wrap(out, e)
        if k == "BinaryOperator":
            op = e["opcode"]
            a = self._const_value(inner[0], env, depth + 1)
            if op == "&&":
                return int(bool(a) and bool(self._const_value(inner[1], env, depth + 1)))
            if op == "||":
                return int(bool(a) or bool(self._const_value(inner[1], env, depth + 1)))
            b = self._const_value(inner[1], env, depth + 1)
            if op in ("/", "%"):
                q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)    # C truncates
                out = q if op == "/" else a - q * b
            elif op in _CONST_OPS:
                out = _CONST_OPS[op](a, b)      # (a negative shift: ValueError, unfolded)
            else:
                raise ValueError(op)
            return self._wrap(out, e)
        if k == "ConditionalOperator":
            c = self._const_value(inner[0], env, depth + 1)
            return self._const_value(inner[1] if c else inner[2], env, depth + 1)
        if k == "CallExpr":
            callee = inner[0]
            while callee.get("kind") in ("ImplicitCastExpr", "ParenExpr") and callee.get("inner"):
                callee = callee["inner"][0]
            ref = callee.get("referencedDecl", {})
            f = self.fnodes[ref["id"]]
            if not f.get("constexpr"):
                raise ValueError("not constexpr")
            params = [p for p in f.get("inner", []) if p.get("kind") == "ParmVarDecl"]
            args = [self._const_value(a, env, depth + 1) for a in inner[1:]]
            if len(args) != len(params):
                raise ValueError("default arguments")
            body = [c for c in f["inner"] if c.get("kind") == "CompoundStmt"][-1]
            stmts = body.get("inner", [])
            if len(stmts) != 1 or stmts[0].get("kind") != "ReturnStmt":
                raise ValueError("a body of more than one return")
            local = {p["id"]: self._wrap(v, p) for p, v in zip(params, args)}
            return self._wrap(self._const_value(stmts[0]["inner"][0], local, depth + 1), e)
        raise ValueError(k)

    def device_types(self) -> str:
        """Every type the device functions and device variables spell (clang's text),
        one per line."""
        if getattr(self, "_device_type_text", None) is None:
            types, stack = [], [self.fnodes[f] for f in self.functions]
            stack += [n for n in self._file_vars.values()
                      if any(a.get("kind") in ("CUDADeviceAttr", "CUDAConstantAttr",
                                               "CUDASharedAttr")
                             for a in n.get("inner", []) if isinstance(a, dict))]
            while stack:
                n = stack.pop()
                if isinstance(n, dict):
                    t = n.get("type")
                    if isinstance(t, dict):
                        types.append(t.get("qualType", ""))
                        types.append(t.get("desugaredQualType", ""))
                    stack.extend(n.get("inner", []))
            self._device_type_text = "\n".join(types)
        return self._device_type_text

    def device_refs(self) -> set:
        """The ids of the declarations that the device functions' bodies name (and the
        constants those declarations' initializers name)."""
        if self._device_refs is None:
            refs, stack = set(), [self.fnodes[f] for f in self.functions]
            while stack:
                n = stack.pop()
                if isinstance(n, dict):
                    if n.get("kind") == "DeclRefExpr":
                        rid = n.get("referencedDecl", {}).get("id")
                        if rid not in refs and rid in self._file_vars:
                            stack.append(self._file_vars[rid])   # its initializer's names
                        refs.add(rid)
                    stack.extend(n.get("inner", []))
                    stack.extend(n.get("array_filler", []))
            self._device_refs = refs
        return self._device_refs

    def _std_constants(self) -> dict:
        """{id: literal node} of the constants of the headers' std:: class templates (the
        `value` of <type_traits>' integral_constant<bool, true>, ...), which are not
        lowered: each is a static constexpr member whose value clang substituted
        (SubstNonTypeTemplateParmExpr over a literal)."""
        if getattr(self, "_std_constant_map", None) is None:
            found: dict = {}
            stack = [(n, False) for n in self.root.get("inner", []) if isinstance(n, dict)]
            while stack:
                n, in_std = stack.pop()
                kind = n.get("kind")
                if kind == "NamespaceDecl":
                    if not self._in_prelude(n):
                        continue
                    stack += [(c, in_std or n.get("name") == "std") for c in n.get("inner", [])
                              if isinstance(c, dict)]
                elif in_std and kind in ("ClassTemplateDecl", "ClassTemplateSpecializationDecl",
                                         "CXXRecordDecl", "VarTemplateDecl"):
                    stack += [(c, True) for c in n.get("inner", []) if isinstance(c, dict)]
                elif in_std and kind in ("VarDecl", "VarTemplateSpecializationDecl") and \
                        n.get("constexpr") and n.get("inner"):
                    v = next((c for c in n["inner"] if isinstance(c, dict) and not
                              c.get("kind", "").endswith(("Attr", "TemplateArgument"))), {})
                    while v.get("kind") in _TRANSPARENT + ("ImplicitCastExpr",
                                                          "SubstNonTypeTemplateParmExpr") \
                            and v.get("inner"):
                        v = v["inner"][-1]
                    if v.get("kind") in ("IntegerLiteral", "CXXBoolLiteralExpr"):
                        found[n["id"]] = v
                    elif v.get("kind") == "DeclRefExpr":       # is_same_v: is_same<>::value
                        found[n["id"]] = v.get("referencedDecl", {}).get("id")
            for key in list(found):     # follow the references to their literals
                v, seen = found[key], set()
                while isinstance(v, str) and v not in seen:
                    seen.add(v)
                    v = found.get(v)
                if isinstance(v, dict):
                    found[key] = v
                else:
                    del found[key]
            self._std_constant_map = found
        return self._std_constant_map

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
                            qual = "::".join(scope + [n["name"]])
                            self.template_kernels.append(qual)
                            self.template_params[qual] = _template_param_list(n)
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
                if self._in_prelude(n) and (scope[:1] == ["std"] or n.get("name")
                                            in HOST_RECORDS):
                    continue        # the host declarations of the headers (host_prelude.py)
                loc = n.get("loc") or {}
                anonymous = not n.get("name")
                # an unnamed struct (a member's `struct { float a, b; } in;`, or C's
                # `typedef struct { ... } Frag;`): named by where it is, as clang's types
                # spell it ('(unnamed at <stdin>:20:16)'); a typedef names it below
                qual = "::".join(scope + [n.get("name") or
                                          f"__unnamed_{loc.get('line')}_{loc.get('col')}"])
                if kind == "ClassTemplateSpecializationDecl":
                    qual += "<" + ", ".join(self._template_args(n)) + ">"
                self.records[n["id"]] = (qual, n)
                self.record_by_name[_norm(qual)] = qual
                if anonymous:
                    self.record_by_name[_norm(f"(unnamed at <stdin>:{loc.get('line')}:"
                                              f"{loc.get('col')})")] = qual
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
                        # a static member: by its qualified name (Ops<int>::zero and
                        # Ops<float>::zero are two variables); one with no value (a class
                        # template's member nobody used) is left out
                        if any(not c.get("kind", "").endswith("Attr")
                               for c in m.get("inner", [])):
                            self._static_names[m["id"]] = qual + "::" + m["name"]
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
                    self._file_vars[n["id"]] = n
            elif kind == "EnumDecl":
                if self._in_prelude(n) and scope[:1] != ["cuda"]:
                    continue        # the headers' host enums (cudaError, ...): host code
                self._enum(n)
            elif kind in ("TypedefDecl", "TypeAliasDecl"):
                decl = next((t.get("decl", {}) for t in n.get("inner", [])
                             if t.get("kind") == "RecordType"), {})
                if decl.get("id") in self.records and \
                        self.records[decl["id"]][0].split("::")[-1].startswith("__unnamed_"):
                    # `typedef struct { ... } Frag;`: clang names the struct Frag
                    self.record_by_name[_norm("::".join(scope + [n["name"]]))] = \
                        self.records[decl["id"]][0]
                    continue
                if _norm(self.type_text(n["type"])) == _norm(n["name"]):
                    continue            # `typedef struct Frag { ... } Frag;`: the struct
                self.typedefs[n["name"]] = self.type_text(n["type"])
                self.typedefs["::".join(scope + [n["name"]])] = self.type_text(n["type"])
            elif kind == "VarTemplateDecl":
                # a variable template (`std::is_same_v<T, U>`, a student's
                # `template <int N> constexpr int Pow2 = 1 << N;`): each instantiation with
                # a value is a constant named by its arguments, as a static member is
                for v in n.get("inner", []):
                    if v.get("kind") == "VarTemplateSpecializationDecl" and any(
                            not c.get("kind", "").endswith(("Attr", "TemplateArgument"))
                            for c in v.get("inner", [])):
                        self._static_names[v["id"]] = "::".join(
                            scope + [n["name"]]) + "<" + ", ".join(self._template_args(v)) + ">"
                        bodies.append(("var", v, None))
            elif kind in ("UsingDirectiveDecl", "UsingDecl",
                          "StaticAssertDecl", "EmptyDecl", "UsingShadowDecl",
                          "TypeAliasTemplateDecl"):
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
            # the desugared type where the written one names an alias (a return type
            # `std::enable_if_t<std::is_floating_point<T>::value, T>` is T)
            ret, _ = _split_function_type(_resolve_std_aliases(self.type_text(f["type"])))
            if ret.endswith("&") and f.get("kind") != "CXXConstructorDecl":
                if record is not None and f.get("storageClass") != "static" and \
                        re.match(r"^const\b", ret) and "*" not in ret:
                    pass        # `const T& get() const`: the value (the object is a copy)
                else:
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
            if len(fids) < 2 and not (name in builtin_names and name not in self.kernel_names
                                      and not any(self.fnodes[f].get("previousDecl")
                                                  in self.builtins for f in fids)):
                continue
            for fid in fids:
                qt = self.fnodes[fid]["type"]["qualType"]
                _, params = _split_function_type(qt)
                new = f"{name}({', '.join(params)})"
                if re.search(r"\)\s*const\b[^()]*$", qt):    # `T& at(int)` and `T at(int) const`
                    new += " const"
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
        known = []                           # each enumerator's value, None where unknown
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
            known.append(following - 1 if following is not None else None)
        # the enumeration's integer type (C++ [dcl.enum]): the fixed one (`enum E : long
        # long`), int for a scoped enum, else the first of int, unsigned int, long,
        # unsigned long that holds every value; variables of the enum and its
        # enumerators have it (the emulator's C enums are int)
        fixed = n.get("fixedUnderlyingType")
        if fixed:
            under = self.type_text(fixed)
        elif n.get("scopedEnumTag") or None in known or not known:
            under = "int"
        else:
            lo, hi = min(known), max(known)
            under = next((t for t, a, b in (("int", -2**31, 2**31 - 1),
                                            ("unsigned int", 0, 2**32 - 1),
                                            ("long", -2**63, 2**63 - 1))
                          if a <= lo and hi <= b), "unsigned long")
        if n.get("name"):
            self._enum_types[n["name"].split("::")[-1]] = under
        # c_ast.Enum's third argument is `underlying_type` in pycparser 3 (required) and
        # `coord` in 2.x: None is right for both (the translator casts where not int).
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
        text = _resolve_std_aliases(text.strip())
        if "(lambda at" in text:
            raise self.unsupported(n, "a lambda passed to a function or stored other than "
                                      "'auto f = [...](...) {...};'",
                                   "call it where it is declared, or write a __device__ "
                                   "function")
        if re.search(r"\(\*\)\s*\(", text):
            raise self.unsupported(n, f"function pointers ('{text}')",
                                   "call the __device__ function by its name")
        m = _ARRAY_POINTER.match(text)
        if m:
            # a pointer or reference to an array (`float (*As)[TILE]`, a parameter
            # `float (*C)[N]`, `float (&a)[N]`, `auto& arr = f.v;`): a pointer to the array
            # type, so `As[i][j]`, `As + 1` and `sizeof(*As)` step by whole rows; a
            # reference is such a pointer that its uses dereference (_is_reference)
            node = self.type_node(m.group("base") + m.group("dims"), declname, n)
            for op in re.findall(r"\*|&&?|\bconst\b|\bvolatile\b|__restrict\w*",
                                 m.group("ptr") or m.group("ptr2")):
                if op in ("const", "volatile") or op.startswith("__restrict"):
                    if isinstance(node, c_ast.PtrDecl):
                        node.quals.append("restrict" if op.startswith("__restrict") else op)
                    continue
                node = c_ast.PtrDecl([], node)
            return node
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
        if name in _CLANG_TYPEDEFS:     # clang's own name of sizeof's type (a lambda's
            return c_ast.IdentifierType(_CLANG_TYPEDEFS[name].split())   # deduced return)
        if name in VECTOR_NAMES:
            return c_ast.IdentifierType([name])
        rec = self.record_name(name)
        if rec is not None:
            return c_ast.Struct(rec, None)
        if name.split("::")[-1] in [e.type.name for e in self._enums if e.type.name]:
            return c_ast.IdentifierType(
                self._enum_types.get(name.split("::")[-1], "int").split())
        if name.startswith("__half") or name in ("half", "half2"):
            raise self.unsupported(n, f"half-precision type '{name}'", "use float")
        raise self.unsupported(n, f"the type '{name}'")

    # ------------------------------------------------------------------ records
    def _emit_record(self, rid):
        failed = self._failed_records.get(rid)
        if failed is not None:
            # a struct that could not be lowered (host code: a std::string member): so is
            # every struct with a member of it (`struct All { Out output; };`)
            raise failed
        if rid in self._emitted:
            return
        self._emitted.add(rid)
        try:
            self._lower_record(rid)
        except UnsupportedFeatureError as exc:
            self._failed_records[rid] = exc
            raise

    def _lower_record(self, rid):
        qual, n = self.records[rid]
        if any(m.get("virtual") for m in n.get("inner", [])) or \
                n.get("definitionData", {}).get("isPolymorphic"):
            raise self.unsupported(n, f"virtual functions ('{qual}')",
                                   "call the function of the class itself, or pass what "
                                   "differs as a parameter")
        bases = []
        for i, b in enumerate(n.get("bases") or []):
            btext = self.type_text(b.get("type", {}))
            brec = self.record_name(btext)
            if b.get("isVirtual") or brec is None:
                raise self.unsupported(n, f"this base class of '{qual}' ('{btext}')",
                                       "write the base's fields into the struct")
            bid = next(k for k, (q, _) in self.records.items() if q == brec)
            if self._is_empty(bid) and not self.records[bid][1].get("bases"):
                continue           # an empty base takes no room (C++'s empty base rule)
            self._emit_record(bid)
            # a base is the first members, as C++ lays it out: one member `__base<i>`
            bases.append(c_ast.Decl(f"__base{i}", [], [], [], [], c_ast.TypeDecl(
                f"__base{i}", [], None, c_ast.Struct(brec, None)), None, None,
                coord=self.coord(n)))
        if n.get("tagUsed") == "union":
            # a C struct would give each member its own bytes: u.f = 1.0f; u.i read 0
            raise self.unsupported(n, f"unions ('{qual}')", "reinterpret bits with "
                                   "__float_as_int / __int_as_float, or use separate fields")
        decls = bases
        for f in n.get("inner", []):
            if f.get("kind") != "FieldDecl":
                continue
            if f.get("isBitfield"):
                # the field would hold its whole type: 'int x : 3' set to 7 read 7, not -1
                raise self.unsupported(f, f"bit-fields ('{f.get('name')}' in '{qual}')",
                                       "use a whole int and mask or shift it yourself")
            ttext = self.type_text(f["type"])
            used = self.record_name(re.sub(r"(\[\d*\]|\*|&|\b(const|volatile)\b)", " ",
                                           ttext).strip())
            for other, (oqual, _) in self.records.items():   # fields' structs first
                if other != rid and (_norm(oqual) in _norm(ttext) or oqual == used):
                    self._emit_record(other)
            # alignas / __align__ on a member, or on the struct (given to its first member:
            # the same layout, the struct aligned as its most aligned member)
            align = self._alignas(f) or (self._alignas(n) if not decls else [])
            decls.append(c_ast.Decl(f.get("name"), [], align, [], [],
                                    self.type_node(ttext, f.get("name"), f), None, None,
                                    coord=self.coord(f)))
        if not decls:     # an empty class (thread_block): one byte, as in C++
            decls.append(c_ast.Decl("__empty", [], [], [], [], c_ast.TypeDecl(
                "__empty", [], None, c_ast.IdentifierType(["char"])), None, None))
        self.ext.append(c_ast.Decl(None, [], [], [], [], c_ast.Struct(qual, decls), None, None,
                                   coord=self.coord(n)))

    def _alignas(self, n) -> list:
        """`alignas(16)` / `__align__(16)` of a declaration (clang's AlignedAttr, its value
        computed): pycparser's `Alignas` list of a `Decl`, empty without one."""
        for a in n.get("inner", []):
            if a.get("kind") == "AlignedAttr":
                value = next((c.get("value") for c in a.get("inner", []) if "value" in c), None)
                if value is None:
                    raise self.unsupported(n, "this alignas", "write a number: alignas(16)")
                return [c_ast.Alignas(c_ast.Constant("int", str(value)), self.coord(n))]
        return []

    # ------------------------------------------------------------------ functions
    def function(self, f, record):
        fid = f["id"]
        name = self.functions[fid]
        attrs = {a.get("kind") for a in f.get("inner", [])}
        spec = [KERNEL_MARK] if "CUDAGlobalAttr" in attrs else [DEVICE_MARK]
        ret, _ = _split_function_type(_resolve_std_aliases(self.type_text(f["type"])))
        ctor = f.get("kind") == "CXXConstructorDecl"
        params = []
        this_type = None
        if record is not None:
            this_type = self.records[record][0]
            if not ctor and f.get("storageClass") != "static":   # a static method has no object
                this_decl = c_ast.TypeDecl("this", [], None, c_ast.Struct(this_type, None))
                if fid in self._by_pointer:      # it changes its object: by address
                    this_decl = c_ast.PtrDecl([], this_decl)
                params.append(c_ast.Decl("this", [], [], [], [], this_decl, None, None,
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
        saved_this, self._this_ptr = self._this_ptr, fid in self._by_pointer
        try:
            body = self.compound(body_node)
        finally:
            self._this_ptr = saved_this
        if ctor:
            init = [c_ast.Decl("this", [], [], [], [], c_ast.TypeDecl(
                "this", [], None, c_ast.Struct(this_type, None)), None, None,
                coord=self.coord(f))]
            for ci in f["inner"]:
                if ci.get("kind") != "CXXCtorInitializer":
                    continue
                field = ci.get("anyInit", {}).get("name")
                if field is None and "baseInit" in ci:
                    # `D(float y) : Base(y * 2)`: the base member from the base's constructor
                    rec_node = self.records[record][1]
                    bases = [self.record_name(self.type_text(b.get("type", {})))
                             for b in rec_node.get("bases") or []]
                    want = self.record_name(self.type_text(ci["baseInit"]))
                    if want not in bases:
                        raise self.unsupported(f, "a constructor that initializes a virtual "
                                                  "or indirect base class")
                    field = f"__base{bases.index(want)}"
                if field is None:
                    raise self.unsupported(f, "a constructor that initializes a base class")
                value = self.expr(ci["inner"][0]) if ci.get("inner") else None
                if value is not None:
                    init.append(c_ast.Assignment("=", c_ast.StructRef(
                        c_ast.ID("this"), ".", c_ast.ID(field)), value, self.coord(f)))
            body.block_items = init + (body.block_items or []) + [
                c_ast.Return(c_ast.ID("this"), self.coord(f))]

        fdecl = c_ast.FuncDecl(c_ast.ParamList(params) if params else None, rtype)
        decl = c_ast.Decl(name, [], [], [], spec, fdecl, None, None, coord=self.coord(f))
        return c_ast.FuncDef(decl, None, body, coord=self.coord(f))

    def _find_pointer_methods(self):
        """The methods that get their object by address (`this` a pointer): those that
        change it (assign or increment a member, take a member's address, bind one to a
        non-const reference, use `*this`), return a reference into it, or call such a
        method on it. The others get it by value, so they also run on a temporary
        (`SharedMemory<T>()`, `cg::this_thread_block().sync()`)."""
        methods = {fid for fid in self.functions if fid in self._method_of
                   and self.fnodes[fid].get("kind") != "CXXConstructorDecl"
                   and self.fnodes[fid].get("storageClass") != "static"}
        calls = {}
        for fid in methods:
            f = self.fnodes[fid]
            body = [c for c in f.get("inner", []) if c.get("kind") == "CompoundStmt"][-1]
            direct, callees = self._changes_this(body)
            if direct or (fid in self.ref_returns and _mentions_this(body)):
                self._by_pointer.add(fid)
            calls[fid] = callees
        changed = True
        while changed:
            changed = False
            for fid in methods - self._by_pointer:
                if calls[fid] & self._by_pointer:
                    self._by_pointer.add(fid)
                    changed = True

    def _changes_this(self, body):
        """(whether `body` changes its object directly, the methods it calls on it)."""
        def is_this(t):
            while isinstance(t, dict) and t.get("kind") in ("ImplicitCastExpr", "ParenExpr"):
                t = t["inner"][0]
            return isinstance(t, dict) and t.get("kind") == "CXXThisExpr"

        def on_this(t):
            while isinstance(t, dict) and t.get("kind") in (
                    "ImplicitCastExpr", "ParenExpr", "ArraySubscriptExpr", "MemberExpr"):
                if t.get("kind") == "MemberExpr" and is_this(t["inner"][0]):
                    return True
                if t.get("kind") == "MemberExpr" and t.get("isArrow"):
                    return False
                t = t["inner"][0]
            return False
        direct, callees = False, set()
        stack = [body]
        while stack:
            n = stack.pop()
            if not isinstance(n, dict):
                continue
            k, op = n.get("kind"), n.get("opcode", "")
            inner = n.get("inner", [])
            if (k == "BinaryOperator" and op == "=") or k == "CompoundAssignOperator" or \
                    (k == "UnaryOperator" and op in ("++", "--", "&")):
                direct = direct or on_this(inner[0])
            if k == "UnaryOperator" and op == "*" and inner and \
                    inner[0].get("kind") == "CXXThisExpr":
                direct = True
            if k == "VarDecl" and inner:          # int& r = n;
                vt = n.get("type", {}).get("qualType", "")
                if vt.endswith("&") and not vt.startswith("const") and on_this(inner[-1]):
                    direct = True
            if k == "CXXMemberCallExpr" and inner and inner[0].get("kind") == "MemberExpr":
                base = inner[0]["inner"][0]
                if is_this(base) or on_this(base):
                    callees.add(inner[0].get("referencedMemberDecl"))
            if k == "CXXOperatorCallExpr" and len(inner) > 1:
                _, ref = self.callee_decl(inner[0])
                if ref is not None and on_this(inner[1]):
                    callees.add(ref.get("id"))
            if k in ("CallExpr", "CXXOperatorCallExpr", "CXXMemberCallExpr") and inner:
                _, ref = self.callee_decl(inner[0])
                fnode = self.fnodes.get((ref or {}).get("id"))
                params = [p for p in (fnode or {}).get("inner", [])
                          if p.get("kind") == "ParmVarDecl"]
                args = inner[1:] if k != "CXXOperatorCallExpr" or \
                    (ref or {}).get("id") not in self._method_of else inner[2:]
                for p, a in zip(params, args):
                    pt = p.get("type", {}).get("qualType", "")
                    if pt.endswith("&") and not pt.startswith("const") and on_this(a):
                        direct = True
            stack.extend(inner)
        return direct, callees

    def _object_arg(self, mid, base, is_arrow, coord):
        """The object argument of a call of method `mid` on `base` (clang's JSON): its
        address for a method that gets it by address, else its value."""
        by_pointer = mid in self._by_pointer
        if base.get("kind") == "CXXThisExpr":
            this = c_ast.ID("this", coord)
            if self._this_ptr == by_pointer:
                return this
            return c_ast.UnaryOp("*", this, coord) if self._this_ptr else \
                c_ast.UnaryOp("&", this, coord)
        obj = self.expr(base)
        if is_arrow:
            return obj if by_pointer else c_ast.UnaryOp("*", obj, coord)
        return c_ast.UnaryOp("&", obj, coord) if by_pointer else obj

    def param(self, p):
        ttext = self.type_text(p["type"])
        name = p.get("name") or None
        if (ttext.rstrip().endswith("&") and not re.match(r"^const\b", ttext.strip())) \
                or _is_array_reference(ttext):
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
            out = []
            for x in s.get("inner", []):
                d = self.decl_in_block(x)
                out.extend(d if isinstance(d, list) else [d] if d else [])
            return out
        r = self.stmt(s)
        return [] if r is None else [r]

    def decl_in_block(self, d):
        k = d.get("kind")
        if k == "VarDecl":
            return self.var_decl(d)
        if k == "DecompositionDecl":
            # `auto [lo, hi] = f();`: a hidden variable of the whole; each name is its
            # member (clang wrote each BindingDecl's expression over the hidden variable)
            hidden = f"__bindings_{len(self._decomp)}"
            self._decomp[d["id"]] = hidden
            for b in d.get("inner", []):
                if b.get("kind") == "BindingDecl" and b.get("inner"):
                    self._bindings[b["id"]] = b["inner"][0]
            return self.var_decl(dict(d, name=hidden))
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
            inner = list(s["inner"])
            before = []
            # `if (int t = f(); t < n)` and `if (int r = f())`: the declarations first, in
            # a block of their own (their scope is the if's)
            if s.get("hasInit"):
                before += self.stmt_list(inner.pop(0))
            if s.get("hasVar"):
                before += self.stmt_list(inner.pop(0))
            if s.get("isConstexpr") or s.get("isConsteval"):
                pass                              # `if constexpr`: clang chose; C's if agrees
            node = c_ast.If(self.expr(inner[0]), self.stmt(inner[1]),
                            self.stmt(inner[2]) if len(inner) > 2 else None, coord)
            return c_ast.Compound(before + [node], coord) if before else node
        if k == "ForStmt":
            init, var, cond, nxt, body = (s["inner"] + [{}] * 5)[:5]
            if var:
                # `for (...; int j = f(i); ...)`: declared and tested at each iteration
                test = c_ast.If(c_ast.UnaryOp("!", self.expr(cond), coord),
                                c_ast.Break(coord), None, coord)
                body_c = c_ast.Compound(self.stmt_list(var) + [test] + (
                    [self.stmt(body)] if body else []), coord)
                init_node = None
                if init and init.get("kind") == "DeclStmt":
                    init_node = c_ast.DeclList([self.decl_in_block(x) for x in init["inner"]],
                                               self.coord(init))
                elif init:
                    init_node = self.expr(init)
                return c_ast.For(init_node, None, self.expr(nxt) if nxt else None, body_c,
                                 coord)
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
                # `while (int j = f())`: declared and tested at each iteration
                var, cond, body = s["inner"][0], s["inner"][1], s["inner"][2]
                test = c_ast.If(c_ast.UnaryOp("!", self.expr(cond), coord),
                                c_ast.Break(coord), None, coord)
                return c_ast.While(c_ast.Constant("int", "1", coord), c_ast.Compound(
                    self.stmt_list(var) + [test, self.stmt(body)], coord), coord)
            return c_ast.While(self.expr(s["inner"][0]), self.stmt(s["inner"][1]), coord)
        if k == "DoStmt":
            return c_ast.DoWhile(self.expr(s["inner"][1]), self.stmt(s["inner"][0]), coord)
        if k == "ReturnStmt":
            e = self.expr(s["inner"][0]) if s.get("inner") else None
            if e is not None and getattr(self, "_returns_ref", False):
                e = c_ast.UnaryOp("&", e, coord)
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
            return self.range_for(s)
        return self.expr(s)

    def range_for(self, s):
        """`for (float x : arr)` over an array (a local, shared, or member array): clang's
        own lowering, a pointer from the array's start to its end; the array expression
        stands for its hidden reference `__range1` (an array has no side effects to run
        twice). Over anything else (a class with begin() and end()), refused."""
        coord = self.coord(s)
        if len(s["inner"]) != 8 or s["inner"][0]:
            raise self.unsupported(s, "a range-based for with an initializer",
                                   "declare the variable before the loop")
        _, rng, begin, end, cond, inc, var, body = s["inner"]
        rdecl = rng["inner"][0]
        if not re.search(r"\(&&?\)\s*\[\d+\]$", rdecl["type"]["qualType"]):
            raise self.unsupported(s, "a range-based for loop over anything but an array "
                                      f"(here '{self.type_text(rdecl['type'])}')",
                                   "write for (int i = 0; i < n; ++i)")
        self._range_arrays[rdecl["id"]] = rdecl["inner"][0]
        loop = c_ast.For(None, self.expr(cond), self.expr(inc), c_ast.Compound(
            self.stmt_list(var) + ([self.stmt(body)] if body else []), coord), coord)
        return c_ast.Compound(self.stmt_list(begin) + self.stmt_list(end) + [loop], coord)

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
        lam = self._lambda_of(d)
        if lam is not None:
            return self.lambda_decl(d, lam)
        name = self._static_names.get(d.get("id"), d["name"])
        attrs = {a.get("kind") for a in d.get("inner", []) if isinstance(a, dict)}
        storage = []
        sc = d.get("storageClass")
        if "CUDASharedAttr" in attrs:
            storage = (["extern"] if sc == "extern" else []) + [SHARED_MARK]
            if not file_scope:
                self._shared_vars[d["id"]] = d
        elif "CUDAConstantAttr" in attrs:
            storage = [CONSTANT_MARK]
        elif sc == "static":
            storage = ["static"]
        elif sc == "extern":
            storage = ["extern"]
        ttext = self.type_text(d["type"])
        init_nodes = [c for c in d.get("inner", []) if isinstance(c, dict) and
                      not c.get("kind", "").endswith(("Attr", "TemplateArgument"))]
        init_node = init_nodes[0] if init_nodes else None
        is_ref = _is_reference(ttext)
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
                if rid is not None and (self._is_empty(rid) or self._in_class_inits(rid)):
                    # thread_block b; S s; of a struct with default member initializers
                    init = self.default_value(rid, init_node)
            if is_ref and d["id"] in self.ref_vars and init is not None:
                init = c_ast.UnaryOp("&", init, self.coord(d))
        return c_ast.Decl(name, quals, self._alignas(d), storage, [], tnode, init, None,
                          coord=self.coord(d))

    # ------------------------------------------------------------------ lambdas
    def _lambda_of(self, d):
        """The LambdaExpr that VarDecl `d` is initialised with (`auto f = [&](...) {...};`)."""
        if "(lambda at" not in d.get("type", {}).get("qualType", ""):
            return None
        init = next((c for c in d.get("inner", []) if not c.get("kind", "").endswith("Attr")),
                    None)
        while init is not None and init.get("kind") in _TRANSPARENT + (
                "ImplicitCastExpr", "CXXConstructExpr"):
            init = (init.get("inner") or [None])[0]
        return init if init is not None and init.get("kind") == "LambdaExpr" else None

    def lambda_function(self, lam):
        """Lower a lambda to a __device__ function of its own, taking each capture as a
        first parameter (a by-reference capture as a pointer, a copy by value) and then the
        lambda's parameters. Returns (function name, [(variable id, by reference, clang's
        capture expression)])."""
        if lam["id"] in self._lambdas:
            return self._lambdas[lam["id"]]
        inner = lam.get("inner", [])
        rec = inner[0]
        c = self.coord(lam)
        name = f"<lambda at line {c.line if c else '?'}:{c.column if c else '?'}>"
        used = {v[0] for v in self._lambdas.values()}
        if name in used:          # the same lambda in another template instantiation
            name = next(f"{name}#{i}" for i in range(2, 10 ** 6) if f"{name}#{i}" not in used)
        fields = [f for f in rec.get("inner", []) if f.get("kind") == "FieldDecl"]
        inits = inner[1:1 + len(fields)]
        captures = []
        for f, ci in zip(fields, inits):
            ref = ci
            while ref.get("kind") in _TRANSPARENT + ("ImplicitCastExpr", "CXXConstructExpr"):
                ref = ref["inner"][0]
            if ref.get("kind") == "CXXThisExpr":
                raise self.unsupported(lam, "a lambda capturing 'this'",
                                       "pass the members it uses as parameters")
            if ref.get("kind") != "DeclRefExpr":
                raise self.unsupported(lam, "a lambda capture with an initializer ([x = ...])",
                                       "declare the variable before the lambda")
            var = ref["referencedDecl"]
            if var.get("id") in self._lambda_vars:      # a lambda calling another
                if self._lambda_vars[var["id"]][1]:
                    raise self.unsupported(lam, "a lambda calling another lambda that "
                                                "captures variables",
                                           "write the inner one as a __device__ function")
                continue
            by_ref = _is_reference(f["type"]["qualType"])
            ftext = self.type_text(f["type"])
            if ("decltype(" in ftext or "<" in ftext) and \
                    not re.search(r"\]\s*&?\s*$|\(&\)", ftext) and \
                    "desugaredQualType" not in f["type"] and ci.get("type"):
                # clang leaves a capture's type sugared, with no desugared form, where the
                # variable's type was written with a decltype or a typedef'd template
                # argument (`decltype(f(x) << 2) &`, `Pair<i64> &`): the variable's own
                ftext = self.type_text(ci["type"]) + (" &" if by_ref else "")
            captures.append((var["id"], var.get("name"), by_ref, ci, ftext))
        # what the lambda names of its function that C++ does not capture, but its own
        # function needs: a __shared__ variable of the kernel (static storage), passed by
        # reference; a constant (`constexpr int K = 8;`, `const int k = 7;`: clang marks
        # the use 'nonOdrUseReason': 'constant'), passed by value
        seen = {c[0] for c in captures}
        nodes, todo = [], [x for x in rec.get("inner", []) if isinstance(x, dict)]
        while todo:
            x = todo.pop()
            nodes.append(x)
            todo.extend(y for y in x.get("inner", []) if isinstance(y, dict))
        own = {x.get("id") for x in nodes if x.get("kind") in ("VarDecl", "ParmVarDecl")}
        for x in nodes:
            ref = x.get("referencedDecl") if x.get("kind") == "DeclRefExpr" else None
            if ref and x.get("nonOdrUseReason") == "constant" and ref.get("kind") == \
                    "VarDecl" and ref.get("id") not in own | seen:
                seen.add(ref["id"])
                ci = {"kind": "DeclRefExpr", "referencedDecl": ref, "type": ref.get("type"),
                      "range": x.get("range"), "loc": x.get("loc")}
                captures.append((ref["id"], ref.get("name"), False, ci,
                                 re.sub(r"^const\s+", "", self.type_text(ref["type"]))))
                continue
            if ref and ref.get("id") in self._shared_vars and ref["id"] not in seen:
                seen.add(ref["id"])
                vd = self._shared_vars[ref["id"]]
                ttext = self.type_text(vd["type"])
                m = re.match(r"^(.*?)\s*(\[.*\])$", ttext)
                if m:       # the array decays to a pointer to its first element (a row)
                    rows = re.findall(r"\[[^\]]*\]", m.group(2))[1:]
                    ftext = f"{m.group(1)} *" if not rows else f"{m.group(1)} (*){''.join(rows)}"
                else:
                    ftext = ttext + " &"
                ci = {"kind": "DeclRefExpr", "referencedDecl": ref, "type": vd["type"],
                      "range": x.get("range"), "loc": x.get("loc")}
                # an array as clang gives a local array captured by reference: a pointer
                # to its first element, passed as a value; a scalar by address
                captures.append((ref["id"], ref.get("name"), m is None, ci, ftext))
        methods = []
        for m in rec.get("inner", []):
            if m.get("kind") == "CXXMethodDecl" and m.get("name") == "operator()":
                methods.append(m)
            elif m.get("kind") == "FunctionTemplateDecl":       # a generic lambda
                methods += [x for x in m.get("inner", []) if x.get("kind") == "CXXMethodDecl"
                            and x.get("name") == "operator()" and x.get("inner")
                            and not re.search(r"\bauto\b|type-parameter",
                                              x["type"]["qualType"])]
        result = (name, captures)
        self._lambdas[lam["id"]] = result
        for k, m in enumerate(methods):
            body = [b for b in m.get("inner", []) if b.get("kind") == "CompoundStmt"]
            if not body:
                continue
            if not re.search(r"\)\s*const\b", m["type"]["qualType"]):
                raise self.unsupported(lam, "a 'mutable' lambda (its copies keep their "
                                            "changes from call to call)",
                                       "capture by reference ([&]) or write a __device__ "
                                       "function")
            ptypes = _split_function_type(m["type"]["qualType"])[1]
            fname = name if len(methods) == 1 else f"{name}({', '.join(ptypes)})"
            self.functions[m["id"]] = fname
            self.fnodes[m["id"]] = m
            self._lambda_methods[m["id"]] = result
            ret, _ = _split_function_type(m["type"]["qualType"])
            if "decltype(" in ret:
                # a return type deduced from a decltype-declared variable: clang writes
                # its sugar and no desugared form; the returned expression's type is it
                ret = self._returned_type(body[0]) or ret
            saved = (set(self.ref_vars), getattr(self, "_returns_ref", False), self._this_ptr)
            params = []
            for vid, vname, by_ref, _, ftext in captures:
                if by_ref:
                    self.ref_vars.add(vid)
                    tnode = self.type_node(ftext, vname, lam)
                else:
                    self.ref_vars.discard(vid)
                    tnode = self.type_node(ftext, vname, lam, by_value_refs=True)
                params.append(c_ast.Decl(vname, [], [], [], [], tnode, None, None, coord=c))
            params += [self.param(p) for p in m.get("inner", []) if p.get("kind") == "ParmVarDecl"]
            self._returns_ref, self._this_ptr = False, False
            try:
                if ret.endswith("&"):
                    raise self.unsupported(lam, "a lambda returning a reference",
                                           "return the value")
                rtype = self.type_node(ret, fname, m, by_value_refs=True)
                cbody = self.compound(body[-1])
            finally:
                self.ref_vars, self._returns_ref, self._this_ptr = saved
            fdecl = c_ast.FuncDecl(c_ast.ParamList(params) if params else None, rtype)
            decl = c_ast.Decl(fname, [], [], [], [DEVICE_MARK], fdecl, None, None, coord=c)
            self._late.append(c_ast.FuncDef(decl, None, cbody, coord=c))
        return result

    def _returned_type(self, body):
        """The type (clang's spelling) of the first `return e;` in `body`, or None."""
        todo = [body]
        while todo:
            n = todo.pop()
            if n.get("kind") == "ReturnStmt" and n.get("inner"):
                return self.type_text(n["inner"][0].get("type", {}))
            todo.extend(c for c in n.get("inner", []) if isinstance(c, dict))
        return None

    def lambda_decl(self, d, lam):
        """`auto f = [..](..) {..};`: the lambda's function is made; its copies (by-value
        captures) are taken here, in hidden variables, as C++ copies them here."""
        name, captures = self.lambda_function(lam)
        copies = []
        hidden = []
        for vid, vname, by_ref, ci, ftext in captures:
            if by_ref:
                hidden.append(None)
                continue
            h = f"__lambda_{d['name']}_{vname}"
            hidden.append(h)
            tnode = self.type_node(ftext, h, lam, by_value_refs=True)
            copies.append(c_ast.Decl(h, [], [], [], [], tnode, self.expr(ci), None,
                                     coord=self.coord(d)))
        self._lambda_vars[d["id"]] = (name, captures, hidden)
        if not copies:
            return None
        return copies if len(copies) > 1 else copies[0]

    def lambda_call(self, fid, obj, args, n):
        """A call of a lambda `f(x)`: its function with the captures first (a
        by-reference capture by address, a copy from its hidden variable)."""
        coord = self.coord(n)
        while obj.get("kind") in _TRANSPARENT + ("ImplicitCastExpr",):
            obj = obj["inner"][0]
        if obj.get("kind") == "LambdaExpr":            # [&] { ... }(): called where made
            name, captures = self.lambda_function(obj)
            hidden = [None] * len(captures)
            values = {i: self.expr(ci) for i, (_, _, by_ref, ci, _) in enumerate(captures)
                      if not by_ref}
        elif obj.get("kind") == "DeclRefExpr" and \
                obj["referencedDecl"].get("id") in self._lambda_vars:
            name, captures, hidden = self._lambda_vars[obj["referencedDecl"]["id"]]
            values = {i: c_ast.ID(h, coord) for i, h in enumerate(hidden) if h}
        else:
            raise self.unsupported(n, "a lambda called other than by the name it was "
                                      "declared with (passed to a function, stored)",
                                   "call it where it is declared, or write a __device__ "
                                   "function")
        cargs = []
        for i, (vid, vname, by_ref, ci, _) in enumerate(captures):
            if by_ref:
                ref = ci
                while ref.get("kind") in _TRANSPARENT + ("ImplicitCastExpr",):
                    ref = ref["inner"][0]
                cargs.append(c_ast.UnaryOp("&", self.expr(ref), coord))
            else:
                cargs.append(values[i])
        fname = self.functions.get(fid, name)
        all_args = cargs + self.call_args(self.fnodes.get(fid), args)
        return c_ast.FuncCall(c_ast.ID(fname, coord),
                              c_ast.ExprList(all_args, coord) if all_args else None, coord)

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
            return self.zero_init(self.type_text(n.get("type", {})), n)
        return self.expr(n)

    def zero_init(self, ttext, n):
        """The zero initializer of a member clang left out (`Frag f = {}`): 0 for a scalar,
        `{}` for a struct (the compiler zeroes what a list leaves out), and for an array
        one zero initializer per element (nested lists are read one after another)."""
        m = re.search(r"\[(\d+)\]", ttext)
        if m:
            inner = ttext[:m.start()] + ttext[m.end():]
            count = int(m.group(1))
            if count > 65536:
                raise self.unsupported(n, "an initializer list this much shorter than its "
                                          "array", "write the zeros out, or set it in a loop")
            return c_ast.InitList([self.zero_init(inner, n) for _ in range(count)],
                                  self.coord(n))
        if self.record_name(ttext) is not None or _norm(ttext) in VECTOR_NAMES:
            return c_ast.InitList([], self.coord(n))
        return c_ast.Constant("int", "0", self.coord(n))

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
            if rid is not None and (self._is_empty(rid) or self._in_class_inits(rid)):
                return self.default_value(rid, n)
            return None
        raise self.unsupported(n, f"this constructor of '{ttext}'")

    def derived_to_base(self, n):
        """A derived object (or pointer) as its base (clang's DerivedToBase cast, along its
        `path`): its member `__base<i>`, or that member's address."""
        src = n["inner"][0]
        coord = self.coord(n)
        is_ptr = self.type_text(n["type"]).rstrip().endswith("*")
        if src.get("kind") == "CXXThisExpr":
            obj = c_ast.ID("this", coord)
            if self._this_ptr:
                obj = c_ast.UnaryOp("*", obj, coord)
        else:
            obj = self.expr(src)
            if is_ptr:
                obj = c_ast.UnaryOp("*", obj, coord)
        rec = self.record_name(re.sub(r"[*&]|\b(const|volatile)\b", " ",
                                      self.type_text(src["type"])).strip())
        for step in n.get("path") or []:
            node = next((r for q, r in self.records.values() if q == rec), None)
            bases = [self.record_name(self.type_text(b.get("type", {})))
                     for b in (node or {}).get("bases") or []]
            want = self.record_name(step.get("name", ""))
            if want not in bases:
                raise self.unsupported(n, f"this conversion to a base class ('{rec}' to "
                                          f"'{step.get('name')}')")
            wid = next(k for k, (q, _) in self.records.items() if q == want)
            if self._is_empty(wid) and not self.records[wid][1].get("bases"):
                # an empty base (methods only): a fresh object of it, nothing to share
                value = self.default_value(wid, n)
                return c_ast.UnaryOp("&", value, coord) if is_ptr else value
            obj = c_ast.StructRef(obj, ".", c_ast.ID(f"__base{bases.index(want)}", coord),
                                  coord)
            rec = want
        return c_ast.UnaryOp("&", obj, coord) if is_ptr else obj

    def _field_initializer(self, n):
        """The in-class initializer of the field a CXXDefaultInitExpr `n` stands for."""
        fid = (n.get("field") or {}).get("id")
        for _, rec in self.records.values():
            for f in rec.get("inner", []):
                if f.get("kind") == "FieldDecl" and f.get("id") == fid and f.get("inner"):
                    return f["inner"][0]
        return None

    def _in_class_inits(self, rid) -> list:
        """(field name, initializer node) of record `rid`'s default member initializers."""
        return [(f.get("name"), f["inner"][0]) for f in self.records[rid][1].get("inner", [])
                if f.get("kind") == "FieldDecl" and f.get("hasInClassInitializer")
                and f.get("inner")]

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
            inits = dict(self._in_class_inits(rid))
            fields = [(f.get("name"), self.type_text(f["type"])) for f in rec.get("inner", [])
                      if f.get("kind") == "FieldDecl"]
            fields = fields if fields or not self._is_empty(rid) else [("__empty", "char")]
            items = [c_ast.Decl("this", [], [], [], [], c_ast.TypeDecl(
                "this", [], None, c_ast.Struct(qual, None)), None, None)]
            for f, ftext in fields:
                if f in inits:          # `int n = 4;` in the struct
                    value = self.init_expr(inits[f], rec)
                elif re.search(r"\[\d*\]\s*$", ftext) or self.record_name(ftext) is not None \
                        or _norm(ftext) in VECTOR_NAMES:
                    value = c_ast.InitList([])      # an array or struct member: zeroes
                else:
                    value = c_ast.Constant("int", "0")
                items.append(c_ast.Assignment("=", c_ast.StructRef(c_ast.ID("this"), ".",
                                                                   c_ast.ID(f)), value))
            items.append(c_ast.Return(c_ast.ID("this")))
            decl = c_ast.Decl(name, [], [], [], [DEVICE_MARK], c_ast.FuncDecl(None, c_ast.TypeDecl(
                name, [], None, c_ast.Struct(qual, None))), None, None)
            self._late.append(c_ast.FuncDef(decl, None, c_ast.Compound(items)))
        return c_ast.FuncCall(c_ast.ID(name, self.coord(n)), None, self.coord(n))

    def expr(self, n):
        if not n:
            return None
        k = n.get("kind")
        coord = self.coord(n)
        inner = n.get("inner", [])
        if k in ("ImplicitCastExpr", "CStyleCastExpr", "CXXStaticCastExpr") and \
                n.get("castKind") in ("DerivedToBase", "UncheckedDerivedToBase"):
            return self.derived_to_base(n)
        if k == "ConstantExpr" and isinstance(n.get("value"), str) and inner:
            # a constant clang evaluated (an `if constexpr` condition, a case label, a
            # template argument): its value, as the GPU build has it, whatever the
            # expression names (`std::is_same_v<T, float>`, a constexpr function's result)
            t = _norm(self.type_text(n.get("type", {})))
            if t == "bool" and n["value"] in ("true", "false"):
                return c_ast.ID(n["value"], coord)
            if t in _ARITHMETIC_TYPES and t not in ("float", "double") and \
                    re.fullmatch(r"-?\d+", n["value"]):
                return self.integer_literal({"kind": "IntegerLiteral", "type": n["type"],
                                             "value": n["value"], "range": n.get("range"),
                                             "loc": n.get("loc")})
        if k in _TRANSPARENT or (k == "ImplicitCastExpr"):
            return self.expr(inner[0])
        if k == "IntegerLiteral":
            return self.integer_literal(n)
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
                node = c_ast.ID(ref["name"], coord)
                etype = re.sub(r"^enum\s+", "", ref.get("type", {}).get("qualType", ""))
                under = self._enum_types.get(etype.split("::")[-1], "int")
                if under != "int":      # an enumerator has its enumeration's integer type
                    tn = self.type_node(under, None, n)
                    node = c_ast.Cast(c_ast.Typename(None, [], None, tn), node, coord)
                return node
            if ref.get("id") in self._range_arrays:    # a range-based for's __range1
                return self.expr(self._range_arrays[ref["id"]])
            if rk == "BindingDecl":
                if ref.get("id") not in self._bindings:
                    raise self.unsupported(n, f"this structured binding ('{ref.get('name')}')",
                                           "declare a variable of the struct and use its "
                                           "members")
                return self.expr(self._bindings[ref["id"]])
            if rk == "DecompositionDecl":
                node = c_ast.ID(self._decomp.get(ref.get("id"), "__bindings"), coord)
                return c_ast.UnaryOp("*", node, coord) if ref.get("id") in self.ref_vars \
                    else node
            if rk == "NonTypeTemplateParmDecl":
                raise self.unsupported(n, "this template parameter")
            trait = self._std_constants().get(ref.get("id"))
            if trait is not None:       # `std::is_same<T, U>::value`: a literal
                return self.expr(trait)
            node = c_ast.ID(self._static_names.get(ref.get("id"), ref.get("name")), coord)
            if ref.get("id") in self.ref_vars:
                return c_ast.UnaryOp("*", node, coord)
            return node
        if k == "SubstNonTypeTemplateParmExpr":
            # the argument as the parameter's type (`template <unsigned char C>` with
            # C = 200: clang converts an int literal; sizeof(C) is 1)
            arg = inner[-1]
            e = self.expr(arg)
            if arg.get("kind") != "IntegerLiteral" and _norm(self.type_text(n["type"])) in \
                    _ARITHMETIC_TYPES:
                tn = self.type_node(self.type_text(n["type"]), None, n)
                e = c_ast.Cast(c_ast.Typename(None, [], None, tn), e, coord)
            return e
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
            if n.get("valueCategory") == "lvalue" and n.get("castKind") == "LValueBitCast":
                # reinterpret_cast<const int &>(f), (int &)f: f's bytes read as an int
                ptr = self.type_node(self.type_text(n["type"]) + " *", None, n)
                return c_ast.UnaryOp("*", c_ast.Cast(
                    c_ast.Typename(None, [], None, ptr),
                    c_ast.UnaryOp("&", self.expr(sub), coord), coord), coord)
            if n.get("valueCategory") == "lvalue" and n.get("castKind") == "NoOp":
                # const_cast<T &>(r), static_cast<const T &>(x): the same object
                return self.expr(sub)
            if n.get("castKind") in ("NoOp", "ConstructorConversion", "UserDefinedConversion") \
                    and k != "CStyleCastExpr" and not (
                        # static_cast<float>(i), float(i): clang keeps the conversion in an
                        # ImplicitCastExpr marked part of this cast, which expr() would drop
                        sub.get("kind") == "ImplicitCastExpr"
                        and sub.get("isPartOfExplicitCast")
                        and sub.get("castKind") in _ARITHMETIC_CASTS):
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
            if op == "*" and inner[0].get("kind") == "CXXThisExpr" and not self._this_ptr:
                # was "cannot dereference a value of type C": the method's object is a value
                raise self.unsupported(n, "'*this' (a method gets its object by value, not "
                                          "a pointer)", "name the field itself: n, not "
                                                        "(*this).n; return a new object "
                                                        "instead of assigning *this")
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
                arrow = "->" if self._this_ptr else "."
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
            if name in ("alignof", "__alignof", "_Alignof"):
                name = "_Alignof"               # the compiler's layout answers both
            elif name != "sizeof":
                raise self.unsupported(n, f"'{name}'")
            if "argType" in n:
                tn = self.type_node(self.type_text(n["argType"]), None, n)
                return c_ast.UnaryOp(name, c_ast.Typename(None, [], None, tn), coord)
            if name == "sizeof" and inner[0].get("type"):
                # sizeof(expression) is the size of the type clang gives the expression,
                # which is never evaluated: sizeof('a') is 1, sizeof(c ? ch : ch) 1, and
                # sizeof(f<3>(x)) needs no body of f<3>
                try:
                    tn = self.type_node(self.type_text(inner[0]["type"]), None, n)
                except UnsupportedFeatureError:
                    tn = None
                if tn is not None:
                    return c_ast.UnaryOp(name, c_ast.Typename(None, [], None, tn), coord)
            return c_ast.UnaryOp(name, self.expr(inner[0]), coord)
        if k == "InitListExpr":
            init = self.init_expr(n, n)
            ttext = self.type_text(n.get("type", {}))
            if self.record_name(ttext) is not None or _norm(ttext) in VECTOR_NAMES:
                # `return {lo, hi};`, `T{x, y}`, `f({1, 2})`: a value of the struct
                tn = self.type_node(ttext, None, n)
                return c_ast.CompoundLiteral(c_ast.Typename(None, [], None, tn), init, coord)
            return init
        if k == "CXXDefaultInitExpr":
            # a default member initializer (`int n = 4;`) where a constructor or a brace
            # list does not give the member a value
            if inner:
                return self.init_expr(inner[0], n)
            field = self._field_initializer(n)
            if field is None:
                raise self.unsupported(n, "this default member initializer",
                                       "give the member its value in the constructor")
            return self.init_expr(field, n)
        if k == "CXXDefaultArgExpr":
            raise self.unsupported(n, "this default argument")
        if k == "ImplicitValueInitExpr":
            return c_ast.Constant("int", "0", coord)
        if k == "LambdaExpr":
            raise self.unsupported(n, "a lambda used other than 'auto f = [...](...) "
                                      "{...};' and called by that name",
                                   "call it where it is declared, or write a __device__ "
                                   "function")
        if k in ("CXXNewExpr", "CXXDeleteExpr"):
            raise self.unsupported(n, "C++ new and delete",
                                   "allocate memory on the host and pass a pointer")
        if k == "RecoveryExpr":
            raise self.unsupported(n, "this expression")
        raise self.unsupported(n, f"the C++ construct '{k}'")

    def integer_literal(self, n):
        """An IntegerLiteral as a C constant of its C++ type. A template argument clang
        substituted (`f<-3>`, `template <unsigned char C>`, `template <size_t N>`) is an
        IntegerLiteral of the parameter's type and may be negative: it becomes
        ``(T)-(3)``, so the value and the type are the argument's, not C's reading of
        the digits."""
        coord = self.coord(n)
        t = _norm(n["type"].get("desugaredQualType") or n["type"].get("qualType", "int"))
        t = {"unsignedint": "unsigned int", "unsignedlong": "unsigned long",
             "longlong": "long long", "unsignedlonglong": "unsigned long long"}.get(t, t)
        suffix = {"unsigned int": "u", "long": "l", "unsigned long": "ul",
                  "long long": "ll", "unsigned long long": "ull"}.get(t, "")
        value = n["value"]
        negative = value.startswith("-")
        node = c_ast.Constant("int", value.lstrip("-") + suffix, coord)
        if negative:
            node = c_ast.UnaryOp("-", node, coord)
        if negative or t not in ("int", "unsigned int", "long", "unsigned long", "long long",
                                 "unsigned long long"):
            tn = self.type_node(self.type_text(n["type"]), None, n)
            node = c_ast.Cast(c_ast.Typename(None, [], None, tn), node, coord)
        return node

    def builtin_name(self, ref) -> str:
        """The emulator's built-in for the prelude declaration clang chose: its name, or for
        the float overload of a <cmath> name (``float sqrt(float)``, which CUDA declares for
        device code) the float function (``sqrtf``)."""
        name = ref["name"]
        if name in CMATH_FLOAT and \
                ref.get("type", {}).get("qualType", "").startswith("float ("):
            return CMATH_FLOAT[name]
        return name

    def builtin_arg(self, a):
        """An argument of a built-in, converted as clang converted it to the parameter of
        the overload it chose (``min(int, unsigned)`` compares as unsigned, ``umin(x, y)``
        of floats takes unsigneds, ``llabs(f)`` a long long): the emulator's built-ins
        take their arguments by name, not by overload."""
        e = self.expr(a)
        if a.get("kind") == "ImplicitCastExpr" and a.get("castKind") in _ARITHMETIC_CASTS:
            tn = self.type_node(self.type_text(a["type"]), None, a)
            e = c_ast.Cast(c_ast.Typename(None, [], None, tn), e, self.coord(a))
        return e

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
                e = c_ast.UnaryOp("&", e, self.coord(a))
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
            return c_ast.FuncCall(c_ast.ID(self.builtin_name(ref), coord),
                                  c_ast.ExprList([self.builtin_arg(a) for a in args], coord)
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
        obj = self._object_arg(mid, member["inner"][0], member.get("isArrow"),
                               self.coord(member))
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
        if fid in self._lambda_methods or (ref.get("name") == "operator()" and
                                            "(lambda at" in str(inner[1].get("type"))):
            if fid not in self._lambda_methods:
                obj = inner[1]
                while obj.get("kind") in _TRANSPARENT + ("ImplicitCastExpr",):
                    obj = obj["inner"][0]
                if obj.get("kind") == "LambdaExpr":
                    self.lambda_function(obj)
            return self.lambda_call(fid, inner[1], inner[2:], n)
        if fid in self._method_of:
            return self._method_call(fid, self._object_arg(fid, inner[1], False,
                                                           self.coord(n)), inner[2:], n)
        coord = self.coord(n)
        name = self.functions.get(fid)
        if name is None:
            raise self.unsupported(n, f"the operator '{ref.get('name')}'")
        call = c_ast.FuncCall(c_ast.ID(name, coord), c_ast.ExprList(
            self.call_args(self.fnodes.get(fid), inner[1:]), coord), coord)
        if fid in self.ref_returns:
            return c_ast.UnaryOp("*", call, coord)
        return call
