"""Sweeps over TILE (and over extra shared memory) with the occupancy beside each speed.

Introduced in lesson 04 (choosing a tile size). Each point compiles the tiled kernel with
``-DTILE=<tile> -DPAD=<pad>`` on the notebook's backend and reads the compiled kernel's
static shared memory (``Function.shared_size_bytes``: nvcc's figure on a GPU, the
emulator's layout on the CPU, the same numbers), then:

- on a GPU: times it at size `N` (``tl.time_kernel``), takes its register count
  (``Function.num_regs``) and the device's limits, and computes the occupancy;
- on the emulator: takes GFLOP/s and registers from the shipped reference figures
  (`tilinglib.reference`, measured at the same `N`), labelled with the device they came
  from, since a CPU cannot say how fast a GPU is.

A sweep that takes more than a moment shows a progress bar (a text line outside Jupyter).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .formatting import percent
from .occupancy import Occupancy, occupancy
from .recipes import TILED
from .figure_cache import cached

__all__ = ["SweepPoint", "tile_sweep", "shared_sweep", "table", "plot_tile_sweep",
           "plot_shared_sweep", "Progress"]


@dataclass(frozen=True)
class SweepPoint:
    """One launch of the tiled kernel: its resources, occupancy and (where known) speed.

    `static_shared`: bytes of ``__shared__`` arrays, read from the compiled kernel;
    `dynamic_shared`: the launch's ``shared=`` bytes; `registers`: per thread (None when
    unknown); `gflops`: None when neither a GPU nor the reference has a figure;
    `measured_on`: where `gflops` comes from (this GPU, or the reference's label)."""

    N: int
    tile: int
    pad: int
    threads: int
    static_shared: int
    dynamic_shared: int
    registers: int | None
    occupancy: Occupancy
    gflops: float | None
    requested_bytes: int
    measured_on: str


class Progress:
    """A progress bar for a loop of `total` steps: ipywidgets in Jupyter, text elsewhere.

    ``with Progress(4, "TILE sweep") as bar: ... bar.step("TILE=16")``."""

    def __init__(self, total: int, label: str, *, enabled: bool = True):
        self.total, self.label, self.enabled, self.done = total, label, enabled, 0
        self._bar = None

    def __enter__(self):
        if not self.enabled:
            return self
        try:
            from IPython import get_ipython

            if get_ipython() is not None and hasattr(get_ipython(), "kernel"):
                import ipywidgets
                from IPython.display import display

                self._bar = ipywidgets.IntProgress(min=0, max=self.total, value=0,
                                                   description=self.label,
                                                   style={"description_width": "initial"})
                display(self._bar)
        except ImportError:
            self._bar = None
        return self

    def step(self, what: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.value = self.done
            self._bar.description = f"{self.label}: {what}" if what else self.label
        else:
            print(f"{self.label}: {self.done}/{self.total} {what}", file=sys.stderr)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.bar_style = "success" if exc[0] is None else "danger"
        return False


def _reference_run(ref, N, tile, pad):
    try:
        return ref.run(TILED.kernel, N, tile=tile, pad=pad)
    except KeyError:
        return None


def _reference_registers(ref, tile, pad):
    """nvcc's register count for this TILE and PAD in the reference (the same at every N)."""
    for run in ref.runs:
        if run.kernel == TILED.kernel and run.tile == tile and run.pad == pad:
            if run.extra.get("registers") is not None:
                return int(run.extra["registers"])
    return None


def _point(backend, ref, source, N, tile, pad, dynamic_shared, repeat,
           with_speed=True) -> SweepPoint:
    from .roofline import sgemm_flops
    from .sgemm import random_matrices, requested_bytes_tiled, tiled_launch
    from .timing import time_kernel

    block, grid = tiled_launch(N, tile)
    f = backend.SourceModule(source, options=TILED.options({"TILE": tile, "PAD": pad})
                             ).get_function(TILED.function)
    static = int(f.shared_size_bytes)
    if backend.name == "pycuda":
        A, B = random_matrices(N, seed=0)
        C = np.zeros_like(A)
        t = time_kernel(f, np.int32(N), backend.In(A), backend.In(B), backend.Out(C),
                        block=block, grid=grid, shared=dynamic_shared, repeat=repeat,
                        flops=sgemm_flops(N, N, N))
        registers, gflops = int(f.num_regs), t.gflops
        where = f"measured here on the {backend.device_name}"
    else:
        # Registers belong to the compiled kernel, so the reference's count holds for any
        # launch; a speed only for the launch that was measured (no extra shared memory).
        run = _reference_run(ref, N, tile, pad)
        registers = _reference_registers(ref, tile, pad)
        gflops = run.gflops if run is not None and dynamic_shared == 0 and with_speed else None
        where = ref.label if gflops is not None else "no measurement (CPU emulator)"
    occ = occupancy(tile * tile, registers_per_thread=registers, static_shared=static,
                    dynamic_shared=dynamic_shared, limits=backend.limits)
    return SweepPoint(N, tile, pad, tile * tile, static, int(dynamic_shared), registers, occ,
                      gflops, requested_bytes_tiled(N, tile), where)


def tile_sweep(N: int, tiles: Sequence[int] = (4, 8, 16, 32), *, pad: int = 0,
               source: str | None = None, repeat: int = 10, progress: bool = True,
               reference: str = "h200") -> list[SweepPoint]:
    """The tiled kernel at each TILE in `tiles`: shared memory, registers, occupancy, speed.

    On a GPU every point is measured at size `N`; on the emulator GFLOP/s and registers
    come from the reference figures `reference` at the same `N` (4096 and 1024 are
    shipped). `source`: your own variant of the kernel (same name and parameters)."""
    from . import kernels, reference as _reference
    from .backend import get_backend

    backend = get_backend()
    ref = _reference.load(reference)
    src = kernels.load(TILED.kernel) if source is None else source
    points = []
    with Progress(len(tiles), f"TILE sweep, N={N}", enabled=progress) as bar:
        for tile in tiles:
            points.append(_point(backend, ref, src, N, tile, pad, 0, repeat))
            bar.step(f"TILE={tile}")
    return points


def shared_sweep(N: int, tile: int, extra: Sequence[int], *, repeat: int = 10,
                 progress: bool = True) -> list[SweepPoint]:
    """The tiled kernel at one TILE, launched with each of `extra` bytes of dynamic shared
    memory (``shared=``) that it does not use: only the occupancy changes.

    This is how a bigger shared-memory footprint costs blocks per SM, with everything else
    held fixed. On the emulator there is no speed (`gflops` None; the reference has no
    such launches), but the occupancy is exact, with the reference's register counts."""
    from . import kernels, reference as _reference
    from .backend import get_backend

    backend = get_backend()
    ref = _reference.load()
    src = kernels.load(TILED.kernel)
    points = []
    with Progress(len(extra), f"shared= sweep, TILE={tile}", enabled=progress) as bar:
        for nbytes in extra:
            points.append(_point(backend, ref, src, N, tile, 0, int(nbytes), repeat,
                                 with_speed=False))
            bar.step(f"{nbytes:,} B")
    return points


def table(points: Sequence[SweepPoint]) -> str:
    """The points as a text table: resources, blocks per SM and what limits them, speed."""
    head = (f"{'TILE':>4} {'pad':>3} {'threads':>7} {'static B':>8} {'shared= B':>9} {'regs':>4} "
            f"{'blocks/SM':>9} {'limited by':<38} {'occupancy':>9} {'GFLOP/s':>8}")
    lines = [head]
    for p in points:
        o = p.occupancy
        regs = "-" if p.registers is None else str(p.registers)
        speed = "-" if p.gflops is None else f"{p.gflops:,.0f}"
        lines.append(f"{p.tile:>4} {p.pad:>3} {p.threads:>7} {p.static_shared:>8,} "
                     f"{p.dynamic_shared:>9,} {regs:>4} {o.active_blocks:>9} "
                     f"{' and '.join(o.limited_by):<38} {percent(o.percent):>9} {speed:>8}")
    sources = sorted({p.measured_on for p in points if p.gflops is not None})
    if sources:
        lines.append("GFLOP/s " + "; ".join(sources))
    return "\n".join(lines)


@cached("axes")
def plot_tile_sweep(points: Sequence[SweepPoint], axes=None):
    """Two panels against TILE: GFLOP/s (occupancy written at each point) and global bytes
    requested (log scale, 8·N³/TILE, in GB). Returns the two Axes."""
    import matplotlib.pyplot as plt

    own = axes is None
    if own:
        # constrained layout leaves room for the right panel's y-label between the panels
        _, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    left, right = axes
    tiles = [p.tile for p in points]
    speed = [p for p in points if p.gflops is not None]
    left.plot([p.tile for p in speed], [p.gflops for p in speed], "o-", color="C0")
    for p in speed:
        left.annotate(f"{percent(p.occupancy.percent)} occ.", (p.tile, p.gflops),
                      textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    left.set_xscale("log", base=2)
    left.margins(x=0.12)
    left.set_xticks(tiles, [str(t) for t in tiles])
    left.set_xlabel("TILE")
    left.set_ylabel("GFLOP/s")
    left.set_ylim(0, max([p.gflops for p in speed], default=1) * 1.2)
    where = sorted({p.measured_on for p in speed})
    left.set_title(f"Tiled SGEMM, N = {points[0].N}" + (f"\n{where[0]}" if len(where) == 1 else ""),
                   fontsize=9)
    left.grid(True, alpha=0.3)
    right.plot(tiles, [p.requested_bytes / 1e9 for p in points], "s-", color="C1")
    right.set_xscale("log", base=2)
    right.set_yscale("log")
    right.set_xticks(tiles, [str(t) for t in tiles])
    right.set_xlabel("TILE")
    right.set_ylabel("global GB requested (1e9 bytes)")
    right.set_title("Requested bytes: 8·N³/TILE", fontsize=9)
    right.grid(True, which="both", alpha=0.3)
    from .plots import finished, plain_log_ticks

    plain_log_ticks(left)
    plain_log_ticks(right)
    if own:
        finished(left.figure)
    return left, right


@cached("ax")
def plot_shared_sweep(points: Sequence[SweepPoint], ax=None):
    """Occupancy (and GFLOP/s where measured) against the shared memory a block holds."""
    import matplotlib.pyplot as plt

    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(6.4, 3.8))
    held = [(p.static_shared + p.dynamic_shared) / 1024 for p in points]
    ax.step(held, [p.occupancy.percent for p in points], "o-", where="post", color="C2",
            label="occupancy (%)")
    ax.set_xlabel("shared memory per block (KiB, static + shared=)")
    ax.set_ylabel("occupancy (%)")
    ax.set_ylim(0, 110)
    ax.grid(True, alpha=0.3)
    speed = [(h, p.gflops) for h, p in zip(held, points) if p.gflops is not None]
    if speed:
        twin = ax.twinx()
        twin.plot([h for h, _ in speed], [g for _, g in speed], "s--", color="C0",
                  label="GFLOP/s")
        twin.set_ylabel("GFLOP/s")
        twin.set_ylim(0, max(g for _, g in speed) * 1.2)
    ax.set_title(f"TILE={points[0].tile}: blocks/SM as shared memory grows", fontsize=10)
    if own:
        from .plots import finished

        finished(ax.figure)
    return ax
