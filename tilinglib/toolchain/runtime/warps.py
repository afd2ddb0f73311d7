"""The threads of one batch of blocks: who is who, and the warp-wide operations.

Input: the launch's block and grid, and the linear ids of the blocks in the batch. Output:
`Warps`, one entry per thread of the batch for every index a kernel can ask for (threadIdx,
blockIdx, the linear thread id in its block, the warp and lane of each thread), the warp rows
the counters sum over, (blockIdx, threadIdx) of a lane for error messages, and the warp
collectives that need nothing but these indices and the active mask: `__shfl_*_sync` and
`__ballot_sync` / `__any_sync` / `__all_sync`, and the exchange and membership check of a
cooperative-groups tile of several warps (`tile_shuffle_xor`, `tile_missing`).

A `Warps` never changes after it is made and holds no per-launch state; the active mask is
passed in by the caller (execute.Context owns it).
"""

from __future__ import annotations

import numpy as np

from ..model.memory import distinct_per_row
from ...gpu import WARP_SIZE, ceil_div


class Warps:
    """The thread and warp indices of one batch of `len(block_ids)` whole blocks.

    Every array has one entry per thread of the batch (`T` of them), threads of a block
    consecutive, in linear thread-id order (x fastest). `tid` and `bid` are threadIdx and
    blockIdx as 3-tuples of uint32 arrays; `tib` the linear thread id in its block, `blk`
    the block's position in the batch, `warp` the warp's number in the batch (32
    consecutive linear thread ids of one block, the last warp of a block partial when the
    block is not a whole number of warps), `lane` the position in the warp (int64 arrays).
    """

    def __init__(self, kernel_name: str, block: tuple, grid: tuple, block_ids: np.ndarray):
        self.kernel_name = kernel_name
        bx, by, bz = block
        gx, gy, _ = grid
        self.block = block
        tpb = bx * by * bz
        self.tpb = tpb
        self.nblocks = nb = len(block_ids)
        self.T = T = nb * tpb
        lin = np.arange(T, dtype=np.int64)
        self.tib = tib = lin % tpb                      # linear thread id in its block
        self.blk = blk = lin // tpb                     # block index within the batch
        self.tid = ((tib % bx).astype(np.uint32), ((tib // bx) % by).astype(np.uint32),
                    (tib // (bx * by)).astype(np.uint32))
        b = block_ids[blk]
        self.block_ids = block_ids
        self.bid = ((b % gx).astype(np.uint32), ((b // gx) % gy).astype(np.uint32),
                    (b // (gx * gy)).astype(np.uint32))
        self.bdim = tuple(np.uint32(d) for d in block)
        self.gdim = tuple(np.uint32(d) for d in grid)
        self.warps_per_block = warps_per_block = ceil_div(tpb, WARP_SIZE)
        self.warp = blk * warps_per_block + tib // WARP_SIZE
        self.lane = tib % WARP_SIZE
        self.full_warps = tpb % WARP_SIZE == 0
        self.whole = tpb - tpb % WARP_SIZE                 # lanes of a block in full warps
        self.warp_rows = self.split_warps(self.warp)

    def split_warps(self, v: np.ndarray) -> tuple:
        """`v` (one entry per thread of the batch) as 2-D arrays whose rows are warps: the
        full warps of every block, then (when the block is not a whole number of warps) the
        last, partial, warp of every block. Counts summed over warps need no other order."""
        if self.full_warps:
            return (v.reshape(-1, WARP_SIZE),)
        m = v.reshape(self.nblocks, self.tpb)
        if not self.whole:
            return (m,)
        return (m[:, :self.whole].reshape(-1, WARP_SIZE), m[:, self.whole:])

    def distinct_per_warp(self, key: np.ndarray) -> tuple[int, int]:
        """(warps, distinct (warp, key) pairs) of an access of every lane of the batch;
        `key` is an integer array of `T` entries."""
        requests = distinct = 0
        for rows in self.split_warps(key):
            r, d = distinct_per_row(rows)
            requests, distinct = requests + r, distinct + d
        return requests, distinct

    def coords(self, lane: int) -> tuple[tuple, tuple]:
        """(blockIdx, threadIdx) of a lane of this batch, as 3-tuples of ints."""
        return (tuple(int(c[lane]) for c in self.bid), tuple(int(c[lane]) for c in self.tid))

    def thread_of(self, tib: int) -> tuple:
        """threadIdx (a 3-tuple of ints) of linear thread id `tib` in a block."""
        bx, by, _ = self.block
        return (tib % bx, (tib // bx) % by, tib // (bx * by))

    # ------------------------------------------------------------------ warp collectives
    def shuffle(self, kind, value, arg, width, t, line, mask=None):
        """__shfl_*_sync within each warp (inactive source lanes give their last value).

        kind: "idx", "up", "down" or "xor"; `value` one entry per thread (a scalar is the
        same in every lane and is returned as it is); `arg` the source lane, delta or lane
        mask; `width` a power of two up to 32 (segments of the warp); `mask` the active
        lanes (None: all). A source lane the block's last, partial, warp does not have is a
        `KernelRuntimeError` (its value is undefined on a GPU; the lane after the block's
        last thread is the next block's first)."""
        if self.full_warps and not isinstance(value, np.ndarray):
            return value
        lane = self.lane
        arg = np.asarray(arg).astype(np.int64)
        width = int(width) if not isinstance(width, np.ndarray) else int(width.flat[0])
        seg = lane & ~(width - 1)
        if kind == "idx":
            src = seg + (arg & (width - 1))
        elif kind == "up":
            src = np.where(lane - seg >= arg, lane - arg, lane)
        elif kind == "down":
            src = np.where(lane - seg + arg < width, lane + arg, lane)
        else:
            other = lane ^ arg
            src = np.where((other & ~(width - 1)) == seg, other, lane)
        if not self.full_warps:
            self._no_missing_lane(kind, src, mask, line)
            if not isinstance(value, np.ndarray):
                return value
        index = np.arange(self.T) - lane + src
        index = np.clip(index, 0, self.T - 1)
        return value[index]

    def _no_missing_lane(self, kind, src, mask, line) -> None:
        """Raise KernelRuntimeError if an active lane (`mask`, None: all) shuffles from a
        lane `src` past the end of its block's partial last warp."""
        from ...errors import KernelRuntimeError
        lanes_here = np.minimum(WARP_SIZE, self.tpb - (self.tib - self.lane))
        bad = np.broadcast_to(src, (self.T,)) >= lanes_here
        if mask is not None:
            bad = bad & mask
        if not bad.any():
            return
        i = int(np.argmax(bad))
        block, thread = self.coords(i)
        name = "__shfl_sync" if kind == "idx" else f"__shfl_{kind}_sync"
        n = int(lanes_here[i])
        raise KernelRuntimeError(
            f"{name} at kernel.cu:{line}: thread {thread} of block {block} (lane "
            f"{int(self.lane[i])}) reads lane {int(np.broadcast_to(src, (self.T,))[i])} of "
            f"its warp, which a block of {self.tpb} threads does not have (its last warp has "
            f"{n} lanes): on a GPU that value is undefined. Launch a whole number of warps "
            f"(a multiple of 32 threads per block), or keep the shuffle within the warp's "
            f"first {n} lanes\n  in {self.kernel_name}, by thread {thread} in block {block}",
            kernel=self.kernel_name, line=line, block=block, thread=thread)

    def vote(self, kind, pred, mask):
        """__ballot_sync ("ballot": uint32 bits of the active lanes whose `pred` holds),
        __any_sync ("any") or __all_sync (otherwise) over the active lanes (`mask`, one
        bool per thread) of each warp; int32 0/1 for any/all."""
        pred = np.broadcast_to(np.asarray(pred, dtype=bool), (self.T,)) & mask
        wid = self.warp - self.warp[0]
        if kind == "ballot":
            bits = np.where(pred, np.left_shift(np.int64(1), self.lane), 0)
            sums = np.bincount(wid, weights=bits).astype(np.int64)
            return sums[wid].astype(np.uint32)
        if kind == "any":
            s = np.bincount(wid, weights=pred)
            return (s[wid] > 0).astype(np.int32)
        total = np.bincount(wid, weights=mask)
        s = np.bincount(wid, weights=pred)
        return (s[wid] == total[wid]).astype(np.int32)

    # ------------------------------------------------------------------ multi-warp tiles
    def tile_missing(self, threads: int, mask: np.ndarray):
        """A tile of `threads` consecutive linear thread ids (a power of two, a multiple of
        32) must be active as a whole at a collective: None when every tile with an active
        thread is whole in `mask`, else (lane of a missing thread, lane of a present one,
        active count, tile size) for the first tile that is not."""
        tile = self.blk * ceil_div(self.tpb, threads) + self.tib // threads
        active = np.bincount(tile[mask], minlength=int(tile[-1]) + 1)
        size = np.bincount(tile, minlength=int(tile[-1]) + 1)
        partial = (active > 0) & (active < size)
        if not partial.any():
            return None
        t = int(np.argmax(partial))
        missing = int(np.flatnonzero((tile == t) & ~mask)[0])
        here = int(np.flatnonzero((tile == t) & mask)[0])
        return missing, here, int(active[t]), int(size[t])

    def tile_shuffle_xor(self, value, lane_mask, threads: int, mask=None, line=None):
        """The value of the thread whose rank in its tile of `threads` consecutive linear
        thread ids is this thread's rank xor `lane_mask` (< `threads`): the exchange of a
        cooperative-groups tile of several warps. A scalar `value` is returned as it is. A
        partner the block does not have (its last tile partial) is a `KernelRuntimeError`
        for an active lane (`mask`, None: all) at `line`."""
        m = np.asarray(lane_mask).astype(np.int64) & (threads - 1)
        rank = self.tib % threads
        partner = self.tib - rank + (rank ^ m)        # its linear thread id in the block
        bad = partner >= self.tpb                     # a thread the block does not have
        if mask is not None:
            bad = bad & mask
        if bad.any():
            from ...errors import KernelRuntimeError
            i = int(np.argmax(bad))
            block, thread = self.coords(i)
            raise KernelRuntimeError(
                f"cg::reduce at kernel.cu:{line} over a thread_block_tile<{threads}> in a "
                f"block of {self.tpb} threads: the block's last tile has only "
                f"{self.tpb % threads} threads, and thread {thread} exchanges with rank "
                f"{int(np.broadcast_to(rank ^ m, (self.T,))[i])}, which it does not have "
                f"(on a GPU the result is undefined). Launch a multiple of {threads} threads "
                f"per block, or partition into smaller tiles\n  in {self.kernel_name}, by "
                f"thread {thread} in block {block}",
                kernel=self.kernel_name, line=line, block=block, thread=thread)
        if not isinstance(value, np.ndarray):
            return value
        index = np.arange(self.T) - rank + (rank ^ m)
        return value[np.clip(index, 0, self.T - 1)]
