"""A pytest plugin that shortens pytest's own start (pyproject.toml loads it: ``-p
tilinglib.devtools.pytest_start`` in addopts, so it is imported before the plugins that
packages register, nbval among them).

Why: nbval imports nbformat, nbformat imports jsonschema, and jsonschema registers its
format checkers at import. Where ``rfc3987_syntax`` is installed (jupyterlab brings it, through
jupyter-events and ``jsonschema[format-nongpl]``), that registration imports it, and importing
it builds two Lark parsers of RFC 3987's grammar: 1.4-2 s on a small machine, in every pytest
run, for the "iri" and "iri-reference" formats of JSON Schema draft 7 and later, which nothing
here checks (nbformat's schemas are draft 4, and nbformat validates with fastjsonschema or
jsonschema's Draft4Validator, neither of which uses those formats).

What: until something asks for it, ``rfc3987_syntax`` is a stand-in module whose
``is_valid_syntax`` imports the real package on its first call and then answers as it does;
any other attribute, or an import of one of its submodules, imports the real package first.
So a check of those formats, if one ever runs, gives the real answer; only the grammar's
build moves from pytest's start to that first use. Nothing else is changed, and nothing is
done where the package is not installed or was already imported.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

NAME = "rfc3987_syntax"


def _real() -> types.ModuleType:
    """The real rfc3987_syntax, imported now if the stand-in is still in its place."""
    module = sys.modules.get(NAME)
    if isinstance(module, _StandIn):
        del sys.modules[NAME]
        real = importlib.import_module(NAME)
        module._real = real
        return real
    if module is None:
        return importlib.import_module(NAME)
    return module


class _StandIn(types.ModuleType):
    """rfc3987_syntax until its first real use (see the module's docstring)."""

    _real: types.ModuleType | None = None

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self._real or _real(), name)


def is_valid_syntax(term: str, value: str) -> bool:
    """rfc3987_syntax.is_valid_syntax(term, value), the real package imported on first call."""
    module = sys.modules.get(NAME)
    real = module._real if isinstance(module, _StandIn) and module._real else _real()
    return real.is_valid_syntax(term, value)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        module = _StandIn(NAME)
        return module

    def exec_module(self, module) -> None:
        module.is_valid_syntax = is_valid_syntax


class _Finder(importlib.abc.MetaPathFinder):
    """Answers the first import of rfc3987_syntax with the stand-in, then steps aside."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != NAME:
            return None
        remove()
        real = importlib.util.find_spec(NAME)
        if real is None:                # not installed: the import fails as it would
            return None
        spec = importlib.machinery.ModuleSpec(NAME, _Loader(), origin=real.origin,
                                              is_package=True)
        # Its submodules are found where the real package's are; importing one first
        # imports the parent, which goes through the stand-in's __getattr__ only for
        # attributes, so the submodule import itself is the real one.
        spec.submodule_search_locations = real.submodule_search_locations
        return spec


_FINDER = _Finder()


def install() -> bool:
    """Put the stand-in in the way of the next import of rfc3987_syntax. False (nothing
    done) when the package is already imported."""
    if NAME in sys.modules:
        return False
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    return True


def remove() -> None:
    """Take the finder out of sys.meta_path (the stand-in, if made, stays until first use)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


install()
