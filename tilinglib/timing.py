"""Timing a kernel: CUDA events on a GPU, exact counters (and no time) on the CPU emulator.

Introduced in lesson 02 (the naive kernel). On the PyCUDA backend `time_kernel` follows the
usual method (and the one behind docs/h200-measurements.md): copy the inputs to the
GPU once, launch a few untimed warm-ups, then time each of `repeat` launches between two
CUDA events (``pycuda.driver.Event``) and report the median and quartiles. Only the kernel
is timed: no host-device copies, no Python between the events but the launch itself.

On the emulator there is no GPU time to report, and the CPU's time says nothing about a
GPU, so `Timing` carries the launch's `LaunchReport` (global and shared accesses, sectors,
bank conflicts, FLOPs) instead.

Units: milliseconds; GFLOP/s = 1e9 FLOP/s and GB/s = 1e9 bytes/s (decimal, as datasheets).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ArgumentError

from .formatting import percent

__all__ = ["Timing", "time_kernel", "gflops", "gbps"]

EMULATOR_NOTE = ("CPU emulator: no GPU time. How long the CPU takes says nothing about a GPU, "
                 "so no time is reported; the counters in .report are exact for this source "
                 "and this launch.")


def gflops(flops: float, ms: float) -> float:
    """Rate in GFLOP/s of `flops` floating-point operations done in `ms` milliseconds.

    ``gflops(2 * 4096**3, 15.55)`` is about 8,838 (the tiled kernel on an H200). Raises
    ValueError when `ms` is not positive."""
    if not ms > 0:
        raise ArgumentError(f"a time must be > 0 ms to give a rate, got {ms!r}")
    return flops / (ms * 1e-3) / 1e9


def gbps(nbytes: float, ms: float) -> float:
    """Bandwidth in GB/s (1e9 bytes/s) of `nbytes` bytes moved in `ms` milliseconds.

    SAXPY on 2^28 floats moves 12 bytes per element; in 0.96 ms that is about 3,355 GB/s.
    Raises ValueError when `ms` is not positive."""
    if not ms > 0:
        raise ArgumentError(f"a time must be > 0 ms to give a rate, got {ms!r}")
    return nbytes / (ms * 1e-3) / 1e9


@dataclass(frozen=True)
class Timing:
    """The result of `time_kernel`.

    Times are in milliseconds, None on the emulator: `times_ms` (every timed launch, in
    order), `median_ms`, `q1_ms`/`q3_ms` (25th/75th percentiles; `iqr_ms` their
    difference), `min_ms`, `max_ms`. Rates are None unless both the time and the count
    (`flops`, `bytes`) are known: `gflops`, `gbps`, and `percent_of_peak_flops` /
    `percent_of_peak_bandwidth` against the GPU named in `peak_gpu` when the device is in
    `tilinglib.roofline.GPUS`. `report` is the emulator's `LaunchReport` (None on a GPU);
    `note` says in words what the figures are.
    """

    kernel: str
    backend: str
    device: str
    block: tuple
    grid: tuple
    shared: int
    warmup: int
    repeat: int
    times_ms: tuple | None = None
    median_ms: float | None = None
    q1_ms: float | None = None
    q3_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    flops: int | None = None
    bytes: int | None = None
    gflops: float | None = None
    gbps: float | None = None
    percent_of_peak_flops: float | None = None
    percent_of_peak_bandwidth: float | None = None
    peak_gpu: str | None = None
    report: Any = None
    note: str = ""

    @property
    def iqr_ms(self) -> float | None:
        if self.q1_ms is None or self.q3_ms is None:
            return None
        return self.q3_ms - self.q1_ms

    def _rows(self) -> list[tuple[str, str]]:
        rows = [("kernel", self.kernel),
                ("backend", f"{self.backend} ({self.device})"),
                ("launch", f"grid {self.grid} x block {self.block}, shared {self.shared:,} B")]
        if self.median_ms is not None:
            rows.append(("time", f"median {self.median_ms:.4g} ms, IQR {self.iqr_ms:.3g} ms, "
                                 f"min {self.min_ms:.4g}, max {self.max_ms:.4g} "
                                 f"({self.repeat} timed after {self.warmup} warm-ups)"))
        if self.gflops is not None:
            peak = (f" ({percent(self.percent_of_peak_flops, 1)} of the {self.peak_gpu}'s FP32 peak)"
                    if self.percent_of_peak_flops is not None else "")
            rows.append(("compute", f"{self.gflops:,.0f} GFLOP/s{peak}"))
        if self.gbps is not None:
            peak = (f" ({percent(self.percent_of_peak_bandwidth, 1)} of the {self.peak_gpu}'s DRAM "
                    f"bandwidth)" if self.percent_of_peak_bandwidth is not None else "")
            rows.append(("memory", f"{self.gbps:,.0f} GB/s{peak}"))
        if self.gflops is None and self.flops is not None:
            rows.append(("work", f"{self.flops:,} FLOP per launch"))
        if self.gbps is None and self.bytes is not None:
            rows.append(("traffic", f"{self.bytes:,} bytes per launch"))
        if self.note:
            rows.append(("note", self.note))
        return rows

    def __str__(self) -> str:
        width = max(len(k) for k, _ in self._rows())
        text = "\n".join(f"{k:<{width}}  {v}" for k, v in self._rows())
        if self.report is not None:
            text += "\n" + str(self.report)
        return text

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                       f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                       for k, v in self._rows())
        out = f"<table>{body}</table>"
        if self.report is not None:
            report_html = getattr(self.report, "_repr_html_", None)
            out += report_html() if report_html else f"<pre>{html.escape(str(self.report))}</pre>"
        return out


def _host_array(arg):
    if isinstance(arg, (np.ndarray, np.generic)):
        return None
    return getattr(arg, "array", None)


def _percent(value: float | None, peak: float) -> float | None:
    return None if value is None else 100.0 * value / peak


def _time_on_gpu(f, args, block, grid, shared, warmup, repeat) -> tuple[list[float], str]:
    """Event times (ms) of `repeat` launches of `f` on the GPU, and the device's name."""
    import pycuda.driver as drv

    session = getattr(f, "_session", None)
    launch = getattr(f, "_launch_unchecked", f)
    kw = dict(block=block, grid=grid, shared=shared)

    # The first warm-up is a full call with the caller's arguments: it runs the checks,
    # copies In/InOut arrays in and Out/InOut arrays back, so the caller sees its results.
    f(*args, **kw)

    allocations, device_args = [], []
    for arg in args:
        array = _host_array(arg)
        if array is None:
            device_args.append(arg)
            continue
        buffer = drv.mem_alloc(max(array.nbytes, 1))
        drv.memcpy_htod(buffer, array)
        allocations.append(buffer)
        device_args.append(buffer)
    times = []
    try:
        for _ in range(warmup - 1):
            launch(*device_args, **kw)
        start, end = drv.Event(), drv.Event()
        for _ in range(repeat):
            start.record()
            launch(*device_args, **kw)
            end.record()
            if session is not None:
                with session.guard(f"timing {getattr(f, 'name', 'the kernel')}"):
                    end.synchronize()
            else:
                end.synchronize()
            times.append(start.time_till(end))
    finally:
        if session is None or session.lost is None:
            for buffer in allocations:
                buffer.free()
    device = session.device_name if session is not None else str(drv.Context.get_device().name())
    return times, device


def time_kernel(f, *args, block, grid, shared: int = 0, warmup: int = 3, repeat: int = 10,
                flops: int | None = None, bytes: int | None = None) -> Timing:
    """Time kernel `f` launched with `args` (as you would call it) and return a `Timing`.

    `f`: a function from ``mod.get_function(name)``, on either backend. `block`, `grid`,
    `shared`: the launch, as for the call. `warmup` (>= 1): untimed launches first; the
    first one is the ordinary checked call, so afterwards your ``Out`` arrays hold one
    launch's results. `repeat` (>= 1): timed launches. `flops`, `bytes`: the work and the
    DRAM traffic of one launch (e.g. ``tl.roofline.sgemm_flops(N, N, N)``, or
    ``12 * n`` for SAXPY), for GFLOP/s and GB/s.

    On a GPU: inputs are copied to the device once; each timed launch sits between two
    CUDA events. On the emulator (a function with a ``last_report``): one launch, no times,
    and the `LaunchReport` in ``.report``.

    Raises ValueError for warmup < 1 or repeat < 1, and whatever the launch raises
    (`KernelArgumentError`, `LaunchError`, `ContextLostError`, ...).
    """
    if warmup < 1 or repeat < 1:
        raise ArgumentError(f"warmup and repeat must be at least 1, got warmup={warmup}, "
                         f"repeat={repeat}")
    name = str(getattr(f, "name", None) or "kernel")
    def as_tuple(value):
        return tuple(value) if isinstance(value, (tuple, list)) else (value,)

    common = dict(kernel=name, block=as_tuple(block), grid=as_tuple(grid),
                  shared=int(shared or 0), flops=flops, bytes=bytes)

    if hasattr(f, "last_report"):
        f(*args, block=block, grid=grid, shared=shared)
        return Timing(backend="emulator", device="CPU emulator", warmup=0, repeat=1,
                      report=f.last_report, note=EMULATOR_NOTE, **common)

    times, device = _time_on_gpu(f, args, block, grid, shared, warmup, repeat)
    values = np.asarray(times, dtype=float)
    median = float(np.median(values))
    q1, q3 = (float(v) for v in np.percentile(values, [25, 75]))
    rate = gflops(flops, median) if flops is not None else None
    bandwidth = gbps(bytes, median) if bytes is not None else None

    from .roofline import find_gpu

    spec = find_gpu(device)
    return Timing(
        backend="pycuda", device=device, warmup=warmup, repeat=repeat,
        times_ms=tuple(float(t) for t in times), median_ms=median, q1_ms=q1, q3_ms=q3,
        min_ms=float(values.min()), max_ms=float(values.max()),
        gflops=rate, gbps=bandwidth,
        percent_of_peak_flops=_percent(rate * 1e9 if rate is not None else None,
                                       spec.fp32_flops) if spec else None,
        percent_of_peak_bandwidth=_percent(bandwidth * 1e9 if bandwidth is not None else None,
                                           spec.dram_bandwidth) if spec else None,
        peak_gpu=spec.name if spec else None,
        note=(f"CUDA events around each launch; median of {repeat} after {warmup} warm-ups; "
              f"no copies timed."),
        **common)
