"""Pictures of the tile loop: which tiles one block loads at step t, and when DRAM is busy.

Introduced in lesson 06 (what tiling does not fix).

- `tiles_loaded(N, tile, t, block)`: the tile of A and of B that block (bx, by) stages in
  step t, and the ones it staged before (pure arithmetic, the same for every backend);
- `plot_tile_loads(...)` draws A, B and C as grids of tiles with those tiles marked, and
  `tile_loop_slider(...)` puts a slider over t in front of it;
- `phases(steps, double_buffered)` and `plot_phases(...)`: a schematic timeline of one
  block: loads from global memory, barriers, and the multiply-adds. Not a measurement: it
  shows the order the kernel imposes, with made-up unit durations.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ArgumentError
from .figure_cache import cached

__all__ = ["TileStep", "tiles_loaded", "plot_tile_loads", "tile_loop_slider", "Phase",
           "phases", "plot_phases"]


@dataclass(frozen=True)
class TileStep:
    """What block (bx, by) touches in step `t`: tile coordinates as (tile row, tile column).

    `a_tile` = (by, t) and `b_tile` = (t, bx) are loaded now; `a_done` / `b_done` were loaded
    in earlier steps; `c_tile` = (by, bx) is the block's output."""

    t: int
    steps: int
    a_tile: tuple[int, int]
    b_tile: tuple[int, int]
    a_done: tuple[tuple[int, int], ...]
    b_done: tuple[tuple[int, int], ...]
    c_tile: tuple[int, int]


def tiles_loaded(N: int, tile: int, t: int, block: tuple[int, int] = (0, 0)) -> TileStep:
    """The tiles block ``block = (bx, by)`` loads in step `t` of the tile loop (0-based).

    Raises ValueError for a TILE that does not divide N, or t / block outside the grid."""
    if N % tile:
        raise ArgumentError(f"TILE={tile} does not divide N={N}")
    steps = N // tile
    bx, by = block
    if not (0 <= t < steps and 0 <= bx < steps and 0 <= by < steps):
        raise ArgumentError(f"t and the block's coordinates must be in 0..{steps - 1} "
                         f"(N/TILE = {steps}); got t={t}, block={block}")
    return TileStep(t, steps, (by, t), (t, bx), tuple((by, s) for s in range(t)),
                    tuple((s, bx) for s in range(t)), (by, bx))


@cached("axes")
def plot_tile_loads(N: int, tile: int, t: int, block: tuple[int, int] = (0, 0), axes=None):
    """A, B and C as grids of TILE x TILE tiles; the tiles block `block` loads at step `t`
    are filled, earlier ones hatched, the block's C tile outlined. Returns the three Axes;
    ``axes[0].tile_step`` is the `TileStep` drawn."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    step = tiles_loaded(N, tile, t, block)
    n = step.steps
    own = axes is None
    if own:
        _, axes = plt.subplots(1, 3, figsize=(10, 3.6))
    panels = ((axes[0], "A", step.a_tile, step.a_done, "C0"),
              (axes[1], "B", step.b_tile, step.b_done, "C1"),
              (axes[2], "C", None, (), "C2"))
    for ax, name, now, done, color in panels:
        ax.set_xlim(0, n)
        ax.set_ylim(n, 0)
        ax.set_aspect("equal")
        ax.set_xticks(range(n + 1) if n <= 16 else [])
        ax.set_yticks(range(n + 1) if n <= 16 else [])
        ax.tick_params(labelbottom=False, labelleft=False, length=0)
        ax.grid(True, color="lightgrey", lw=0.6)
        for r, c in done:
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor="none", edgecolor=color,
                                   hatch="///", lw=0.0, alpha=0.6))
        if now is not None:
            r, c = now
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=color, alpha=0.8))
        if name == "C":
            r, c = step.c_tile
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor="none", edgecolor=color, lw=2.5))
            ax.set_title(f"C: block (bx, by) = ({block[0]}, {block[1]}) writes\n"
                         f"tile (row {r}, col {c})", fontsize=9)
        else:
            ax.set_title(f"{name}: tile (row {now[0]}, col {now[1]})\nloaded in step t={t}",
                         fontsize=9)
    axes[0].figure.suptitle(f"N = {N}, TILE = {tile}: step t = {t} of the loop's t = 0 … {n - 1}",
                            fontsize=10)
    axes[0].tile_step = step
    if own:
        from .plots import finished

        finished(axes[0].figure)
    return axes


def tile_loop_slider(N: int = 128, tile: int = 16, block: tuple[int, int] = (1, 2)):
    """A slider over t that redraws `plot_tile_loads` (returns the ipywidgets box)."""
    import ipywidgets
    from IPython.display import display

    from .figure_cache import show_now

    steps = N // tile
    slider = ipywidgets.IntSlider(value=0, min=0, max=steps - 1, description="step t",
                                  continuous_update=False)
    out = ipywidgets.Output()

    def draw(change=None):
        with out:
            out.clear_output(wait=True)
            show_now(plot_tile_loads, N, tile, slider.value, block)

    slider.observe(draw, names="value")
    draw()
    box = ipywidgets.VBox([slider, out])
    display(box)
    return box


@dataclass(frozen=True)
class Phase:
    """One bar of the timeline: `what` ("load", "barrier", "compute"), for tile `tile`,
    from `start` to `end` (schematic units)."""

    what: str
    tile: int
    start: float
    end: float


def phases(steps: int = 4, *, double_buffered: bool = False, load: float = 3.0,
           compute: float = 2.0, barrier: float = 0.3) -> tuple[Phase, ...]:
    """A schematic timeline of one block over `steps` tiles.

    Plain kernel: per tile, load (global memory busy), barrier, compute (global memory
    idle), barrier. Double-buffered: tile 0 is loaded first; then, per tile t, the loads of
    tile t+1 are issued and run while tile t's multiply-adds execute, then one barrier."""
    out, now = [], 0.0
    if not double_buffered:
        for t in range(steps):
            out.append(Phase("load", t, now, now + load))
            now += load
            out.append(Phase("barrier", t, now, now + barrier))
            now += barrier
            out.append(Phase("compute", t, now, now + compute))
            now += compute
            out.append(Phase("barrier", t, now, now + barrier))
            now += barrier
        return tuple(out)
    out.append(Phase("load", 0, now, now + load))
    now += load
    out.append(Phase("barrier", 0, now, now + barrier))
    now += barrier
    for t in range(steps):
        span = compute
        if t + 1 < steps:
            out.append(Phase("load", t + 1, now, now + load))
            span = max(compute, load)
        out.append(Phase("compute", t, now, now + compute))
        now += span
        out.append(Phase("barrier", t, now, now + barrier))
        now += barrier
    return tuple(out)


@cached("ax")
def plot_phases(steps: int = 4, ax=None, **kwargs):
    """Draw `phases` for the plain and the double-buffered loop, one above the other.

    Returns the Axes; ``ax.timelines`` holds the two phase tuples drawn."""
    import matplotlib.pyplot as plt

    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(10, 2.6))
    colors = {"load": "C0", "compute": "C1", "barrier": "grey"}
    rows = {"plain (2 barriers per tile)": phases(steps, **kwargs),
            "double-buffered (1 barrier per tile)": phases(steps, double_buffered=True, **kwargs)}
    for y, (label, timeline) in enumerate(rows.items()):
        for p in timeline:
            lane = y * 2 + (0 if p.what == "load" else 0.8)
            ax.broken_barh([(p.start, p.end - p.start)], (lane, 0.7), color=colors[p.what],
                           alpha=0.85)
            if p.what != "barrier":
                ax.text((p.start + p.end) / 2, lane + 0.35, f"{p.what[0].upper()}{p.tile}",
                        ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks([0.35, 1.15, 2.35, 3.15],
                  ["plain: global loads", "plain: FMAs", "double-buffered: global loads",
                   "double-buffered: FMAs"], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time (schematic units, not measured)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    ax.legend(handles, list(colors), fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("One block's tile loop: when is global memory busy?", fontsize=10)
    ax.timelines = rows
    if own:
        from .plots import finished

        finished(ax.figure)
    return ax
