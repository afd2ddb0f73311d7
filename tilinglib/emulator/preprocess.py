"""Moved: the preprocessor is stage 1 of the front end, tilinglib/frontend/preprocess.py.
This name stays so that existing imports keep working."""

from ..frontend.preprocess import *  # noqa: F401,F403
from ..frontend.preprocess import (FloatMode, Preprocessed, check_options,  # noqa: F401
                                   float_mode, parse_options, preprocess, SOURCE_NAME,
                                   PREDEFINED_MACROS, KNOWN_HEADERS, MAX_SOURCE_CHARS,
                                   MAX_MACRO_DEPTH, MAX_EXPANSION_TOKENS,
                                   MAX_PREPROCESS_SECONDS, NO_FILES)
