"""Arithmetic intensity and the roofline: how fast a kernel can be, given its FLOPs per byte.

Introduced in lesson 01 (the reuse argument). Units throughout: FLOP, bytes, seconds;
FLOP/s and bytes/s in the spec table (so 67e12 is 67 TFLOP/s, 4.8e12 is 4.8 TB/s, decimal
prefixes as vendors use them); intensity in FLOP per byte of DRAM traffic.

The roofline model (Williams, Waterman and Patterson, "Roofline: an insightful visual
performance model for multicore architectures", CACM 52(4), 2009): a kernel of intensity I
can reach at most ``min(peak_flops, I * bandwidth)``; the ridge point
``peak_flops / bandwidth`` is the intensity where the two limits meet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ArgumentError
from .figure_cache import cached

__all__ = [
    "GpuSpec", "GPUS", "gpu_spec", "find_gpu",
    "naive_sgemm_intensity", "tiled_sgemm_intensity", "sgemm_flops",
    "ridge_point", "attainable", "plot_roofline",
]

FP32_BYTES = 4


@dataclass(frozen=True)
class GpuSpec:
    """One GPU's roofline figures.

    `fp32_flops`: peak FP32 rate in FLOP/s (non-tensor-core, an FMA counted as 2 FLOP);
    `dram_bandwidth`: peak DRAM bandwidth in bytes/s; `sms`: streaming multiprocessors;
    `shared_per_sm`: usable shared memory per SM in bytes; `source`: where the figures come
    from (datasheets give peaks at boost clock; measured values say so).
    """

    name: str
    fp32_flops: float
    dram_bandwidth: float
    sms: int
    shared_per_sm: int
    source: str

    @property
    def ridge_point(self) -> float:
        """FLOP per byte where the memory roof meets the compute roof."""
        return self.fp32_flops / self.dram_bandwidth


GPUS: dict[str, GpuSpec] = {
    spec.name: spec for spec in (
        GpuSpec(
            "H200 SXM", 67e12, 4.8e12, 132, 233_472,
            "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM): FP32 67 TFLOPS, HBM3e 4.8 TB/s; "
            "132 SMs and 233,472 B shared memory per SM read through PyCUDA on an H200 "
            "(docs/h200-measurements.md)"),
        GpuSpec(
            "H100 SXM", 67e12, 3.35e12, 132, 233_472,
            "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM): FP32 67 TFLOPS, HBM3 3.35 TB/s; "
            "132 SMs and 228 KB shared memory per SM from the NVIDIA H100 (Hopper) "
            "architecture whitepaper"),
        GpuSpec(
            "A100 SXM 80GB", 19.5e12, 2.039e12, 108, 167_936,
            "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM): FP32 19.5 TFLOPS, HBM2e "
            "2,039 GB/s; 108 SMs and 164 KB shared memory per SM from the NVIDIA A100 "
            "(Ampere) architecture whitepaper"),
        GpuSpec(
            "RTX 4060 Laptop", 14.56e12, 256e9, 24, 102_400,
            "NVIDIA GeForce RTX 4060 Laptop GPU specifications: 3,072 CUDA cores, boost clock "
            "up to 2,370 MHz, 8 GB GDDR6 on a 128-bit bus; FP32 = 2 FLOP x 3,072 x 2.37 GHz, "
            "bandwidth = 16 Gbps x 128 bit / 8 (laptop clocks depend on the maker's power "
            "limit, so a given laptop may reach less); 24 SMs and 100 KB shared memory per "
            "SM for compute capability 8.9 (CUDA C++ Programming Guide)"),
    )
}


def gpu_spec(gpu: str | GpuSpec) -> GpuSpec:
    """The `GpuSpec` for a name in `GPUS` (or a `GpuSpec`, returned as it is).

    Raises KeyError naming the known GPUs when the name is not in the table.
    """
    if isinstance(gpu, GpuSpec):
        return gpu
    try:
        return GPUS[gpu]
    except KeyError:
        raise KeyError(f"no GPU named {gpu!r} in the table; known: {', '.join(GPUS)}. "
                       f"Make your own with GpuSpec(name, fp32_flops, dram_bandwidth, sms, "
                       f"shared_per_sm, source).") from None


def find_gpu(device_name: str) -> GpuSpec | None:
    """The table's entry for a device name as the driver reports it, or None.

    ``"NVIDIA H200"`` -> H200 SXM, ``"NVIDIA H100 80GB HBM3"`` -> H100 SXM,
    ``"NVIDIA A100-SXM4-80GB"`` -> A100 SXM 80GB. PCIe and NVL variants have other peaks and
    are not matched, so a percent of peak is never computed against the wrong card.
    """
    name = device_name.upper().replace("-", " ")
    if "PCIE" in name or "NVL" in name:
        return None
    if "H200" in name:
        return GPUS["H200 SXM"]
    if "H100" in name and ("SXM" in name or "HBM3" in name):
        return GPUS["H100 SXM"]
    if "A100" in name and "SXM" in name and "80" in name:
        return GPUS["A100 SXM 80GB"]
    if "4060" in name and "LAPTOP" in name:
        return GPUS["RTX 4060 Laptop"]
    return None


# ---------------------------------------------------------------------------------------
# Intensity of SGEMM
# ---------------------------------------------------------------------------------------

def sgemm_flops(M: int, N: int, K: int) -> int:
    """FLOPs of C = A·B with A of M x K and B of K x N: 2·M·N·K (one multiply and one add
    per term of each of the M·N dot products of length K). A Python int."""
    for name, value in (("M", M), ("N", N), ("K", K)):
        if int(value) != value or value < 0:
            raise ArgumentError(f"{name} must be a whole number >= 0, got {value!r}")
    return 2 * int(M) * int(N) * int(K)


def naive_sgemm_intensity() -> float:
    """FLOP per byte of the naive kernel, where every load goes to DRAM: 0.25.

    One output element is a dot product of length N: 2N FLOP, and it reads N floats of a
    row of A and N of a column of B, 2N x 4 B = 8N bytes. 2N / 8N = 0.25 FLOP/B, whatever N.
    (Caches make the real traffic smaller; lesson 02 measures by how much.)
    """
    return 2 / (2 * FP32_BYTES)


def tiled_sgemm_intensity(tile: int) -> float:
    """FLOP per byte of DRAM traffic of the TILE x TILE shared-memory kernel: 0.25·TILE.

    Each element loaded into shared memory is used by TILE multiply-adds instead of one, so
    the bytes per FLOP fall by TILE: 4 at TILE=16, 8 at TILE=32. Raises ValueError for a
    tile below 1.
    """
    if int(tile) != tile or tile < 1:
        raise ArgumentError(f"tile must be a whole number >= 1, got {tile!r}")
    return naive_sgemm_intensity() * int(tile)


# ---------------------------------------------------------------------------------------
# The roofline
# ---------------------------------------------------------------------------------------

def ridge_point(gpu: str | GpuSpec) -> float:
    """FLOP per byte at which `gpu` stops being memory-bound: peak FLOP/s / bandwidth.

    H200 SXM: 67e12 / 4.8e12 = 13.96 FLOP/B; H100 SXM: 20.0; A100 SXM 80GB: 9.56.
    """
    return gpu_spec(gpu).ridge_point


def attainable(intensity, gpu: str | GpuSpec):
    """The roofline's bound in FLOP/s: ``min(fp32_flops, intensity * dram_bandwidth)``.

    `intensity` in FLOP/byte, a number or an array (the result has its shape). Raises
    ValueError for negative intensities.
    """
    spec = gpu_spec(gpu)
    values = np.asarray(intensity, dtype=float)
    if np.any(values < 0):
        raise ArgumentError("intensity must be >= 0 FLOP/byte")
    bound = np.minimum(spec.fp32_flops, values * spec.dram_bandwidth)
    return float(bound) if bound.ndim == 0 else bound


def _as_points(points):
    """[(label, intensity, measured FLOP/s or None)] from a dict or a list of tuples."""
    if points is None:
        return []
    if isinstance(points, dict):
        points = list(points.items())
    out = []
    for point in points:
        label, intensity, *rest = point
        out.append((str(label), float(intensity), float(rest[0]) if rest and rest[0] is not None else None))
    return out


@cached("ax")
def plot_roofline(gpu: str | GpuSpec, points=None, ax=None, *, intensity_range=(1 / 64, 256),
                  legend_outside: bool = False, title: str | None = None,
                  title_fontsize: float | None = None):
    """Draw `gpu`'s roofline on log-log axes and mark kernels on it; returns the Axes.

    `points`: kernels to mark, as ``{"naive": 0.25, "tiled 32": 8.0}`` (placed on the roof)
    or a list of ``(label, intensity)`` or ``(label, intensity, measured_flops)`` tuples (a
    measured rate in FLOP/s is drawn as a hollow marker, one shape and colour per kernel; the
    roof at a measured kernel's intensity is a small black dot, drawn once per intensity so
    that two kernels of the same intensity do not hide each other). `ax`: a matplotlib Axes
    to draw into (a new figure when None). `legend_outside`: put the legend to the right of
    the axes instead of inside. The legend has one entry per kernel (its intensity, roof and
    measured rate), not one per marker. `title` (default "Roofline of the <GPU>") and
    `title_fontsize` (points; default matplotlib's) set the title, so that a lesson need
    not change the figure after the call. Axes: x in FLOP/byte, y in TFLOP/s.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    spec = gpu_spec(gpu)
    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(6.4, 4.2))
    lo, hi = intensity_range
    x = np.geomspace(lo, hi, 256)
    (roof,) = ax.loglog(x, attainable(x, spec) / 1e12, color="black", lw=2,
                        label=f"{spec.name} roof")
    handles = [roof]
    ridge = spec.ridge_point
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.annotate(f"ridge {ridge:.1f} FLOP/B", (ridge, spec.fp32_flops / 1e12),
                textcoords="offset points", xytext=(6, -14), fontsize=9, color="grey")
    shapes = "osD^vP*Xh"
    roof_dots = set()
    for i, (label, intensity, measured) in enumerate(_as_points(points)):
        color, shape = f"C{i % 10}", shapes[i % len(shapes)]
        bound = attainable(intensity, spec)
        text = f"{label}: {intensity:.3g} FLOP/B, roof {bound / 1e12:.3g} TFLOP/s"
        if measured is None:
            (mark,) = ax.plot([intensity], [bound / 1e12], shape, color=color, label=text)
            handles.append(mark)
            continue
        if intensity not in roof_dots:
            roof_dots.add(intensity)
            ax.plot([intensity], [bound / 1e12], "o", color="black", ms=4, zorder=3,
                    label=f"_roof at {intensity:.3g} FLOP/B")
        (mark,) = ax.plot([intensity], [measured / 1e12], shape, mfc="none", mew=1.5, ms=8,
                          color=color, label=f"{label} measured: {measured / 1e12:.2f} TFLOP/s")
        handles.append(Line2D([], [], ls="none", marker=shape, mfc="none", mew=1.5, ms=8,
                              color=color, label=f"{text}; measured {measured / 1e12:.2f}"))
    if roof_dots:
        handles.insert(1, Line2D([], [], ls="none", marker="o", color="black", ms=4,
                                 label="roof at a measured kernel's intensity"))
    ax.set_xlabel("arithmetic intensity (FLOP per byte requested from global memory)")
    ax.set_ylabel("attainable FP32 rate (TFLOP/s)")
    ax.set_title(f"Roofline of the {spec.name}" if title is None else title,
                 **({} if title_fontsize is None else {"fontsize": title_fontsize}))
    ax.grid(True, which="both", alpha=0.3)
    where = dict(loc="upper left", bbox_to_anchor=(1.01, 1.0)) if legend_outside else \
        dict(loc="lower right")
    ax.legend(handles=handles, fontsize=8 if not legend_outside else 7, **where)
    from .plots import finished, plain_log_ticks

    plain_log_ticks(ax)
    if own:
        finished(ax.figure)
    return ax
