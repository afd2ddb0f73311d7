"""The hardware numbers every CUDA GPU the course meets shares, each defined once, and the
two integer roundings they are used with.

A leaf module: it imports nothing of tilinglib, so the toolchain, the launch checks and the
student's library can all take their constants from here. The numbers are those of the
CUDA C++ Programming Guide (CUDA 12/13):

- `WARP_SIZE`: threads per warp, 32 on every compute capability so far (section "SIMT
  Architecture"; the built-in variable ``warpSize``, table "Technical Specifications per
  Compute Capability").
- `BANKS`, `BANK_BYTES`: shared memory has 32 banks, each 4 bytes (one 32-bit word) wide,
  on compute capability 5.x and later; successive 32-bit words fall in successive banks
  (section "Shared Memory" of "Compute Capabilities", e.g. 5.x, 8.x, 9.0).
- `SECTOR_BYTES`: global memory is accessed through the L1/L2 caches in 32-byte sectors
  (section "Global Memory" of "Compute Capabilities" 5.x and later; the unit Nsight
  Compute's ``*_sectors_*`` metrics count).
- `MAX_THREADS_PER_BLOCK`: at most 1,024 threads per block (table "Technical
  Specifications per Compute Capability", every compute capability from 2.0 on).
"""

from __future__ import annotations

__all__ = ["WARP_SIZE", "BANKS", "BANK_BYTES", "SECTOR_BYTES", "SECTOR_SHIFT",
           "MAX_THREADS_PER_BLOCK",
           "ceil_div", "round_up"]

WARP_SIZE = 32                 # threads per warp
BANKS = 32                     # shared-memory banks
BANK_BYTES = 4                 # bytes per bank (one 32-bit word)
SECTOR_BYTES = 32              # bytes per L1/L2 sector of global memory
SECTOR_SHIFT = SECTOR_BYTES.bit_length() - 1   # address >> SECTOR_SHIFT: its sector (5)
MAX_THREADS_PER_BLOCK = 1024   # threads per block


def ceil_div(a: int, b: int) -> int:
    """⌈a / b⌉ for integers, exactly (no float): ``ceil_div(100, 32) == 4``.

    `a`, `b`: ints (NumPy integers too; `b` nonzero). Rounds toward +infinity for any sign,
    as ``-(-a // b)`` does; ZeroDivisionError for `b` == 0."""
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    """`a` rounded up to a multiple of `b`: ``round_up(100, 16) == 112``, ``round_up(96, 16)
    == 96``. `a`, `b`: ints, `b` > 0 (an alignment or allocation unit);
    ZeroDivisionError for `b` == 0."""
    return ceil_div(a, b) * b
