"""Tests of tilinglib.roofline: intensity formulas, the GPU table, ridge points, the plot."""


import numpy as np
import pytest

from tilinglib import roofline as rl


def test_naive_and_tiled_intensity():
    assert rl.naive_sgemm_intensity() == 0.25
    assert rl.tiled_sgemm_intensity(1) == 0.25
    assert rl.tiled_sgemm_intensity(16) == 4.0
    assert rl.tiled_sgemm_intensity(32) == 8.0
    with pytest.raises(ValueError):
        rl.tiled_sgemm_intensity(0)
    with pytest.raises(ValueError):
        rl.tiled_sgemm_intensity(2.5)


def test_sgemm_flops():
    assert rl.sgemm_flops(4096, 4096, 4096) == 2 * 4096**3 == 137_438_953_472
    assert rl.sgemm_flops(2, 3, 4) == 48
    with pytest.raises(ValueError):
        rl.sgemm_flops(-1, 2, 2)


def test_h200_figures_and_ridge_point():
    h200 = rl.gpu_spec("H200 SXM")
    assert h200.fp32_flops == 67e12
    assert h200.dram_bandwidth == 4.8e12
    assert h200.sms == 132
    assert h200.shared_per_sm == 233_472
    assert rl.ridge_point("H200 SXM") == pytest.approx(13.958, abs=1e-3)
    assert rl.ridge_point("H100 SXM") == pytest.approx(20.0, abs=0.01)
    assert rl.ridge_point("A100 SXM 80GB") == pytest.approx(9.563, abs=1e-3)


def test_every_gpu_has_a_source_and_sane_figures():
    assert len(rl.GPUS) >= 4
    for spec in rl.GPUS.values():
        assert "datasheet" in spec.source.lower() or "specifications" in spec.source.lower()
        assert 1e12 < spec.fp32_flops < 1e15
        assert 1e11 < spec.dram_bandwidth < 1e13


def test_tiled_32_is_still_memory_bound_on_h100_and_h200():
    # The seed's claim: 8 FLOP/B is short of the H100's ridge point.
    for name in ("H100 SXM", "H200 SXM"):
        assert rl.tiled_sgemm_intensity(32) < rl.ridge_point(name)


def test_attainable():
    assert rl.attainable(0.25, "H200 SXM") == pytest.approx(1.2e12)
    assert rl.attainable(8, "H200 SXM") == pytest.approx(38.4e12)
    assert rl.attainable(100, "H200 SXM") == 67e12
    values = rl.attainable(np.array([0.25, 1000.0]), "A100 SXM 80GB")
    assert values.shape == (2,)
    assert values[0] == pytest.approx(0.25 * 2.039e12)
    assert values[1] == 19.5e12
    with pytest.raises(ValueError):
        rl.attainable(-1, "H200 SXM")


def test_unknown_gpu_lists_known_ones():
    with pytest.raises(KeyError, match="H200 SXM"):
        rl.gpu_spec("GTX 480")


@pytest.mark.parametrize("device, expected", [
    ("NVIDIA H200", "H200 SXM"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
    ("NVIDIA GeForce RTX 4060 Laptop GPU", "RTX 4060 Laptop"),
    ("NVIDIA H100 PCIe", None),
    ("NVIDIA H200 NVL", None),
    ("Tesla T4", None),
])
def test_find_gpu(device, expected):
    found = rl.find_gpu(device)
    assert (found.name if found else None) == expected


def test_plot_roofline_draws_roof_and_points():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = rl.plot_roofline("H200 SXM", points=[("naive", 0.25, 6.0e12), ("tiled 32", 8.0)])
    roof = ax.get_lines()[0]
    x, y = roof.get_xdata(), roof.get_ydata()
    assert y.max() == pytest.approx(67.0)             # TFLOP/s
    assert y[0] == pytest.approx(x[0] * 4.8)          # memory roof: I x 4.8 TB/s
    labels = [line.get_label() for line in ax.get_lines()]
    assert any(label.startswith("naive measured") for label in labels)
    assert any("tiled 32: 8 FLOP/B" in label for label in labels)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    plt.close("all")


def test_roofline_legend_has_one_entry_per_kernel_and_no_marker_hides_another():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [("SAXPY", 2 / 12, 0.57e12), ("naive", 0.25, 6.0e12), ("tiled 16", 4.0, 8.1e12),
              ("tiled 32", 8.0, 9.0e12), ("double-buffered 32", 8.0, 9.8e12)]
    ax = rl.plot_roofline("H200 SXM", points)
    entries = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(entries) == 2 + len(points)            # the roof, the roof dots, one per kernel
    assert entries[2].startswith("SAXPY: 0.167 FLOP/B, roof 0.8 TFLOP/s; measured 0.57")
    assert not any("0.166667" in e for e in entries)
    dots = [line for line in ax.get_lines() if line.get_label().startswith("_roof at")]
    assert sorted(float(d.get_xdata()[0]) for d in dots) == [2 / 12, 0.25, 4.0, 8.0]
    measured = [line for line in ax.get_lines() if "measured" in line.get_label()]
    assert len({(m.get_marker(), m.get_color()) for m in measured}) == len(points)
    plt.close("all")


def test_plot_roofline_title_and_its_size():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = rl.plot_roofline("H200 SXM", {"naive": 0.25})
    assert ax.get_title() == "Roofline of the H200 SXM"
    default_size = ax.title.get_fontsize()
    ax2 = rl.plot_roofline("H200 SXM", {"naive": 0.25}, title="points of run 2", title_fontsize=8)
    assert ax2.get_title() == "points of run 2" and ax2.title.get_fontsize() == 8 != default_size
    plt.close("all")
