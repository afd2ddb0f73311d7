"""Evidence, from the emulator's counters of one run, that a kernel did the work of C = A·B.

Input: one run's shape (M, N, K), its `LaunchReport` and the emulator's `Counters`. Output:
None, or a sentence saying what the counters show is missing. The graders (`check_sgemm`,
`check_coarsened`) read every correctness run this way, so a kernel cannot show the work on
some shapes and skip it on others. The rules, each a lower bound that every honest
kernel of the assignments meets on every shape (padding only adds work):

- **multiply-adds** (`fma_shortfall`): C = A·B takes M·N·K of them. The emulator counts 2
  floating-point operations per FMA and 1 per other float add, subtract, multiply or divide
  (`LaunchReport.flops`, as Nsight Compute's 2 x ffma + fadd + fmul); the tiled kernel runs
  2 x (threads launched) x ceil(K/TILE)·TILE of them, at least 2·M·N·K. A kernel that
  computes fewer did not compute C (a table of answers, say).
- **inputs read** (`staging_shortfall`): every element of A and of B must be loaded at least
  once: global loads of at least 4·(M·K + K·N) bytes.
- **inputs staged**: the assignments stage tiles of A and B in shared memory, so the shared
  stores (a ``cp.async`` copy counts as one) hold at least those 4·(M·K + K·N) bytes.
- **operands read**: a thread that computes c outputs of C lying in r rows and q columns
  (r·q >= c) needs, per step of k, r values of A and q of B: r + q >= 2·sqrt(c) loads for c
  FMAs, 8/sqrt(c) bytes per FMA. A block computes one TILE x TILE tile of C, so c <= TILE²
  and the shared and global loads together carry at least 8·M·N·K / TILE bytes, however the
  block shares its work among its threads (the tiled kernel loads 8 per FMA, the coarsened
  one 4 + 4/COARSE, a thread with a 4 x 8 register tile 1.5; the bound at TILE 32 is
  0.25). A dummy shared store and load do not.
"""

from __future__ import annotations

from ..gpu import ceil_div

__all__ = ["fma_shortfall", "staging_shortfall"]


def fma_shortfall(shape, report) -> str | None:
    """Why `report` (a `LaunchReport` of C = A·B on `shape` = (M, N, K)) shows too few
    multiply-adds for C, or None when it shows at least M·N·K."""
    M, N, K = (int(x) for x in shape)
    need = 2 * M * N * K
    if report.flops >= need:
        return None
    return (f"C is right, but the kernel executed {report.flops:,} floating-point operations "
            f"(the emulator counts 2 per multiply-add, 1 per other add or multiply) where "
            f"C = A·B needs M·N·K = {M * N * K:,} multiply-adds, {need:,} operations: it did "
            f"not compute C (a table of answers, or work skipped on some shapes, is not an "
            f"SGEMM). Every correctness shape is checked, and the instructor's grade adds "
            f"shapes and data the notebook does not know.")


def staging_shortfall(shape, report, counters, tile: int) -> str | None:
    """Why the counters of one run on `shape` = (M, N, K) show that the inputs were not read,
    not staged in shared memory, or too few operands were loaded for the multiply-adds
    (module docstring); None when they show all three. `report`: the `LaunchReport`;
    `counters`: the emulator's `Counters` (``f.last_counters``; None skips the shared
    bytes rules); `tile`: the TILE of the launch (each block computes TILE x TILE of C)."""
    M, N, K = (int(x) for x in shape)
    inputs = 4 * (M * K + K * N)
    loads = report.global_load_bytes_requested + 128 * report.global_atomic_requests
    where = f"M={M}, N={N}, K={K}"
    if loads < inputs:
        return (f"{where}: the kernel loads {loads:,} bytes from global memory, fewer than A "
                f"and B hold ({inputs:,}): it does not read its inputs, so it cannot compute "
                f"C from them.")
    if counters is None:
        return None
    if counters.shared_store_bytes < inputs:
        return (f"{where}: the kernel stores {counters.shared_store_bytes:,} bytes into shared "
                f"memory, fewer than A and B hold ({inputs:,}): it does not stage the tiles "
                f"of A and B there. Store each TILE x TILE tile of A and of B in __shared__ "
                f"arrays once per step along K and compute from them.")
    t = max(1, int(tile))
    need = ceil_div(8 * M * N * K, t)
    have = counters.shared_load_bytes + loads
    if have < need:
        return (f"{where}: the kernel loads {counters.shared_load_bytes:,} bytes from shared "
                f"memory and {loads:,} from global memory, fewer than the {need:,} its "
                f"{M * N * K:,} multiply-adds read at the least (8/TILE bytes per FMA, even "
                f"with a thread computing the block's whole {t} x {t} tile from registers; the "
                f"tiled kernel loads 8): the values in shared memory do not feed the "
                f"multiply-adds.")
    return None
