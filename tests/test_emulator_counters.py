"""Counters of the emulator (tilinglib.toolchain.model.memory / report) against Nsight Compute's
formulas, and the seed's kernels bit for bit against a float32 NumPy loop in k order.

The H200 readings these formulas come from are in docs/h200-measurements.md
(N=1024, `ncu --clock-control none`); `H200_NCU` below keeps the ones the emulator must
reproduce, and `test_formulas_reproduce_the_h200_readings` ties the two together.
"""

from __future__ import annotations

import numpy as np
import pytest

from tilinglib import kernels
from tilinglib.emulator import In, Out, SourceModule

HERE_CONF = __import__("pathlib").Path(__file__).parent / "kernels" / "conformance"

# Nsight Compute on the H200, N = 1024, one launch each (docs/h200-measurements.md).
H200_NCU = {
    "naive32": {"ld_requests": 67_108_864, "ld_sectors": 167_772_160, "ffma": 1_073_741_824},
    "tiled32": {"ld_requests": 2_097_152, "ld_sectors": 8_388_608, "lds": 41_943_040,
                "sts": 2_097_152},
    "tiled32pad": {"ld_requests": 2_097_152, "ld_sectors": 8_388_608, "lds": 67_108_864,
                   "sts": 2_097_152},
    "tiled16": {"ld_requests": 4_194_304, "ld_sectors": 16_777_216, "lds": 41_943_040,
                "sts": 4_194_304},
    "tiled16pad": {"ld_requests": 4_194_304, "ld_sectors": 16_777_216, "lds": 67_108_864,
                   "sts": 4_194_304},
    "transpose": {"lds": 32_768, "lds_wavefronts_unpadded": 1_048_709,
                  "lds_wavefronts_padded": 33_053},
}

# More readings of the same kind, N = 1024, from `python -m tilinglib.devtools.bench --ncu` on the
# H200 (bench/results/reference_h200_bench.json): (ld requests, ld sectors, st requests,
# st sectors, shared ld instructions, shared st instructions).
H200_BENCH = {
    ("naive", 16, 0): (67_108_864, 134_217_728, 32_768, 131_072, 0, 0),
    ("naive", 32, 0): (67_108_864, 167_772_160, 32_768, 131_072, 0, 0),
    ("tiled", 4, 0): (33_554_432, 134_217_728, 65_536, 262_144, 83_886_080, 33_554_432),
    ("tiled", 4, 1): (33_554_432, 134_217_728, 65_536, 262_144, 134_217_728, 33_554_432),
    ("tiled", 8, 0): (8_388_608, 33_554_432, 32_768, 131_072, 41_943_040, 8_388_608),
    ("tiled", 8, 1): (8_388_608, 33_554_432, 32_768, 131_072, 67_108_864, 8_388_608),
    ("tiled", 16, 1): (4_194_304, 16_777_216, 32_768, 131_072, 67_108_864, 4_194_304),
    ("tiled", 32, 1): (2_097_152, 8_388_608, 32_768, 131_072, 67_108_864, 2_097_152),
}


def naive_formulas(N):
    return {"ld_requests": 2 * N**3 // 32, "ld_sectors": 5 * N**3 // 32, "ffma": N**3}


def tiled_formulas(N, tile):
    requests = 2 * N**3 // (32 * tile)
    return {"ld_requests": requests, "ld_sectors": 4 * requests, "lds": 2 * N**3 // 32,
            "sts": 2 * N**3 // (32 * tile)}


def test_formulas_reproduce_the_h200_readings():
    N = 1024
    assert naive_formulas(N) == H200_NCU["naive32"]
    for tile, pad in [(32, ""), (32, "pad"), (16, ""), (16, "pad")]:
        f = tiled_formulas(N, tile)
        m = H200_NCU[f"tiled{tile}{pad}"]
        assert (f["ld_requests"], f["ld_sectors"], f["sts"]) == \
            (m["ld_requests"], m["ld_sectors"], m["sts"])
        if pad:   # no LDS.128 merge with padding: ncu counts what the source says
            assert f["lds"] == m["lds"]
        else:     # As[ty][k..k+3] is one LDS.128: 1 + 4 loads per 4 values of k, not 8
            assert f["lds"] * 5 // 8 == m["lds"]
    t = H200_NCU["transpose"]
    assert t["lds"] == N * N // 32
    # 32-way conflict unpadded, none padded (ncu adds a little arbitration noise).
    assert abs(t["lds_wavefronts_unpadded"] - 32 * t["lds"]) / (32 * t["lds"]) < 1e-3
    assert abs(t["lds_wavefronts_padded"] - t["lds"]) / t["lds"] < 0.01


def _emulated_counts(kind, block, pad, N):
    """(ld req, ld sect, st req, st sect, shared ld, shared st) of the seed's kernel."""
    A, B = _matrices(N)
    if kind == "naive":
        _, r = _launch("sgemm_naive", N, A, B, block=(block, block, 1))
    else:
        _, r = _launch("sgemm_tiled", N, A, B, [f"-DTILE={block}", f"-DPAD={pad}"],
                       block=(block, block, 1))
    return (r.global_load_requests, r.global_load_sectors, r.global_store_requests,
            r.global_store_sectors, r.shared_load_instructions, r.shared_store_instructions)


@pytest.mark.parametrize("key", list(H200_BENCH), ids=[f"{k}{b}p{p}" for k, b, p in H200_BENCH])
def test_emulator_at_small_n_scales_to_the_h200_readings(key):
    # Every count is a polynomial in N: loads and shared accesses go as N^3, stores as
    # N^2. Run at N=64 and scale to 1024. Shared loads equal ncu's wherever nvcc could not
    # merge them (padding); unpadded, nvcc's LDS.128 leaves 5/8 of them.
    kind, block, pad = key
    s = 1024 // 64
    got = _emulated_counts(kind, block, pad, 64)
    scaled = (got[0] * s**3, got[1] * s**3, got[2] * s**2, got[3] * s**2, got[4] * s**3,
              got[5] * s**3)
    want = H200_BENCH[key]
    assert scaled[:4] == want[:4]
    assert scaled[5] == want[5]
    if kind == "tiled" and not pad:
        assert scaled[4] * 5 // 8 == want[4]
    else:
        assert scaled[4] == want[4]


def _matrices(N, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((N, N)).astype(np.float32),
            rng.standard_normal((N, N)).astype(np.float32))


def _k_order_reference(A, B, fused=True):
    """C[i, j] = fma(A[i,k], B[k,j], ...fma(A[i,0], B[0,j], 0)) in float32, k in order: what
    the seed's `sum += As[ty][k] * Bs[k][tx]` computes on a GPU (and on the emulator) under
    nvcc's default -fmad=true, one FFMA per k. The float32 product is exact in float64, so
    one rounding of the float64 sum is the FFMA (up to double-rounding ties, none in these
    matrices). `fused=False`: a float32 multiply and a float32 add (-fmad=false)."""
    N = A.shape[0]
    C = np.zeros((N, N), np.float32)
    for k in range(N):
        if fused:
            C = (A[:, k:k + 1].astype(np.float64) * B[k:k + 1, :] + C).astype(np.float32)
        else:
            C = C + np.multiply(A[:, k:k + 1], B[k:k + 1, :], dtype=np.float32)
    return C


def _launch(name, N, A, B, options=None, block=(32, 32, 1)):
    kernel = {"sgemm_naive": "sgemmNaive", "sgemm_tiled": "sgemmTiled"}[name]
    f = SourceModule(kernels.load(name), options=options).get_function(kernel)
    C = np.zeros((N, N), np.float32)
    grid = (-(-N // block[0]), -(-N // block[1]))
    f(np.int32(N), In(A), In(B), Out(C), block=block, grid=grid, hazards="raise")
    return C, f.last_report


TILES = [t for t in range(1, 33)]


@pytest.mark.parametrize("pad", [0, 1])
@pytest.mark.parametrize("tile", TILES)
def test_seed_tiled_bit_exact_every_tile(tile, pad):
    N = tile * max(2, -(-16 // tile))     # at least two tiles, and N >= 16
    A, B = _matrices(N, seed=tile)
    C, report = _launch("sgemm_tiled", N, A, B, [f"-DTILE={tile}", f"-DPAD={pad}"],
                        block=(tile, tile, 1))
    assert np.array_equal(C, _k_order_reference(A, B))
    assert report.hazards == ()
    assert report.flops == 2 * N**3
    assert report.shared_bytes == 2 * tile * (tile + pad) * 4


@pytest.mark.parametrize("block", [(32, 32, 1), (16, 16, 1), (8, 4, 1)])
def test_seed_naive_bit_exact(block):
    N = 48
    A, B = _matrices(N)
    C, report = _launch("sgemm_naive", N, A, B, block=block)
    assert np.array_equal(C, _k_order_reference(A, B))
    assert report.flops == 2 * N**3
    C2, report2 = _launch("sgemm_naive", N, A, B, options=["-fmad=false"], block=block)
    assert np.array_equal(C2, _k_order_reference(A, B, fused=False))
    assert not np.array_equal(C2, C)        # the two roundings differ somewhere
    assert report2.flops == report.flops and report2 == report


@pytest.mark.parametrize("N", [32, 64])
def test_naive_counters_match_ncu_formulas(N):
    A, B = _matrices(N)
    _, r = _launch("sgemm_naive", N, A, B)
    f = naive_formulas(N)
    assert r.global_load_requests == f["ld_requests"]
    assert r.global_load_sectors == f["ld_sectors"]
    assert r.flops == 2 * f["ffma"]
    assert r.global_store_requests == N * N // 32 and r.global_store_sectors == N * N // 8
    assert r.global_load_bytes_requested == 8 * N**3
    assert r.shared_load_instructions == r.shared_store_instructions == 0


@pytest.mark.parametrize("tile", [8, 16, 32])
@pytest.mark.parametrize("pad", [0, 1])
def test_tiled_counters_match_ncu_formulas(tile, pad):
    N = 64
    A, B = _matrices(N)
    _, r = _launch("sgemm_tiled", N, A, B, [f"-DTILE={tile}", f"-DPAD={pad}"],
                   block=(tile, tile, 1))
    f = tiled_formulas(N, tile)
    assert r.global_load_requests == f["ld_requests"]
    assert r.global_load_sectors == f["ld_sectors"]
    assert r.shared_load_instructions == f["lds"]
    assert r.shared_store_instructions == f["sts"]
    # Loads: As[ty][k] is a broadcast per row, Bs[k][tx] consecutive words: no conflict.
    assert r.shared_load_wavefronts == r.shared_load_instructions
    conflict_free_stores = not pad or tile == 32
    expected_st = f["sts"] if conflict_free_stores else 2 * f["sts"]
    assert r.shared_store_wavefronts == expected_st
    assert r.shared_bank_conflicts == expected_st - f["sts"]
    assert r.barriers == 2 * (N // tile) * (N // tile) ** 2


def test_tile16_padded_store_conflict_is_two_way():
    # A warp spans rows ty and ty+1 of a [16][17] tile: (ty+1)*17 + 15 is in the bank of
    # ty*17 + 0 + 32, so the store takes two wavefronts.
    N = 32
    A, B = _matrices(N)
    _, plain = _launch("sgemm_tiled", N, A, B, ["-DTILE=16"], block=(16, 16, 1))
    _, padded = _launch("sgemm_tiled", N, A, B, ["-DTILE=16", "-DPAD=1"], block=(16, 16, 1))
    assert plain.shared_store_wavefronts == plain.shared_store_instructions
    assert padded.shared_store_wavefronts == 2 * padded.shared_store_instructions


@pytest.mark.parametrize("pad, way", [(0, 32), (1, 1)])
def test_transpose_column_read_conflict(pad, way):
    n = 64
    src = (HERE_CONF / "transpose_square.cu").read_text()
    f = SourceModule(src, options=[f"-DPAD={pad}"]).get_function("transpose_square")
    a = np.arange(n * n, dtype=np.float32).reshape(n, n)
    out = np.zeros_like(a)
    f(np.int32(n), In(a), Out(out), block=(32, 32, 1), grid=(2, 2))
    r = f.last_report
    assert np.array_equal(out, a.T)
    assert r.shared_load_instructions == n * n // 32
    assert r.shared_load_wavefronts == way * r.shared_load_instructions
    assert r.shared_store_wavefronts == r.shared_store_instructions


def test_partial_warps_and_strided_access():
    # 48 threads: warp 0 full, warp 1 has 16 lanes; a stride-2 float read covers 2 sectors
    # per 8 lanes.
    src = """
    __global__ void k(const float* x, float* y) {
        y[threadIdx.x] = x[2 * threadIdx.x];
    }"""
    f = SourceModule(src).get_function("k")
    f(In(np.zeros(96, np.float32)), Out(np.zeros(48, np.float32)), block=(48, 1, 1))
    r = f.last_report
    assert r.warps == 2
    assert r.global_load_requests == 2
    assert r.global_load_sectors == 8 + 4      # 256 B and 128 B of span
    assert r.global_store_sectors == 4 + 2
    assert r.global_load_bytes_requested == 48 * 4


def test_shared_broadcast_and_eight_byte_accesses():
    src = """
    __global__ void k(double* out) {
        __shared__ double d[64];
        __shared__ float f[32];
        d[threadIdx.x] = threadIdx.x;
        f[threadIdx.x] = 1.0f;
        __syncthreads();
        out[threadIdx.x] = d[threadIdx.x] + f[0] + d[2 * threadIdx.x];
    }"""
    f = SourceModule(src).get_function("k")
    f(Out(np.zeros(32, np.float64)), block=(32, 1, 1), check_uninitialized=False)
    r = f.last_report
    # d[tx]: 256 B, two half-warp wavefronts; f[0]: one broadcast; d[2 tx]: stride of
    # 16 B, each half warp touches 32 words in 16 banks twice -> 2 wavefronts per half.
    assert r.shared_load_instructions == 3
    assert r.shared_load_wavefronts == 2 + 1 + 4
    assert r.shared_store_wavefronts == 2 + 1


def test_report_text_and_html():
    N = 32
    A, B = _matrices(N)
    _, r = _launch("sgemm_tiled", N, A, B, ["-DTILE=16"], block=(16, 16, 1))
    text = str(r)
    assert "LaunchReport for sgemmTiled" in text and "global_load_requests" in text
    assert f"{r.global_load_requests:,}" in text
    assert "<table>" in r._repr_html_()
    assert r.as_dict()["shared_load_instructions"] == r.shared_load_instructions
    assert r.arithmetic_intensity == pytest.approx(r.flops / r.global_bytes_requested)


def test_constant_and_local_memory_are_not_global_traffic():
    src = """
    __constant__ float w[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    __global__ void k(float* out) {
        float r[4];
        for (int j = 0; j < 4; ++j) r[j] = w[j] * threadIdx.x;
        out[threadIdx.x] = r[0] + r[1] + r[2] + r[3];
    }"""
    f = SourceModule(src).get_function("k")
    out = np.zeros(32, np.float32)
    f(Out(out), block=(32, 1, 1))
    r = f.last_report
    assert np.array_equal(out, 10.0 * np.arange(32))
    assert r.global_load_requests == 0 and r.global_store_requests == 1


def _report_fields(r):
    d = r.as_dict()
    d.pop("hazards")
    return d


@pytest.mark.parametrize("name", ["sgemm_tiled_course", "sgemm_tiled_course_pad",
                                  "sgemm_naive_xrow", "sgemm_2d_blocktiling",
                                  "transpose_square", "reduce_interleaved", "stencil_2d",
                                  "histogram_shared", "types_mix"])
def test_fast_load_path_counts_like_the_general_path(name):
    # trace=True sends every access through the general path; the counts must not change.
    from tilinglib import emulator
    from test_conformance import CASES, run_case

    case = next(c for c in CASES if c.name == name)
    objs = (emulator.SourceModule, emulator.In, emulator.Out, emulator.InOut)
    _, out_fast, fast = run_case(case, *objs, hazards="raise")
    _, out_slow, slow = run_case(case, *objs, hazards="raise", trace=True)
    assert _report_fields(fast.last_report) == _report_fields(slow.last_report)
    for i in out_fast:
        assert np.array_equal(out_fast[i], out_slow[i], equal_nan=True)


def test_repeated_load_sites_recount_when_the_pattern_changes():
    # Loads in a loop whose lanes shift by less than a sector, by whole sectors, by a
    # data-dependent amount, and one address per warp: counts must equal the general path.
    src = """
    __global__ void k(const float* a, const int* jump, float* out, int n) {
        float s = 0.0f;
        int j = 0;
        for (int k = 0; k < 24; ++k) {
            s += a[threadIdx.x * 3 + k];            // uniform shift of 4 bytes
            s += a[threadIdx.x + 8 * k];            // uniform shift of 32 bytes
            s += a[(threadIdx.x * 7 + j) % n];       // data-dependent
            s += a[blockIdx.x + k];                 // one address per warp
            j += jump[k];
        }
        out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    }"""
    n = 512
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    jump = np.random.default_rng(1).integers(0, 9, 24).astype(np.int32)
    reports = []
    for trace in (False, True):
        f = SourceModule(src).get_function("k")
        out = np.zeros(4 * 64, np.float32)
        f(In(a), In(jump), Out(out), np.int32(n), block=(64, 1, 1), grid=(4, 1), trace=trace)
        reports.append(_report_fields(f.last_report))
    assert reports[0] == reports[1]


# The conformance suite under ncu on the H200 (bench/results/ncu_vs_emulator.md, CUDA 13.0):
# (global ld requests, ld sectors, st requests, st sectors, shared ld instructions, ld
# wavefronts, st instructions, st wavefronts). None where nvcc changed the count (merged or
# predicated shared instructions, sgemv's unrolled loop: docs/emulator.md explains each).
H200_SUITE = {
    "sgemm_naive_course": (6912, 13824, 72, 288, 0, 0, 0, 0),
    "sgemm_tiled_course": (432, 1728, 72, 288, None, None, 432, 432),
    "sgemm_tiled_course_pad": (512, 2048, 128, 512, 16384, 16384, 512, 512),
    "sgemm_naive_xrow": (5292, 38592, 108, 1440, 0, 0, 0, 0),
    "sgemm_coalesced": (5880, 11880, 120, 360, 0, 0, 0, 0),
    "sgemm_shared_ptr": (432, 1728, 48, 192, None, None, 384, 384),
    "sgemm_tiled_bounds": (252, 1336, 38, 199, None, None, 288, 288),
    "sgemm_tiled_dynamic": (432, 1728, 72, 288, 6912, 6912, 432, 432),
    "sgemm_double_buffer": (1024, 4096, 128, 512, None, None, 1024, 1024),
    "sgemm_1d_blocktiling": (576, 2304, 192, 768, None, None, 384, 384),
    "sgemm_2d_blocktiling": (512, 5120, 256, 4096, None, None, 256, 256),
    "sgemm_vectorized": (96, 1536, 64, 1024, 512, None, None, 192),
    "transpose_naive": (100, 500, 100, 1400, 0, 0, 0, 0),
    "transpose_shared": (128, 512, 128, 512, 128, 4096, 128, 128),
    "transpose_shared_pad": (128, 512, 128, 512, 128, 128, 128, 128),
    "transpose_square": (128, 512, 128, 512, 128, 4096, 128, 128),
    "reduce_interleaved": (32, 125, 8, 8, None, 376, None, 216),
    "reduce_sequential": (32, 125, 4, 4, None, 68, None, 48),
    "reduce_warp_shuffle": (157, 625, 0, 0, None, 4, 32, 32),
    "dot_product": (188, 750, 0, 0, None, 200, None, 160),
    "sgemv_warp": (None, None, 37, 37, 0, 0, 0, 0),
    "histogram_global": (94, 94, 0, 0, 0, 0, 0, 0),
    "histogram_shared": (32, 125, 0, 0, 16, 16, 16, 16),
    "scan_hillis_steele": (7, 25, 7, 25, None, None, None, None),
    "scan_blelloch": (8, 64, 8, 64, None, None, None, None),
    "atomics_misc": (20, 56, 0, 0, 0, 0, 0, 0),
    "stencil_1d": (16, 48, 8, 32, 56, 56, None, 16),
    "stencil_2d": (138, 335, 89, 241, 242, 370, 234, 306),
    "softmax_rows": (180, 765, 60, 255, None, 240, None, 144),
    "softmax_warp": (90, 327, 30, 109, 0, 0, 0, 0),
    "saxpy_grid_stride": (64, 250, 32, 125, 0, 0, 0, 0),
    "conv1d_constant": (50, 226, 10, 38, 0, 0, 0, 0),
    "types_mix": (3, 14, 14, 169, 0, 0, 0, 0),
    "device_functions": (18, 520, 6, 24, 0, 0, 0, 0),
    "warp_vote": (4, 16, 16, 16, 0, 0, 0, 0),
    "complex_float2": (8, 50, 4, 25, 0, 0, 0, 0),
    "math_funcs": (2, 7, 20, 500, 0, 0, 0, 0),
}
COUNTER_FIELDS = ("global_load_requests", "global_load_sectors", "global_store_requests",
                  "global_store_sectors", "shared_load_instructions", "shared_load_wavefronts",
                  "shared_store_instructions", "shared_store_wavefronts")


@pytest.mark.parametrize("name", list(H200_SUITE))
def test_conformance_counts_equal_the_h200(name):
    from tilinglib import emulator
    from test_conformance import CASES, run_case

    case = next(c for c in CASES if c.name == name)
    _, _, f = run_case(case, emulator.SourceModule, emulator.In, emulator.Out,
                       emulator.InOut, hazards="ignore")
    got = tuple(getattr(f.last_report, k) for k in COUNTER_FIELDS)
    want = H200_SUITE[name]
    assert all(w is None or g == w for g, w in zip(got, want)), (got, want)


def test_h200_suite_global_counts_cover_almost_everything():
    globals_known = [v[:4] for v in H200_SUITE.values()]
    assert sum(None not in g for g in globals_known) == len(H200_SUITE) - 1   # all but sgemv
