"""`LaunchReport`: what one emulated launch did, counted the way Nsight Compute counts it.

Counts are per warp (32 consecutive linear thread ids of a block) and per executed access,
at the level of the CUDA C source. Each counter mirrors an Nsight Compute metric, named once
in `metrics.REPORT_METRICS` (field -> metric); besides those, `shared_bank_conflicts` is the
load and store conflicts added, `global_atomic_requests` is `metrics.GLOBAL_ATOMIC_METRICS`
added (ATOM and RED), and `flops` is 2 x `metrics.FFMA_THREAD_INSTRUCTIONS` for an FMA-only
kernel. The `shared_*_instructions` count warp-level instructions (a request each, in
ncu's words for global memory).

`global_load_bytes_requested` is the bytes the threads asked for (lanes x access size), not
bytes moved from DRAM: caches sit in between, and the emulator has none. nvcc may merge
neighbouring shared loads into one wide load (LDS.128) or keep a value in a register; the
emulator counts what the source says, so its shared-load instructions can exceed ncu's; it may
also split a float4 load of which only some components are used (LDS.32/LDS.64 pieces).
Bank conflicts are wavefronts beyond the ideal for the access's width, as ncu counts them:
one wavefront per phase of the warp that has an active lane (a 4-byte access is one phase;
a full warp's STS.64 two, its STS.128 four); the rule is `memory.shared_wavefronts`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class LaunchReport:
    """Counters of one launch of an emulated kernel (see the module docstring for units)."""

    kernel: str
    grid: tuple
    block: tuple
    shared_bytes: int
    threads: int
    warps: int
    flops: int
    global_load_requests: int
    global_load_sectors: int
    global_load_bytes_requested: int
    global_store_requests: int
    global_store_sectors: int
    global_store_bytes: int
    shared_load_instructions: int
    shared_load_wavefronts: int
    shared_store_instructions: int
    shared_store_wavefronts: int
    shared_bank_conflicts: int
    shared_load_bank_conflicts: int
    shared_store_bank_conflicts: int
    barriers: int
    global_atomic_requests: int = 0
    shared_atomic_instructions: int = 0
    hazards: tuple = ()

    @property
    def global_bytes_requested(self) -> int:
        """Bytes of global memory the threads asked for, loads plus stores."""
        return self.global_load_bytes_requested + self.global_store_bytes

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte requested from global memory (not per DRAM byte)."""
        b = self.global_bytes_requested
        return self.flops / b if b else float("inf")

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def _rows(self):
        skip = {"kernel", "hazards"}
        for f in fields(self):
            if f.name in skip:
                continue
            v = getattr(self, f.name)
            yield f.name, (f"{v:,}" if isinstance(v, int) else str(v))
        yield "hazards", (str(len(self.hazards)) if self.hazards else "none")

    def __str__(self) -> str:
        width = max(len(k) for k, _ in self._rows())
        lines = [f"LaunchReport for {self.kernel}"]
        lines += [f"  {k:<{width}}  {v:>16}" for k, v in self._rows()]
        lines += [f"  ! {h}" for h in self.hazards]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td style='text-align:left'>{html.escape(k)}</td>"
                       f"<td style='text-align:right'>{html.escape(v)}</td></tr>"
                       for k, v in self._rows())
        haz = "".join(f"<li>{html.escape(str(h))}</li>" for h in self.hazards)
        haz = f"<ul style='color:#b00'>{haz}</ul>" if haz else ""
        return (f"<b>LaunchReport for {html.escape(self.kernel)}</b>"
                f"<table>{rows}</table>{haz}")
