"""CUDA C on the CPU: PyCUDA's SourceModule surface, executed by a lockstep SIMT emulator.

```python
from tilinglib.emulator import SourceModule, In, Out
mod = SourceModule(open("sgemm_tiled.cu").read(), options=["-DTILE=16"])
f = mod.get_function("sgemmTiled")
f(np.int32(N), In(A), In(B), Out(C), block=(16, 16, 1), grid=(N // 16, N // 16))
print(f.last_report)          # requests, sectors, wavefronts, bank conflicts, hazards
```

The pipeline, one folder per stage of `tilinglib.toolchain`: frontend (our preprocessor,
clang, its AST lowered to pycparser's c_ast) -> codegen (AST -> closures) -> runtime
(blocks in batches, lockstep threads), over model (C types, values, memory), with
measure (races, diagnostics, trace, report) beside it. `docs/emulator.md` lists the CUDA C it supports
and how it differs from a GPU.
"""

from ..runtime.module import Function, In, InOut, Out, SourceModule, memcpy_dtoh, memcpy_htod
from ..runtime.execute import LaunchOptions, RaceWarning
from ..measure.report import LaunchReport
from ..measure.races import Hazard
from ..measure.trace import WarpAccess
from ..runtime.race_search import RaceFailure, find_race_failure

__all__ = ["SourceModule", "Function", "In", "Out", "InOut", "memcpy_htod", "memcpy_dtoh",
           "LaunchReport", "LaunchOptions",
           "RaceWarning", "Hazard", "WarpAccess", "find_race_failure", "RaceFailure"]
