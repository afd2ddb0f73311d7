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

from . import memory as M


@dataclass(frozen=True)
class WarpAccess:
    """One access instruction of warp 0 of block (0, 0, 0).

    `line`: source line; `kind`: "load" or "store"; `space`: "shared" or "global";
    `array`: the variable or kernel argument; `lanes`: active lane ids; `offsets`: byte
    offset in the array per lane; `words`: 4-byte word per lane (shared: of the block's
    shared memory, so that `banks` = words % 32 are the hardware banks; global: of the
    array); `banks`: bank per lane (shared) or () for global; `wavefronts`: shared
    wavefronts this access needed (1 = conflict-free), 0 for global; `sectors`: distinct
    32-byte sectors (global), 0 for shared.
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

    @property
    def conflict_ways(self) -> int:
        """The largest number of distinct words any one bank had to serve (shared only)."""
        return self.wavefronts


class Tracer:
    """Collects `WarpAccess` records during one launch."""

    def __init__(self):
        self.records: list = []
        self._seen: set = set()

    def record(self, ctx, space, is_store, lanes, a, off, size, line) -> None:
        if int(ctx.block_ids[0]) != 0:
            return
        width = min(M.WARP, ctx.tpb)
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
            var = ctx._shared_var(int(off_w[0]))
            name = var.name if var is not None else "shared"
            start = (ctx.launch.dynamic_offset if var is not None and var.dynamic
                     else (var.offset if var is not None else 0))
            rel = off_w - start
            words = off_w >> 2
            banks = words % M.BANKS
            group = np.zeros(words.shape[0], dtype=np.int64)
            wavefronts = M._wavefronts(group, words.astype(np.int64), 0)
            sectors = 0
        else:
            alloc = ctx.gmem.lookup(int(a_w[0]) >> M.REGION_SHIFT)
            name = alloc.name if alloc is not None else "global"
            rel = off_w
            words = off_w >> 2
            banks = np.zeros(0, dtype=np.int64)
            wavefronts = 0
            sectors = int(np.unique(a_w >> 5).shape[0])
        kind = "store" if is_store else "load"
        key = (line, kind, name)
        if key in self._seen:
            return
        self._seen.add(key)
        self.records.append(WarpAccess(
            line=int(line or 0), kind=kind, space=space, array=name,
            lanes=tuple(int(x) for x in lane_ids), offsets=tuple(int(x) for x in rel),
            words=tuple(int(x) for x in words), banks=tuple(int(x) for x in banks),
            wavefronts=int(wavefronts), sectors=sectors))
