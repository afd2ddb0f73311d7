"""The CUDA C++ front end: source -> pycparser `c_ast` for the emulator's compiler, the
PyCUDA backend's argument checks and the grader's source checks (docs/frontend.md).

Stages: preprocess.py (our preprocessor: macros, -D, no file ever opened) -> clang.py
(clang from the ziglang wheel: a typed JSON AST, templates instantiated) -> lower.py
(that AST lowered to C as pycparser's c_ast). program.py holds the entry points.
"""

from .program import (Param, TranslationUnit, mangled_names,  # noqa: F401
                    parse)
from .preprocess import Preprocessed, preprocess  # noqa: F401
