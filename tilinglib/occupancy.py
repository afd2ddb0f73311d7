"""Occupancy: how many blocks of a kernel fit on one SM at once, and which resource decides.

Introduced in lesson 04 (choosing a tile size). Four resources each cap the resident blocks
per SM; the smallest cap wins:

- warps: an SM holds 64 warps (2,048 threads); a block takes ceil(threads / 32) warps;
- block slots: 32 blocks per SM on compute capability 9.0;
- registers: 65,536 per SM, split over 4 sub-partitions; a warp gets
  ceil(regs_per_thread * 32 / 256) * 256 of them;
- shared memory: a block takes its static + dynamic bytes plus 1,024 bytes the driver
  reserves per block (compute capability 8.0 and later), rounded up to 128 bytes, out of the
  SM's shared-memory configuration (at most 233,472 bytes on an H200).

The rules are those of NVIDIA's occupancy calculator (``cuda_occupancy.h`` in the CUDA
toolkit: ``cudaOccMaxBlocksPerSMWarpsLimit``, ``...RegsLimit``, ``...SmemLimit``).

The shared-memory configuration. The L1 cache and shared memory share one array per SM, and
the driver picks, at each launch, how much of it becomes shared memory: one of 0, 8, 16, 32,
64, 100, 132, 164, 196 or 228 KiB on compute capability 9.0 (CUDA C++ Programming Guide,
"Shared Memory" for 9.0). Its rule is not documented. The calculator, and this module by
default, assume the largest, which gives the most blocks shared memory allows. Nsight Compute
reports the launch's real choice (``launch__shared_mem_config_size``) and the cap it implies
(``launch__occupancy_limit_shared_mem``); pass `shared_config` to reproduce it. On the H200
(docs/h200-measurements.md) the caps 8 (naive), 3 (TILE=32), 21 (TILE=16) and
20 (TILE=16 padded) are reproduced exactly by configurations of 8, 32, 64 and 64 KiB, the only
sizes in the list that give them. The driver chose them just large enough not to be the
binding limit, so the blocks that run, and the occupancy, are the same either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import LaunchError
from .formatting import percent
from .launch import DeviceLimits
from .gpu import ceil_div, round_up

__all__ = ["Occupancy", "occupancy", "SHARED_CONFIGS_CC90"]

#: Shared-memory configurations (bytes per SM) the driver can choose on compute capability 9.0.
SHARED_CONFIGS_CC90 = tuple(k * 1024 for k in (0, 8, 16, 32, 64, 100, 132, 164, 196, 228))


@dataclass(frozen=True)
class Occupancy:
    """Blocks per SM allowed by each resource, the binding one, and the occupancy.

    `blocks_by_*` are blocks per SM (None where the resource sets no limit: a kernel with no
    register count given). `limited_by` names every resource whose cap equals
    `active_blocks` ("warps", "blocks", "registers", "shared memory"). `occupancy` is a
    fraction (0 to 1) of the SM's warp slots; `percent` the same times 100. Bytes for shared
    memory, registers for registers.
    """

    threads_per_block: int
    warps_per_block: int
    blocks_by_warps: int
    blocks_by_slots: int
    blocks_by_registers: int | None
    blocks_by_shared: int
    active_blocks: int
    limited_by: tuple[str, ...]
    active_warps: int
    max_warps: int
    occupancy: float
    shared_per_block: int          # allocated per block: static + dynamic + reserved, rounded
    shared_config: int             # the SM's shared-memory configuration assumed
    registers_per_block: int | None

    @property
    def percent(self) -> float:
        return 100.0 * self.occupancy

    def __str__(self) -> str:
        regs = "-" if self.blocks_by_registers is None else str(self.blocks_by_registers)
        return (f"{self.active_blocks} blocks/SM of {self.threads_per_block} threads = "
                f"{self.active_warps}/{self.max_warps} warps ({percent(self.percent)} occupancy), "
                f"limited by {' and '.join(self.limited_by)} "
                f"[warps {self.blocks_by_warps}, block slots {self.blocks_by_slots}, "
                f"registers {regs}, shared memory {self.blocks_by_shared} "
                f"at {self.shared_per_block:,} B/block of {self.shared_config:,} B]")


def occupancy(threads_per_block: int, *, registers_per_thread: int | None = None,
              static_shared: int = 0, dynamic_shared: int = 0,
              limits: DeviceLimits = DeviceLimits(),
              shared_config: int | None = None) -> Occupancy:
    """Resident blocks per SM for one launch, following NVIDIA's occupancy calculator.

    `threads_per_block`: bx·by·bz. `registers_per_thread`: from ``nvcc -Xptxas -v`` or
    PyCUDA's ``Function.num_regs`` (None leaves registers out: the emulator has none).
    `static_shared`: the kernel's ``__shared__`` bytes (``Function.shared_size_bytes``;
    8,192 for the tiled kernel at TILE=32, 8,448 padded). `dynamic_shared`: the launch's
    ``shared=`` bytes. `limits`: the device (compute capability 9.0 by default).
    `shared_config`: the SM's shared-memory configuration in bytes (see the module docstring);
    None assumes ``limits.max_shared_per_sm``.

    Examples on an H200 (limits as measured there)::

        occupancy(1024, static_shared=8192)   # TILE=32: 2 blocks by warps, 100%
        occupancy(256, static_shared=2048)    # TILE=16: 8 blocks by warps, 100%

    Raises `LaunchError` when the block cannot run at all (over 1,024 threads, or more shared
    memory or registers than a block may have).
    """
    if threads_per_block < 1 or threads_per_block > limits.max_threads_per_block:
        raise LaunchError(f"a block of {threads_per_block} threads cannot launch: between 1 "
                          f"and {limits.max_threads_per_block} threads.")
    if static_shared < 0 or dynamic_shared < 0:
        raise LaunchError("shared memory sizes must be >= 0 bytes.")
    config = limits.max_shared_per_sm if shared_config is None else int(shared_config)

    warps = ceil_div(threads_per_block, limits.warp_size)
    by_warps = limits.max_warps_per_sm // warps
    by_slots = limits.max_blocks_per_sm

    by_regs = None
    regs_per_block = None
    if registers_per_thread is not None:
        if registers_per_thread > limits.max_regs_per_thread:
            raise LaunchError(f"{registers_per_thread} registers per thread is over the "
                              f"limit of {limits.max_regs_per_thread}.")
        per_warp = round_up(registers_per_thread * limits.warp_size, limits.reg_alloc_granularity)
        regs_per_block = per_warp * warps
        # The hardware checks a block's registers as if its warps were spread evenly over
        # the 4 sub-partitions (cuda_occupancy.h, cudaOccMaxBlocksPerSMRegsLimit).
        assumed = per_warp * round_up(warps, limits.sub_partitions_per_sm)
        if assumed > limits.max_regs_per_block:
            raise LaunchError(
                f"{threads_per_block} threads x {registers_per_thread} registers need "
                f"{assumed:,} registers per block, over the {limits.max_regs_per_block:,} "
                f"limit: use a smaller block.")
        if per_warp > 0:   # a kernel with no registers at all sets no limit
            per_partition = limits.regs_per_sm // limits.sub_partitions_per_sm
            warps_per_sm = (per_partition // per_warp) * limits.sub_partitions_per_sm
            by_regs = warps_per_sm // warps

    total_shared = int(static_shared) + int(dynamic_shared)
    shared_per_block = round_up(total_shared + limits.reserved_shared_per_block,
                                 limits.shared_alloc_granularity)
    if total_shared > limits.max_shared_per_block_optin:
        raise LaunchError(f"{total_shared:,} bytes of shared memory per block is over the "
                          f"{limits.max_shared_per_block_optin:,}-byte limit even after "
                          f"opting in.")
    by_shared = config // shared_per_block if shared_per_block else by_slots

    caps = {"warps": by_warps, "blocks": by_slots, "shared memory": by_shared}
    if by_regs is not None:
        caps["registers"] = by_regs
    active = min(caps.values())
    limited_by = tuple(name for name in ("warps", "blocks", "registers", "shared memory")
                       if caps.get(name) == active)
    active_warps = active * warps
    return Occupancy(
        threads_per_block=threads_per_block,
        warps_per_block=warps,
        blocks_by_warps=by_warps,
        blocks_by_slots=by_slots,
        blocks_by_registers=by_regs,
        blocks_by_shared=by_shared,
        active_blocks=active,
        limited_by=limited_by,
        active_warps=active_warps,
        max_warps=limits.max_warps_per_sm,
        occupancy=active_warps / limits.max_warps_per_sm,
        shared_per_block=shared_per_block,
        shared_config=config,
        registers_per_block=regs_per_block,
    )
