"""Kernel templates in the grader: ``template <int TILE> __global__ void sgemm(...)``.

nvcc compiles a kernel template only where it is instantiated, and PyCUDA finds the
instantiation under its C++ name (``no_extern_c=True``, ``get_function("sgemm<16>")``, the
mangled name underneath). The grader grades a template as its instantiation at the
assignment's parameters, as the student's own ``sgemm<TILE><<<grid, block>>>`` would run it:

- each integer template parameter named like one of the assignment's macros (``TILE``,
  ``COARSE``) is that parameter; the others take, in order, the macros the source does not
  define itself, then those it defines (so ``template <int T>`` is TILE in a1, and in a4
  where COARSE is ``#define``-d); a type parameter is ``float``, the assignment's element type;
- the values are those of the source's own instantiation (``template __global__ void
  sgemm<16>(...);``, or a launch in host code) when there is exactly one, or the one whose
  values are the source's macros when there are several; with none, the source's macro of
  that name (``#define TILE 16`` beside ``template <int T>``), else the assignment's value
  (`instantiate`'s `defaults`: TILE 16 in a1 and a2, the notebook's default, and 32 in a4,
  which fixes it); the grader then appends the explicit instantiation to the source.

A template the rule cannot instantiate (several instantiations and nothing to choose one, a
parameter of no known role, no value for COARSE) gets a message that says what to write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..errors import CompileError

__all__ = ["Instance", "instantiate", "macro_clash_hint"]

SIGNATURE_TYPES = "(int, int, int, const float*, const float*, float*)"


@dataclass(frozen=True)
class Instance:
    """A kernel template's instantiation the grader grades: `source` (the student's, with
    the explicit instantiation the grader appended, if it appended one), `kernel` (its name
    as get_function takes it, e.g. ``'sgemm<16>'``), `function` (the emulator's Function),
    `values` ({macro name: int}, e.g. ``{"TILE": 16}``) and `note` (what the grader did, in
    words, for the report)."""

    source: str
    kernel: str
    function: object
    values: dict = field(default_factory=dict)
    note: str = ""


def _template_of(program, kernel: str) -> str | None:
    """The kernel template `kernel` names in `program` (its qualified name), or None."""
    for t in getattr(program, "template_kernels", ()):
        if t == kernel or t.split("::")[-1] == kernel:
            return t
    return None


def _instances(program, template: str) -> list[list[str]]:
    """The template arguments of each instantiation of `template` in `program`."""
    out = []
    for name in program.kernels:
        m = re.fullmatch(re.escape(template) + r"\s*<(.*)>", name) or \
            re.fullmatch(re.escape(template.split("::")[-1]) + r"\s*<(.*)>", name)
        if m:
            out.append([a.strip() for a in m.group(1).split(",")])
    return out


def _as_int(text: str) -> int | None:
    m = re.fullmatch(r"\(?\s*(-?\d+)\s*[uUlL]*\s*\)?", text)
    return int(m.group(1)) if m else None


def instantiate(source: str, options: Sequence[str], module, kernel: str,
                roles: Sequence[str], defaults: Mapping[str, int],
                macro_value: Callable[[str], int | None]) -> Instance | str | None:
    """The instantiation of kernel template `kernel` (in the emulator's `module`, compiled
    from `source` with `options`) to grade, by the rule of this module's docstring.

    `roles`: the assignment's macro names in order (``("TILE",)``, ``("TILE", "COARSE")``);
    `defaults`: {role: the assignment's value} for the roles it has one for;
    `macro_value(name)`: the int value of macro `name` in the source, None if undefined.
    Returns None when `kernel` is no template of `module` (the caller's own "not found"
    stands), a str (the reason, saying what to change) when it cannot be instantiated,
    else an `Instance`."""
    from ..toolchain.backends.emulator import SourceModule

    program = module._program
    template = _template_of(program, kernel)
    if template is None:
        return None
    params = list(getattr(program, "template_params", {}).get(template, ()))
    written = f"template <{', '.join(('typename ' if k == 'type' else 'int ') + n for k, n in params)}>"
    if not params or any(k == "other" for k, _ in params):
        return (f"'{kernel}' is a kernel template ({written}) with a parameter that is neither "
                f"an integer nor a type: the grader instantiates the tile parameters only. "
                f"Write template <int TILE> (or #define TILE 16) and nothing else as a "
                f"template parameter.")
    macros = {r: macro_value(r) for r in roles}
    role_of: dict[int, str] = {}
    for i, (k, name) in enumerate(params):
        if k == "int" and name in roles:
            role_of[i] = name
    free_roles = [r for r in roles if r not in role_of.values() and macros[r] is None] + \
        [r for r in roles if r not in role_of.values() and macros[r] is not None]
    free_params = [i for i, (k, _) in enumerate(params) if k == "int" and i not in role_of]
    if len(free_params) > len(free_roles):
        names = ", ".join(params[i][1] or "(unnamed)" for i in free_params)
        return (f"'{kernel}' is a kernel template ({written}) whose parameter(s) {names} the "
                f"grader cannot match to the assignment's {', '.join(roles)}: name the "
                f"template parameter after what it is (template <int "
                f"{(free_roles or list(roles))[0]}>), or #define the others.")
    for i, r in zip(free_params, free_roles):
        role_of[i] = r

    def wanted(args) -> bool:       # an instantiation whose values are the source's macros
        return all(macros[role_of[i]] is None or _as_int(args[i]) == macros[role_of[i]]
                   for i in role_of if i < len(args))

    found = [a for a in _instances(program, template) if len(a) == len(params)]
    shown = ", ".join(f"{kernel}<{', '.join(a)}>" for a in found)
    if len(found) > 1:
        found = [a for a in found if wanted(a)]
        if len(found) != 1:
            return (f"the source instantiates the kernel template '{kernel}' several times "
                    f"({shown}): the grader grades one kernel. Keep only the instantiation "
                    f"to grade (template __global__ void {kernel}<...>{SIGNATURE_TYPES};).")
    appended = ""
    if found:
        args = found[0]
        how = "the source's own instantiation"
    else:
        args = []
        for i, (k, name) in enumerate(params):
            if k == "type":
                args.append("float")
                continue
            role = role_of[i]
            value = macros[role] if macros[role] is not None else defaults.get(role)
            if value is None:
                example = ", ".join("float" if k == "type" else str(defaults.get(role_of[j], 4))
                                    for j, (k, _) in enumerate(params))
                return (f"'{kernel}' is a kernel template ({written}) and nothing gives its "
                        f"parameter {name}{'' if name == role else f' ({role})'} a value: "
                        f"instantiate it after the "
                        f"kernel, e.g. template __global__ void {kernel}<{example}>"
                        f"{SIGNATURE_TYPES}; (or #define {role}).")
            args.append(str(value))
        how = None
        appended = (f"\ntemplate __global__ void {template}<{', '.join(args)}>"
                    f"{SIGNATURE_TYPES};\n")
    name = f"{template}<{', '.join(args)}>"
    graded = source + appended
    try:
        f = (SourceModule(graded, options=list(options)) if appended else module) \
            .get_function(name)
    except CompileError as exc:
        return (f"'{kernel}' is a kernel template; the grader instantiated it as nvcc would "
                f"({appended.strip()}) and that does not compile: {exc}. The assignment's "
                f"kernel is {kernel}{SIGNATURE_TYPES.replace('(int, int, int', '(int M, int N, int K')}.")
    except LookupError as exc:
        return f"'{kernel}' is a kernel template; its instantiation {name}: {exc}"
    values = {role_of[i]: _as_int(args[i]) for i in role_of}
    if any(v is None for v in values.values()):
        return (f"'{kernel}<{', '.join(args)}>': the grader could not read the template "
                f"arguments as numbers; instantiate it with integer literals, e.g. "
                f"template __global__ void {kernel}<16>{SIGNATURE_TYPES};")
    values.update({r: v for r, v in macros.items() if v is not None and r not in values})
    if how is None:         # where each value came from
        given = ", ".join(f"{r} = {values[r]}, from " + (
            "the source's macro" if macros[r] is not None else "the assignment's value")
            for r in roles if r in values)
    else:
        given = ", ".join(f"{r} = {values[r]}" for r in roles if r in values) + f", from {how}"
    note = (f"'{kernel}' is a kernel template ({written}): graded as {name} ({given}). On a GPU, nvcc compiles a template only where it is instantiated and "
            f"PyCUDA finds it with SourceModule(..., no_extern_c=True).get_function('{name}').")
    return Instance(graded, name, f, values, note)


_TEMPLATE_PARAM = re.compile(r"template\s*<[^<>]*\b(?:int|unsigned|size_t|long|short)\s+(\w+)")


def macro_clash_hint(source: str, options: Sequence[str], roles: Sequence[str]) -> str:
    """A sentence for a compile error of `source` where a template parameter has the name of
    one of `roles` that is also a macro (``template <int TILE>`` with ``-DTILE=16`` or
    ``#define TILE``): the preprocessor puts the number in the parameter's place, so nvcc
    fails too. "" when there is no such clash."""
    params = set(_TEMPLATE_PARAM.findall(source))
    for role in roles:
        if role not in params:
            continue
        in_options = any(re.match(rf"-D\s*{role}(=|$)", str(o)) for o in options)
        in_source = re.search(rf"^\s*#\s*define\s+{role}\b", source, re.M)
        if in_options or in_source:
            where = f"-D{role}=... in the options" if in_options else f"#define {role}"
            return (f"\n{role} is both a template parameter (template <int {role}>) and a macro "
                    f"({where}): the preprocessor writes the macro's number where the "
                    f"parameter's name was, so nvcc refuses it too. Keep one: drop the macro "
                    f"(the grader instantiates the template at the assignment's {role}), or "
                    f"name the parameter otherwise (template <int T>) and instantiate the "
                    f"kernel at <{role}>.")
    return ""
