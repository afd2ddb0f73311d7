"""Moved: parsing is the front end's, tilinglib/frontend/parse.py (clang, then the
translation of its AST). This name stays so that existing imports keep working."""

from ..frontend.parse import (MAX_NESTING, RECURSION_ROOM, Param, check_nesting,  # noqa: F401
                              is_kernel, kernel_signatures, parse, recursion_room,
                              source_line)
