"""TILE sliders for the lessons: move the tile size, see the numbers change.

- `roofline_explorer` (lesson 01): a TILE slider and a GPU menu; the tiled kernel's point
  moves along that GPU's roofline, with its intensity and bound read out beside it.
- `tile_explorer` (lesson 03): a TILE slider limited to the tiles the kernel accepts for N;
  on release it recompiles the tiled kernel and re-measures it (GPU) or re-counts its
  memory accesses (emulator).
- `ladder_explorer` (lesson 07): one slider per tile-shape parameter of a `tilinglib.ladder`
  step (BM, BN, BK, TM, TN), each offering only the values `Step.valid` accepts with the
  others; on release it recompiles and re-measures (GPU) or re-counts (emulator). Parameters
  that the step's rules tie together (`Step.joint`: lesson 08's warp layout, WM, WN,
  WMITER, WNITER, TM, TN) are one dropdown of their valid combinations instead.
- `size_explorer` (lesson 08): a menu of problem sizes; for each, the tile shape the course
  picks (`tilinglib.tile_choice`: measured on the H200 where it can, the wave model
  otherwise), its waves, and why.

Both recompute only when the slider is released (``continuous_update=False``), and offer
only valid tiles, smallest first. A recompute that takes longer than `busy_after` seconds
shows "working" in the status line; a mistake (a kernel that does not compile, a launch that
fails) shows as one short line there, never as a traceback. A wrong argument to either
function (a TILE the kernel cannot take, an unknown GPU) raises `WidgetArgumentError`, which
a notebook shows as one line instead of a traceback.

For tests, human or browser: every number shown is also in the HTML as
``<td class="tl-value" data-name="<name>" data-value="<plain number>">``, inside
``<div class="tl-readout" data-widget="...">``; the status line is a
``<div class="tl-status" data-state="idle|busy|error">``. `read_values` parses a readout
back into a dict, and each explorer's `.values` holds what it shows.
"""

from __future__ import annotations

import html
import operator
import re
import threading
import warnings
from typing import Callable, Sequence

from .errors import ArgumentError
from .formatting import percent

__all__ = ["RooflineExplorer", "TileExplorer", "LadderExplorer", "SizeExplorer",
           "roofline_explorer", "tile_explorer", "ladder_explorer", "size_explorer",
           "read_values", "WidgetArgumentError",
           "BUSY_AFTER_S"]

BUSY_AFTER_S = 1.0     # show "working" when a recompute takes longer than this
_MAX_MESSAGE = 300     # characters of an error message shown in the status line

_VALUE_RE = re.compile(r'data-name="([^"]+)" data-value="([^"]*)"')


class WidgetArgumentError(ArgumentError):
    """A wrong argument to `roofline_explorer` or `tile_explorer`: a student's mistake, so
    IPython shows it as one line (``WidgetArgumentError: ...``) instead of a traceback
    through tilinglib's internals (IPython's ``_render_traceback_`` hook)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def _choices(tiles: Sequence[int], least: int = 1) -> list[int]:
    """The slider's options: whole tile sizes of `least` or more (1; 0 for a padding), each
    once, smallest first."""
    out = set()
    for t in tiles:
        try:
            whole = not isinstance(t, bool) and float(t).is_integer() and int(t) >= least
        except (TypeError, ValueError):
            whole = False
        if not whole:
            raise WidgetArgumentError(f"a tile size is a whole number of {least} or more, "
                                      f"not {t!r}")
        out.add(int(t))
    if not out:
        raise WidgetArgumentError("no tile sizes to choose from")
    return sorted(out)


def read_values(readout_html: str) -> dict[str, str]:
    """{name: value} of every ``data-name``/``data-value`` pair in a readout's HTML.

    Values are the plain strings (no thousands separators), e.g. ``{"tile": "16",
    "requested_bytes": "1048576"}``."""
    return {name: html.unescape(value) for name, value in _VALUE_RE.findall(readout_html)}


def _plain(value) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _readout(widget: str, rows: Sequence[tuple[str, str, object, str]], note: str = "") -> str:
    """HTML table; each row is (name, label, value, shown text)."""
    body = "".join(
        f'<tr><th style="text-align:left;padding-right:1em">{html.escape(label)}</th>'
        f'<td class="tl-value" data-name="{html.escape(name)}" '
        f'data-value="{html.escape(_plain(value))}" style="text-align:right">'
        f"{html.escape(shown)}</td></tr>"
        for name, label, value, shown in rows)
    foot = f'<p class="tl-note" style="font-size:90%">{html.escape(note)}</p>' if note else ""
    return (f'<div class="tl-readout" data-widget="{html.escape(widget)}">'
            f'<table class="tl-table">{body}</table>{foot}</div>')


def _status(state: str, text: str = "") -> str:
    color = {"busy": "#555", "error": "#b00", "idle": "#555"}[state]
    return (f'<div class="tl-status" data-state="{state}" style="color:{color}">'
            f"{html.escape(text)}</div>")


def _first_line(text: str) -> str:
    """The first line of `text`, cut to `_MAX_MESSAGE` characters."""
    first = (str(text).strip().splitlines() or [""])[0]
    return first if len(first) <= _MAX_MESSAGE else first[:_MAX_MESSAGE - 1] + "…"


def _short(exc: BaseException) -> str:
    """One line for the student: the exception's class and the first line of its message."""
    first = _first_line(str(exc))
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class _Explorer:
    """Slider + status line + readout (+ optional plot); recompute on release."""

    widget_name = "explorer"

    def __init__(self, tiles: Sequence[int], value: int, *, busy_after: float, description: str):
        import ipywidgets as w

        tiles = _choices(tiles)
        if value not in tiles:
            raise WidgetArgumentError(f"TILE={value} is not one of the choices {tiles}")
        self.busy_after = float(busy_after)
        self.slider = w.SelectionSlider(options=tiles, value=value, description=description,
                                        continuous_update=False,
                                        style={"description_width": "initial"})
        self.status = w.HTML(_status("idle"))
        self.readout = w.HTML()
        self.values: dict[str, object] = {}
        self.error: str | None = None
        self._lock = threading.Lock()           # one recompute at a time
        self._status_lock = threading.Lock()    # the busy timer against the final status
        self.slider.observe(self._on_change, names="value")

    # -- the part subclasses fill in -------------------------------------------------------
    def _compute(self, tile: int) -> tuple[list, str]:
        """Rows for the readout and a note, for `tile` (may raise)."""
        raise NotImplementedError

    def _draw(self, tile: int) -> None:
        """Redraw a plot for `tile` (default: none)."""

    # -- machinery ------------------------------------------------------------------------
    def _on_change(self, change) -> None:
        self.update(change["new"])

    def select(self, tile: int) -> None:
        """Move the slider to `tile` (a recompute follows, as when a student releases it)."""
        if tile not in self.slider.options:
            raise WidgetArgumentError(
                f"TILE={tile} is not one of the choices {list(self.slider.options)}")
        if self.slider.value == tile:
            self.update(tile)
        else:
            self.slider.value = tile

    def _show_busy(self, tile: int, done: threading.Event) -> None:
        """The busy timer's action: "working" unless the recompute has finished (checked
        under the lock the final status is written under, so a late timer cannot leave
        "working" on show after the result)."""
        with self._status_lock:
            if not done.is_set():
                self.status.value = _status("busy", f"working on TILE={tile} …")

    def _finish(self, done: threading.Event, timer: threading.Timer, state: str,
                text: str) -> None:
        with self._status_lock:
            done.set()
            timer.cancel()
            self.status.value = _status(state, text)

    def update(self, tile: int) -> None:
        """Recompute and redraw for `tile`; failures end up in the status line."""
        with self._lock:
            done = threading.Event()
            timer = threading.Timer(self.busy_after, self._show_busy, args=(tile, done))
            timer.daemon = True
            timer.start()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    rows, note = self._compute(tile)
                    self._draw(tile)
            except Exception as exc:  # a student's mistake: one short line, no traceback
                self.error = _short(exc)
                self.values = {}
                self.readout.value = _readout(self.widget_name, [])
                self._finish(done, timer, "error", f"TILE={tile}: {self.error}")
                return
            except BaseException:     # the kernel interrupted (Kernel > Interrupt)
                self.error = "interrupted"
                self._finish(done, timer, "error", f"TILE={tile}: interrupted")
                raise
            self.error = None
            self.values = {name: value for name, _, value, _ in rows}
            self.readout.value = _readout(self.widget_name, rows, note)
            warned = [_first_line(str(c.message)) for c in caught]
            self._finish(done, timer, "idle", f"Warning: {warned[0]}" if warned else "")

    def _children(self) -> list:
        return [self.slider, self.status, self.readout]

    @property
    def widget(self):
        """The whole UI as one ipywidgets box (what the notebook displays)."""
        import ipywidgets as w

        if not hasattr(self, "_box"):
            self._box = w.VBox(self._children())
        return self._box

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


class RooflineExplorer(_Explorer):
    """Lesson 01: the tiled kernel's intensity 0.25·TILE on a GPU's roofline."""

    widget_name = "roofline-explorer"

    def __init__(self, gpu: str = "H200 SXM", tiles: Sequence[int] = (1, 2, 4, 8, 16, 32),
                 value: int = 32, *, plot: bool = True, busy_after: float = BUSY_AFTER_S):
        import ipywidgets as w

        from .roofline import GPUS, gpu_spec

        try:
            gpu_spec(gpu)
        except KeyError as exc:
            raise WidgetArgumentError(exc.args[0]) from None
        super().__init__(tiles, value, busy_after=busy_after, description="TILE")
        self.gpu = w.Dropdown(options=list(GPUS), value=gpu, description="GPU")
        self.gpu.observe(lambda change: self.update(self.slider.value), names="value")
        self.plot = w.Output() if plot else None
        self._pngs: dict = {}                   # (GPU, TILE) -> the plot drawn for them
        self.update(value)

    def _children(self) -> list:
        top = [self.gpu, self.slider, self.status, self.readout]
        return top + ([self.plot] if self.plot is not None else [])

    def _compute(self, tile):
        from .roofline import attainable, gpu_spec, naive_sgemm_intensity, tiled_sgemm_intensity

        spec = gpu_spec(self.gpu.value)
        intensity = tiled_sgemm_intensity(tile)
        bound = attainable(intensity, spec)
        naive = attainable(naive_sgemm_intensity(), spec)
        regime = "memory-bound" if intensity < spec.ridge_point else "compute-bound"
        rows = [
            ("tile", "TILE", tile, str(tile)),
            ("intensity", "intensity (FLOP/B)", intensity, f"{intensity:g}"),
            ("bytes_per_fma", "bytes requested per FMA", 8 / tile, f"{8 / tile:g}"),
            ("ridge", f"ridge of the {spec.name} (FLOP/B)", round(spec.ridge_point, 2),
             f"{spec.ridge_point:.2f}"),
            ("bound_tflops", "roofline bound (TFLOP/s)", round(bound / 1e12, 3),
             f"{bound / 1e12:.2f}"),
            ("speedup_bound", "bound / naive bound", round(bound / naive, 3),
             f"{bound / naive:.1f}x"),
            ("regime", "regime", regime, regime),
        ]
        note = (f"Bound = min(peak FP32, intensity x DRAM bandwidth) with the {spec.name}'s "
                f"datasheet figures, counting every requested byte as DRAM traffic.")
        return rows, note

    def _draw(self, tile):
        from IPython import get_ipython

        if self.plot is None or get_ipython() is None:
            return  # no notebook to draw in (a script or a test): the readout is enough
        from IPython.display import Image, display

        key = (self.gpu.value, tile)
        png = self._pngs.get(key)
        if png is None:
            from .figure_cache import cached_png

            png = self._pngs[key] = cached_png("RooflineExplorer", key,
                                               lambda: self._render(tile))
        with self.plot:
            self.plot.clear_output(wait=True)
            display(Image(data=png, format="png"))

    def _render(self, tile) -> bytes:
        """The roofline with the naive kernel and TILE's point, as PNG bytes: drawn once
        (a fixed layout, no tight bounding box to measure first), kept per GPU and TILE."""
        import io

        import matplotlib.pyplot as plt

        from .roofline import naive_sgemm_intensity, plot_roofline, tiled_sgemm_intensity

        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        fig.subplots_adjust(left=0.12, right=0.97, bottom=0.12, top=0.93)   # no layout pass
        try:
            plot_roofline(self.gpu.value, [("naive", naive_sgemm_intensity()),
                                           (f"tiled, TILE={tile}", tiled_sgemm_intensity(tile))],
                          ax=ax)
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
        finally:
            plt.close(fig)
        return buf.getvalue()


class TileExplorer(_Explorer):
    """Lesson 03: recompile the tiled kernel for the chosen TILE and measure or count it."""

    widget_name = "tile-explorer"

    def __init__(self, N: int, *, tiles: Sequence[int] | None = None, value: int | None = None,
                 source: str | None = None,
                 measure: Callable | None = None, busy_after: float = BUSY_AFTER_S):
        from .sgemm import measure_tiled, valid_tiles

        try:
            N = operator.index(N)
        except TypeError:
            N = 0
        allowed = valid_tiles(N) if N >= 1 else []
        if not allowed:
            raise WidgetArgumentError(f"N is the matrix size, a whole number of 1 or more, "
                                      f"not {N!r}")
        tiles = allowed if tiles is None else _choices(tiles)
        bad = [t for t in tiles if t not in allowed]
        if bad:
            raise WidgetArgumentError(
                f"TILE {bad} cannot run at N={N}: the kernel needs a divisor of N up to 32, "
                f"i.e. one of {allowed}")
        value = max(tiles) if value is None else value
        super().__init__(tiles, value, busy_after=busy_after, description=f"TILE (N={N})")
        self.N = N
        self.source = source
        self.measure = measure or measure_tiled
        self._seen: dict = {}                   # TILE -> what the emulator counted
        self.update(value)

    def _compute(self, tile):
        m = self._seen.get(tile)
        if m is None:
            m = self.measure(self.N, tile, source=self.source)
            if m.backend == "emulator":     # deterministic: a TILE seen before costs nothing
                self._seen[tile] = m
        rows = [("tile", "TILE", tile, str(tile)),
                ("backend", "backend", m.backend, m.backend),
                ("relative_error", "max relative error vs NumPy", float(f"{m.relative_error:.1e}"),
                 f"{m.relative_error:.1e}"),
                ("requested_bytes", "global bytes requested", m.requested_bytes,
                 f"{m.requested_bytes:,}"),
                ("bytes_per_fma", "bytes requested per FMA", m.bytes_per_fma,
                 f"{m.bytes_per_fma:g}")]
        for name, label in (("global_load_requests", "global load requests"),
                            ("global_load_sectors", "global load sectors"),
                            ("shared_load_instructions", "shared load requests")):
            value = getattr(m, name)
            if value is not None:
                rows.append((name, label, value, f"{value:,}"))
        if m.gflops is not None:
            rows += [("median_ms", "median time (ms)", m.median_ms, f"{m.median_ms:.4g}"),
                     ("gflops", "GFLOP/s", round(m.gflops, 1), f"{m.gflops:,.0f}")]
            note = "Measured on this GPU with CUDA events; bytes from the formula 8·N³/TILE."
        else:
            note = ("Counted by the CPU emulator: exact for this source, but no time: the CPU "
                    "says nothing about a GPU's speed.")
        return rows, note


def roofline_explorer(gpu: str = "H200 SXM", tiles: Sequence[int] = (1, 2, 4, 8, 16, 32),
                      value: int = 32, **kwargs) -> RooflineExplorer:
    """Lesson 01's slider: TILE moves the tiled kernel's point on `gpu`'s roofline.

    `gpu`: a name in `tilinglib.roofline.GPUS` (the menu offers all of them); `tiles`: the
    slider's values; `value`: where it starts. Display the result in a notebook cell."""
    return RooflineExplorer(gpu, tiles, value, **kwargs)


def tile_explorer(N: int, **kwargs) -> TileExplorer:
    """Lesson 03's slider: recompile the tiled kernel at size `N` for each released TILE.

    The slider offers only `tilinglib.sgemm.valid_tiles(N)` (divisors of N up to 32), or
    the `tiles=` you pass (a subset of them). `source=`: your own version of the kernel
    (same name and parameters). On a GPU it is timed; on the emulator its accesses are
    counted. `measure=` replaces `tilinglib.sgemm.measure_tiled` (for tests)."""
    return TileExplorer(N, **kwargs)


#: The values lessons 07 and 08's tile-shape controls start from (powers of two, and APAD's
#: paddings); each control offers those of them that `tilinglib.ladder` accepts with the
#: other controls where they are.
LADDER_CANDIDATES = {"TILE": (8, 16, 24, 32), "BM": (16, 32, 64, 128, 256),
                     "BN": (16, 32, 64, 128, 256), "BK": (4, 8, 16, 32),
                     "TM": (1, 2, 4, 8, 16), "TN": (1, 2, 4, 8, 16),
                     "WM": (16, 32, 64, 128, 256), "WN": (16, 32, 64, 128, 256),
                     "WMITER": (1, 2, 4), "WNITER": (1, 2, 4), "APAD": (0, 4, 8)}


class LadderExplorer:
    """Lessons 07 and 08: one control per tile-shape choice of a ladder step
    (`tilinglib.ladder`).

    A parameter that can change alone gets a slider; parameters that the step's rules tie
    together (`Step.joint`, e.g. lesson 08's warp layout WM, WN, WMITER, WNITER, TM, TN) get
    one dropdown whose options are every valid combination of their candidate values, with a
    readable label (``"warp 64x32, 1x4 iterations, thread 4x4"``). Each control offers only
    what `Step.valid` accepts with the other controls where they are (and block tiles that
    divide N, so the counts are the formulas' shape); the options are redone after every
    release. On release the step is recompiled with the new ``-D`` options and run by
    `ladder.measure` (timed, with ptxas's registers, on a GPU; counted on the emulator).

    Attributes as the other explorers: `.sliders` (parameter name -> SelectionSlider, for
    the parameters outside any joint group), `.joints` (group name -> Dropdown, whose value
    is the tuple of the group's values), `.controls` (both, in the step's parameter order),
    `.params`, `.status`, `.readout`, `.values`, `.error`, `.select(**params)`, `.widget`."""

    widget_name = "ladder-explorer"

    def __init__(self, step, N: int, *, value=None, candidates=None, measure=None,
                 busy_after: float = BUSY_AFTER_S):
        import ipywidgets as w

        from . import ladder

        try:
            self.step = ladder.get(step)
        except ArgumentError as exc:
            raise WidgetArgumentError(str(exc)) from None
        try:
            N = operator.index(N)
        except TypeError:
            N = 0
        if N < 1:
            raise WidgetArgumentError(f"N is the matrix size, a whole number of 1 or more, "
                                      f"not {N!r}")
        self.N = N
        try:
            params = self.step.resolve(value)
        except ArgumentError as exc:
            raise WidgetArgumentError(str(exc)) from None
        why = self.step.valid(params) or self._shape_error(params)
        if why:
            raise WidgetArgumentError(f"the starting shape {params} cannot run: {why}")
        self.candidates = {k: tuple(LADDER_CANDIDATES.get(k, ())) + (params[k],)
                           for k in params}
        for k, vs in (candidates or {}).items():
            if k not in params:
                raise WidgetArgumentError(f"{self.step.name!r} has no parameter {k!r}; its "
                                          f"parameters are {', '.join(params)}")
            least = 0 if k in self.step.may_be_zero else 1
            self.candidates[k] = tuple(_choices(vs, least)) + (params[k],)
        self._joint_of = {k: g for g in self.step.joint for k in g.parameters}
        self._joint_cache: dict = {}
        self.measure = measure or ladder.measure
        self.busy_after = float(busy_after)
        self._adjusting = False
        self.sliders: dict = {}
        self.joints: dict = {}
        self.controls: dict = {}
        for k in params:
            group = self._joint_of.get(k)
            if group is None:
                s = w.SelectionSlider(options=self._options(k, params), value=params[k],
                                      description=k, continuous_update=False,
                                      style={"description_width": "initial"})
                self.sliders[k] = self.controls[k] = s
            elif group.name not in self.joints:
                s = w.Dropdown(options=self._joint_options(group, params),
                               value=tuple(params[m] for m in group.parameters),
                               description=group.name, style={"description_width": "initial"},
                               layout=w.Layout(width="max-content"))
                self.joints[group.name] = self.controls[group.name] = s
            else:
                continue
            s.observe(self._on_change, names="value")
        self.status = w.HTML(_status("idle"))
        self.readout = w.HTML()
        self.values: dict[str, object] = {}
        self.error: str | None = None
        self._lock = threading.Lock()
        self.update()

    def _shape_error(self, params) -> str | None:
        if self.step.square_only:
            return self.step.shape_error(self.N, self.N, self.N, params)
        bad = [k for k in ("BM", "BN", "BK") if k in params and self.N % params[k]]
        if bad:
            return f"{', '.join(f'{k}={params[k]}' for k in bad)} does not divide N={self.N}"
        return None

    def _runs(self, params) -> bool:
        return self.step.valid(params) is None and self._shape_error(params) is None

    def _options(self, name: str, params) -> list[int]:
        return [v for v in sorted(set(self.candidates[name])) if self._runs({**params, name: v})]

    def _joint_options(self, group, params) -> list[tuple[str, tuple]]:
        """(label, values) for every combination of the group's candidate values that runs
        with the other parameters as in `params`, in the order of the group's parameters."""
        import itertools

        names = group.parameters
        others = tuple((k, v) for k, v in params.items() if k not in names)
        key = (group.name, others)
        cached = self._joint_cache.get(key)
        if cached is not None:
            return list(cached)
        out = []
        for combo in itertools.product(*(sorted(set(self.candidates[k])) for k in names)):
            p = {**params, **dict(zip(names, combo))}
            if self._runs(p):
                out.append((group.describe(p), combo))
        self._joint_cache[key] = tuple(out)       # the same other controls: the same list
        return out

    @property
    def params(self) -> dict[str, int]:
        """The tile shape the controls show now, in the step's parameter order."""
        shown = {k: s.value for k, s in self.sliders.items()}
        for group in self.step.joint:
            if group.name in self.joints:
                shown.update(zip(group.parameters, self.joints[group.name].value))
        return {k: shown[k] for k in self.step.parameters}

    def _on_change(self, change) -> None:
        if not self._adjusting:
            self.update()

    def select(self, **params) -> None:
        """Set parameters (e.g. ``select(BM=64)``, or a whole warp layout ``select(WM=32,
        WN=64, WMITER=2, WNITER=2, TM=4, TN=4)``); one recompute follows.

        A parameter of a joint group takes the group's other values from where they are
        now; the combination must be one the group's dropdown offers. Raises
        WidgetArgumentError for an unknown parameter, a value or combination not offered, or
        a set of values that cannot run together (the reason is in the message)."""
        new = {**self.params}
        for k, v in params.items():
            if k not in new:
                raise WidgetArgumentError(f"{self.step.name!r} has no parameter {k!r}; its "
                                          f"parameters are {', '.join(new)}")
            new[k] = v
        for k in params:
            if k in self.sliders and new[k] not in self._options(k, new):
                raise WidgetArgumentError(f"{k}={new[k]!r} is not offered; the choices are "
                                          f"{list(self.sliders[k].options)}")
        for g in self.step.joint:
            if not any(k in params for k in g.parameters):
                continue
            offered = [values for _, values in self._joint_options(g, new)]
            if tuple(new[k] for k in g.parameters) not in offered:
                given = ", ".join(f"{k}={new[k]}" for k in g.parameters)
                raise WidgetArgumentError(
                    f"{given} is not one of the {len(offered)} {g.name}s offered: "
                    f"{', '.join(g.parameters)} change together (see the "
                    f"{g.name!r} dropdown's options)")
        if not self._runs(new):
            why = self.step.valid(new) or self._shape_error(new)
            raise WidgetArgumentError(f"{_shape_text(new)} cannot run: {why}")
        self._adjusting = True
        try:
            for k, s in self.sliders.items():
                s.options = self._options(k, new)
                s.value = new[k]
            for name in self.joints:
                self._refresh_joint(name, new)
        finally:
            self._adjusting = False
        self.update()

    def _refresh_joint(self, name: str, params) -> None:
        group = next(g for g in self.step.joint if g.name == name)
        d = self.joints[name]
        options = self._joint_options(group, params)
        value = tuple(params[k] for k in group.parameters)
        if list(d.options) != options:
            d.options = options
        if d.value != value:
            d.value = value

    def _refresh_options(self) -> None:
        params = self.params
        self._adjusting = True
        try:
            for k, s in self.sliders.items():
                options = self._options(k, params)
                if list(s.options) != options:
                    s.options = options
                    s.value = params[k]
            for name in self.joints:
                self._refresh_joint(name, params)
        finally:
            self._adjusting = False

    def _rows(self, m) -> tuple[list, str]:
        fmt = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
        rows = [(k, k, v, str(v)) for k, v in m.params.items()]
        rows += [("backend", "backend", m.backend, m.backend),
                 ("threads", "threads per block", m.threads, f"{m.threads:,}"),
                 ("shared_bytes", "shared memory per block (B)", m.static_shared_bytes,
                  f"{m.static_shared_bytes:,}"),
                 ("relative_error", "max relative error vs NumPy",
                  float(f"{m.relative_error:.1e}"), f"{m.relative_error:.1e}"),
                 ("global_formula", "global bytes/FMA, formula", m.formula_global_bytes_per_fma,
                  fmt(m.formula_global_bytes_per_fma)),
                 ("shared_formula", "shared bytes/FMA, formula", m.formula_shared_bytes_per_fma,
                  fmt(m.formula_shared_bytes_per_fma))]
        if m.counted_global_bytes_per_fma is not None:
            rows += [("global_counted", "global bytes/FMA, emulator",
                      m.counted_global_bytes_per_fma, fmt(m.counted_global_bytes_per_fma)),
                     ("shared_counted", "shared bytes/FMA, emulator",
                      m.counted_shared_bytes_per_fma, fmt(m.counted_shared_bytes_per_fma))]
        if m.registers is not None:
            rows += [("registers", "registers per thread (ptxas)", m.registers, str(m.registers)),
                     ("local_bytes", "spilled bytes per thread", m.local_bytes,
                      str(m.local_bytes))]
        occ = m.occupancy
        if m.registers is not None or occ.blocks_by_registers is not None:
            rows.append(("occupancy", "occupancy", round(occ.percent, 1),
                         f"{percent(occ.percent)} ({occ.active_blocks} blocks/SM, "
                         f"{' and '.join(occ.limited_by)})"))
        else:
            # No register count: what threads, block slots and shared memory allow is an
            # upper bound only (registers are unknown on the emulator for this shape).
            rows.append(("occupancy_bound", "occupancy without registers",
                         round(occ.percent, 1),
                         f"at most {percent(occ.percent)}: {occ.active_blocks} blocks/SM by "
                         f"{' and '.join(occ.limited_by)}; registers unknown for this shape"))
        if m.gflops is not None:
            rows += [("median_ms", "median time (ms)", m.median_ms, f"{m.median_ms:.4g}"),
                     ("gflops", "GFLOP/s", round(m.gflops, 1), f"{m.gflops:,.0f}")]
            note = (f"Measured on this GPU at N={m.N} with CUDA events; registers from ptxas; "
                    f"bytes per FMA from the formulas.")
        else:
            regs = (f"registers: {m.registers_source}" if m.registers is not None else
                    "no register count for this shape: the emulator has no registers and "
                    "tilinglib/data/ptxas_sm90.json does not list it, so the occupancy is what "
                    "threads and shared memory allow, an upper bound")
            shape = getattr(m, "counted_shape", None)
            where = (f"on the N={m.N} product over K={shape[2]} (whole periods of the tile "
                     f"loop, every one alike, so the bytes per FMA are those of K={m.N}), one "
                     f"block where all blocks are alike" if shape and shape[2] != m.N
                     else f"at N={m.N}")
            note = (f"Counted by the CPU emulator {where}: exact for this source, no time; "
                    f"{regs}.")
        return rows, note

    def update(self) -> None:
        """Recompute for the controls' shape; failures end up in the status line."""
        with self._lock:
            self._refresh_options()
            params = self.params
            shape = _shape_text(params)
            done = threading.Event()

            def busy():
                if not done.is_set():
                    self.status.value = _status("busy", f"working on {shape} …")

            timer = threading.Timer(self.busy_after, busy)
            timer.daemon = True
            timer.start()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    rows, note = self._rows(self.measure(self.step, self.N, params))
            except Exception as exc:  # a mistake: one short line, no traceback
                self.error = _short(exc)
                self.values = {}
                self.readout.value = _readout(self.widget_name, [])
                done.set()
                timer.cancel()
                self.status.value = _status("error", f"{shape}: {self.error}")
                return
            except BaseException:
                done.set()
                timer.cancel()
                self.error = "interrupted"
                self.status.value = _status("error", f"{shape}: interrupted")
                raise
            done.set()
            timer.cancel()
            self.error = None
            self.values = {name: value for name, _, value, _ in rows}
            self.readout.value = _readout(self.widget_name, rows, note)
            warned = [_first_line(str(c.message)) for c in caught]
            self.status.value = _status("idle", f"Warning: {warned[0]}" if warned else "")

    @property
    def widget(self):
        """The whole UI as one ipywidgets box (what the notebook displays)."""
        import ipywidgets as w

        if not hasattr(self, "_box"):
            self._box = w.VBox([*self.controls.values(), self.status, self.readout])
        return self._box

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def _shape_text(params) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def ladder_explorer(step, N: int, **kwargs) -> LadderExplorer:
    """Lessons 07 and 08's controls: every tile-shape parameter of ladder step `step`
    ("coarse", "regtile2d", "warptile", ...) at size `N`, offering only valid shapes; tied
    parameters (`Step.joint`, lesson 08's warp layout) as one dropdown of their valid
    combinations; recompiles and re-counts (emulator) or re-measures (GPU) on release.

    `value=`: the starting shape (a dict, the step's defaults for what it leaves out);
    `candidates=`: values to offer per parameter (0 allowed where the step allows it, as
    APAD); `measure=` replaces `tilinglib.ladder.measure` (for tests). Raises
    WidgetArgumentError for an unknown step or parameter, or a starting shape that cannot
    run at N."""
    return LadderExplorer(step, N, **kwargs)


class SizeExplorer:
    """Lesson 08, section 8: a menu of problem sizes (`tilinglib.tile_choice.SIZES`); for the
    one chosen, the configuration the course picks (`tile_choice.pick_per_size`: the H200's
    fastest correct configuration where the course measured that size, else the wave model),
    its waves on the H200, and the reason, as a sentence.

    Attributes as the other explorers: `.menu` (the Dropdown; its value is (M, N, K)),
    `.readout`, `.status`, `.values` (what the readout shows), `.choice` (the `Choice`),
    `.select(M, N, K)`, `.widget`. `data=`: a `tile_choice.SizesData`, None for the model
    alone (default: the shipped data when there is any)."""

    widget_name = "size-explorer"

    def __init__(self, sizes=None, *, data=...):
        import ipywidgets as w

        from . import tile_choice

        self._data = tile_choice.load_sizes() if data is ... else data
        self.sizes = tuple(tuple(int(v) for v in s) for s in (sizes or tile_choice.SIZES))
        for s in self.sizes:
            if len(s) != 3 or min(s) < 1:
                raise WidgetArgumentError(f"size {s!r}: give (M, N, K), whole numbers >= 1")
        self.menu = w.Dropdown(options=[(f"{M} x {N} x {K}" if not M == N == K else f"N = {N}",
                                         (M, N, K)) for M, N, K in self.sizes],
                               value=self.sizes[0], description="size")
        self.readout = w.HTML()
        self.status = w.HTML(_status("idle"))
        self.values: dict = {}
        self.choice = None
        self.menu.observe(self._on_change, names="value")
        self.update()

    def _on_change(self, change) -> None:
        self.update()

    def select(self, M: int, N: int, K: int) -> None:
        """Show the choice at M x N x K (one of the menu's sizes)."""
        if (M, N, K) not in self.sizes:
            raise WidgetArgumentError(f"{M} x {N} x {K} is not in the menu: "
                                      f"{', '.join('x'.join(map(str, s)) for s in self.sizes)}")
        self.menu.value = (M, N, K)
        self.update()

    def update(self) -> None:
        from . import tile_choice

        M, N, K = self.menu.value
        try:
            c = tile_choice.pick_per_size(N, M=M, K=K, data=self._data)
        except Exception as exc:  # noqa: BLE001 - shown as one line, never a traceback
            self.status.value = _status("error", _short(exc))
            return
        self.choice = c
        w = c.waves
        rows = [("step", "step", c.step, c.step),
                ("shape", "shape", tile_choice.shape_label(c.step, c.params),
                 tile_choice.shape_label(c.step, c.params)),
                ("source", "from", c.source, c.source),
                ("gflops", "GFLOP/s" + (" (predicted)" if c.source != "measured" else ""),
                 round(c.gflops, 1), f"{c.gflops:,.0f}"),
                ("blocks", "blocks", w.blocks, f"{w.blocks:,}"),
                ("blocks_per_sm", "blocks per SM", w.blocks_per_sm, str(w.blocks_per_sm)),
                ("per_wave", "blocks per wave", w.per_wave, f"{w.per_wave:,}"),
                ("waves", "waves", w.waves, str(w.waves)),
                ("busy", "slots busy", round(w.efficiency, 4), percent(100 * w.efficiency))]
        if c.percent_of_cublas is not None:
            rows.append(("percent_of_cublas", "% of cuBLAS", round(c.percent_of_cublas, 1),
                         percent(c.percent_of_cublas)))
        self.values = {name: value for name, _, value, _ in rows}
        self.readout.value = _readout(self.widget_name, rows, c.reason)
        self.status.value = _status("idle")

    @property
    def widget(self):
        """The whole UI as one ipywidgets box (what the notebook displays)."""
        import ipywidgets as w

        if not hasattr(self, "_box"):
            self._box = w.VBox([self.menu, self.status, self.readout])
        return self._box

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def size_explorer(sizes=None, **kwargs) -> SizeExplorer:
    """Lesson 08's menu of problem sizes and the tile shape the course picks for each
    (`SizeExplorer`). Raises WidgetArgumentError for a size that is not (M, N, K) >= 1."""
    return SizeExplorer(sizes, **kwargs)
