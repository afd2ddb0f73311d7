"""Per-warp access traces: what one warp's lanes touched, for pictures of banks and sectors.

Input: the accesses of a launch as execute.py counts them. Output: `WarpAccess` records for
warp 0 of block (0, 0, 0), one for the first execution of each (source line, load/store,
array): which lanes were active, which byte of the array each lane touched, and, for shared
memory, the 4-byte word and bank of each lane (bank = word % 32) and the wavefronts the
warp needed; for global memory the 32-byte sectors. Asked for with ``f(..., trace=True)``;
read back as ``f.last_trace``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import memory as M
from ...gpu import BANKS, SECTOR_SHIFT, WARP_SIZE


@dataclass(frozen=True)
class WarpAccess:
    """One access instruction of warp 0 of block (0, 0, 0).

    `line`: source line; `kind`: "load" or "store"; `space`: "shared" or "global";
    `array`: the variable or kernel argument; `lanes`: active lane ids; `offsets`: byte
    offset in the array per lane; `words`: the (first) 4-byte word per lane (shared: of the
    block's shared memory, so that `banks` = words % 32 are the hardware banks; global: of
    the array); `banks`: bank per lane (shared) or () for global; `wavefronts`: shared
    wavefronts this access needed, 0 for global; `sectors`: distinct 32-byte sectors
    (global), 0 for shared; `size`: bytes per lane (a float4 access is 16 and covers
    words[i] .. words[i] + 3); `ideal_wavefronts`: the wavefronts it would need without
    bank conflicts (1 for 4 bytes; a full warp's conflict-free float2 load 2, float4 load
    4, fewer when lane pairs share an address). Both by `memory.shared_wavefronts`, the
    rule of the LaunchReport's counters.
    """

    line: int
    kind: str
    space: str
    array: str
    lanes: tuple
    offsets: tuple
    words: tuple
    banks: tuple
    wavefronts: int
    sectors: int
    size: int = 4
    ideal_wavefronts: int = 1

    @property
    def bank_conflicts(self) -> int:
        """Wavefronts beyond the ideal (ncu's l1tex__data_bank_conflicts_...), shared only."""
        return self.wavefronts - self.ideal_wavefronts if self.space == "shared" else 0


class Tracer:
    """Collects `WarpAccess` records during one launch."""

    def __init__(self):
        self.records: list = []
        self._seen: set = set()

    def record(self, mem, space, is_store, lanes, a, off, size, line) -> None:
        """Record the first warp of block 0's part of one access, once per (line, kind,
        array). `mem`: the batch's `access.MemoryAccess`; `lanes` the active lanes (None:
        all), `a` their addresses, `off` their byte offsets in the space, `size` bytes."""
        if int(mem.warps.block_ids[0]) != 0:
            return
        width = min(WARP_SIZE, mem.warps.tpb)
        if lanes is None:
            sel = np.arange(min(width, a.shape[0]))
            lane_ids = sel
        else:
            sel = np.flatnonzero(lanes < width)
            lane_ids = lanes[sel]
        if sel.shape[0] == 0:
            return
        a_w, off_w = a[sel], off[sel]
        if space == "shared":
            var = mem.shared_var(int(off_w[0]))
            name = var.name if var is not None else "shared"
            start = (mem.dynamic_offset if var is not None and var.dynamic
                     else (var.offset if var is not None else 0))
            rel = off_w - start
            words = off_w >> 2
            banks = words % BANKS
            wavefronts, ideal = M.shared_wavefronts(
                np.zeros(words.shape[0], dtype=np.int64), lane_ids.astype(np.int64),
                off_w.astype(np.int64), size, is_store, False)
            sectors = 0
        else:
            alloc = mem.gmem.lookup(int(a_w[0]) >> M.REGION_SHIFT)
            name = alloc.name if alloc is not None else "global"
            rel = off_w
            words = off_w >> 2
            banks = np.zeros(0, dtype=np.int64)
            wavefronts = ideal = 0
            sectors = int(np.unique(a_w >> SECTOR_SHIFT).shape[0])
        kind = "store" if is_store else "load"
        key = (line, kind, name)
        if key in self._seen:
            return
        self._seen.add(key)
        self.records.append(WarpAccess(
            line=int(line or 0), kind=kind, space=space, array=name,
            lanes=tuple(int(x) for x in lane_ids), offsets=tuple(int(x) for x in rel),
            words=tuple(int(x) for x in words), banks=tuple(int(x) for x in banks),
            wavefronts=int(wavefronts), sectors=sectors, size=int(size),
            ideal_wavefronts=int(ideal)))
