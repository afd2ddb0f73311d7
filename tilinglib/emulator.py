"""The CPU emulator by its public name: ``from tilinglib.emulator import SourceModule, In, Out``
runs CUDA C on this machine's CPU whatever the backend, with the launch report
(`Function.last_report`) a GPU does not give. The code lives in `tilinglib.toolchain`;
this module is `tilinglib.toolchain.backends.emulator`'s public surface.
"""

from .toolchain.backends.emulator import *  # noqa: F401,F403
from .toolchain.backends.emulator import __all__  # noqa: F401
