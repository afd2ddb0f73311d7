"""Conformance suite: kernels in the styles real courses use, on the emulator and on a GPU.

Each case is a `.cu` file under tests/kernels/conformance/ (or one of the course's own
kernels), a launch (block, grid, shared, -D options), inputs made from a fixed seed, and a
NumPy reference. `test_emulator_matches_numpy` runs every case on the CPU emulator;
`test_gpu_matches_emulator` (marked ``gpu``) runs the same source on the same inputs through
PyCUDA and checks the GPU's answer against the reference and the emulator's within fp32
tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from tilinglib import kernels

HERE = Path(__file__).parent / "kernels" / "conformance"

IN, OUT, INOUT = "in", "out", "inout"


@dataclass
class Run:
    """One launch: arguments (NumPy scalars, or (direction, array) pairs), geometry, and the
    expected value of each output argument (by position): an array, or a callable that
    asserts on the output (for results a GPU may legally order differently)."""

    args: list
    block: tuple
    grid: tuple
    expected: dict
    shared: int = 0
    rtol: float = 1e-5
    atol: float = 1e-5


@dataclass
class Case:
    name: str
    kernel: str
    setup: Callable[[np.random.Generator], Run]
    source: str | None = None          # file stem in tests/kernels/conformance/
    course_kernel: str | None = None   # or a kernel of tilinglib.kernels
    options: list = field(default_factory=list)

    def text(self) -> str:
        if self.course_kernel:
            return kernels.load(self.course_kernel)
        return (HERE / f"{self.source or self.name}.cu").read_text()


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def gemm_ref(A, B, C=None, alpha=1.0, beta=0.0):
    out = alpha * (A.astype(np.float64) @ B.astype(np.float64))
    if C is not None:
        out = out + beta * C.astype(np.float64)
    return out.astype(np.float32)


def cdiv(a, b):
    return -(-a // b)


# ----------------------------------------------------------------------------- SGEMM family

def _gemm_mnk(M, N, K, block, grid, order="MNK"):
    def setup(rng):
        A, B, C = f32(rng, M, K), f32(rng, K, N), f32(rng, M, N)
        alpha, beta = np.float32(1.5), np.float32(0.5)
        args = [np.int32(M), np.int32(N), np.int32(K), alpha, (IN, A), (IN, B), beta,
                (INOUT, C)]
        return Run(args, block, grid, {7: gemm_ref(A, B, C, 1.5, 0.5)}, rtol=1e-4, atol=1e-4)
    return setup


def _gemm_n(N, block, grid, shared=0):
    def setup(rng):
        A, B = f32(rng, N, N), f32(rng, N, N)
        C = np.zeros((N, N), np.float32)
        return Run([np.int32(N), (IN, A), (IN, B), (OUT, C)], block, grid,
                   {3: gemm_ref(A, B)}, shared=shared, rtol=1e-4, atol=1e-4)
    return setup


def _tiled_bounds(rng):
    M, N, K = 37, 29, 45
    A, B = f32(rng, M, K), f32(rng, K, N)
    C = np.zeros((M, N), np.float32)
    return Run([(IN, A), (IN, B), (OUT, C), np.int32(M), np.int32(N), np.int32(K)],
               (16, 16, 1), (cdiv(N, 16), cdiv(M, 16)), {2: gemm_ref(A, B)},
               rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- transposes

def _transpose_naive(rng):
    rows, cols = 40, 70
    a = f32(rng, rows, cols)
    out = np.zeros((cols, rows), np.float32)
    return Run([(OUT, out), (IN, a), np.int32(rows), np.int32(cols)], (16, 16, 1),
               (cdiv(cols, 16), cdiv(rows, 16)), {0: a.T.copy()})


def _transpose_shared(rng):
    a = f32(rng, 64, 64)
    out = np.zeros_like(a)
    return Run([(OUT, out), (IN, a)], (32, 8, 1), (2, 2), {0: a.T.copy()})


def _transpose_square(rng):
    n = 64
    a = f32(rng, n, n)
    return Run([np.int32(n), (IN, a), (OUT, np.zeros_like(a))], (32, 32, 1), (2, 2),
               {2: a.T.copy()})


# ----------------------------------------------------------------------------- reductions

def _block_sums(x, per_block, nblocks):
    padded = np.zeros(per_block * nblocks, np.float64)
    padded[:x.size] = x
    return padded.reshape(nblocks, per_block).sum(axis=1).astype(np.float32)


def _reduce_interleaved(rng):
    n, block = 1000, 128
    grid = cdiv(n, block)
    x = f32(rng, n)
    return Run([(IN, x), (OUT, np.zeros(grid, np.float32)), np.uint32(n)], (block, 1, 1),
               (grid, 1), {1: _block_sums(x, block, grid)}, shared=block * 4, atol=1e-4)


def _reduce_sequential(rng):
    n, block = 1000, 128
    grid = cdiv(n, 2 * block)
    x = f32(rng, n)
    return Run([(IN, x), (OUT, np.zeros(grid, np.float32)), np.int32(n)], (block, 1, 1),
               (grid, 1), {1: _block_sums(x, 2 * block, grid)}, atol=1e-4)


def _reduce_shuffle(rng):
    n = 5000
    x = f32(rng, n)
    return Run([(IN, x), (INOUT, np.zeros(1, np.float32)), np.int32(n)], (256, 1, 1), (4, 1),
               {1: np.array([x.astype(np.float64).sum()], np.float32)}, atol=1e-3)


def _dot(rng):
    n = 3000
    a, b = f32(rng, n), f32(rng, n)
    return Run([(IN, a), (IN, b), (INOUT, np.zeros(1, np.float32)), np.int32(n)],
               (256, 1, 1), (8, 1), {2: np.array([a.astype(np.float64) @ b], np.float32)},
               atol=1e-3)


def _sgemv(rng):
    rows, cols = 37, 100
    A, x = f32(rng, rows, cols), f32(rng, cols)
    return Run([(IN, A), (IN, x), (OUT, np.zeros(rows, np.float32)), np.int32(rows),
                np.int32(cols)], (128, 1, 1), (cdiv(rows, 4), 1),
               {2: (A.astype(np.float64) @ x).astype(np.float32)}, atol=1e-4)


# ----------------------------------------------------------------------------- atomics, scans

def _hist_global(rng):
    n = 3000
    data = rng.integers(0, 256, n).astype(np.uint8)
    return Run([(IN, data), (INOUT, np.zeros(256, np.uint32)), np.uint64(n)], (128, 1, 1),
               (8, 1), {1: np.bincount(data, minlength=256).astype(np.uint32)})


def _hist_shared(rng):
    n = 1000
    data = rng.integers(-100, 100, n).astype(np.int32)
    return Run([(IN, data), np.int32(n), (INOUT, np.zeros(64, np.uint32))], (128, 1, 1),
               (8, 1), {2: np.bincount(np.mod(data, 64), minlength=64).astype(np.uint32)})


def _scan_hs(rng):
    n = 200
    x = f32(rng, n)
    return Run([(IN, x), (OUT, np.zeros(n, np.float32)), np.int32(n)], (256, 1, 1), (1, 1),
               {1: np.cumsum(x.astype(np.float64)).astype(np.float32)}, atol=1e-4)


def _scan_blelloch(rng):
    n = 256
    x = rng.integers(-50, 50, n).astype(np.int32)
    expected = np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.int32)
    return Run([(IN, x), (OUT, np.zeros(n, np.int32)), np.int32(n)], (128, 1, 1), (1, 1),
               {1: expected}, shared=n * 4)


def _atomics_misc(rng):
    n = 100
    v = rng.integers(-1000, 1000, n).astype(np.int32)
    f = f32(rng, n)
    out = np.array([10**6, -10**6, 0, 0, 0], np.int32)

    def check_out(got):
        assert got[0] == v.min() and got[1] == v.max() and got[2] == -v.sum()
        assert got[3] == 7
        assert 1 <= got[4] <= n          # some thread won the compare-and-swap
    return Run([(IN, v), (IN, f), (INOUT, out), (INOUT, np.array([-np.inf], np.float32)),
                np.int32(n)], (64, 1, 1), (2, 1), {2: check_out, 3: np.array([f.max()])})


# ----------------------------------------------------------------------------- stencils, softmax

def _stencil_1d(rng):
    R, B, nb = 3, 64, 4
    x = rng.integers(-9, 10, B * nb + 2 * R).astype(np.int32)
    expected = np.array([x[i:i + 2 * R + 1].sum() for i in range(B * nb)], np.int32)
    return Run([(IN, x), (OUT, np.zeros(B * nb, np.int32))], (B, 1, 1), (nb, 1), {1: expected})


def _stencil_2d(rng):
    W, H = 40, 35
    u = f32(rng, H, W)
    v = u.copy()
    v[1:-1, 1:-1] = np.float32(0.25) * (((u[1:-1, :-2] + u[1:-1, 2:]) + u[:-2, 1:-1])
                                        + u[2:, 1:-1])
    return Run([(IN, u), (OUT, np.zeros_like(u)), np.int32(W), np.int32(H)], (16, 16, 1),
               (3, 3), {1: v})


def _softmax_ref(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def _softmax_rows(rng):
    rows, cols = 6, 300
    x = f32(rng, rows, cols)
    return Run([(IN, x), (OUT, np.zeros_like(x)), np.int32(rows), np.int32(cols)],
               (128, 1, 1), (rows, 1), {1: _softmax_ref(x)}, rtol=1e-4, atol=1e-6)


def _softmax_warp(rng):
    rows, cols = 10, 70
    x = f32(rng, rows, cols)
    return Run([(IN, x), (OUT, np.zeros_like(x)), np.int32(rows), np.int32(cols)],
               (128, 1, 1), (3, 1), {1: _softmax_ref(x)}, rtol=1e-4, atol=1e-6)


# ----------------------------------------------------------------------------- the language

def _saxpy(rng):
    n = 1000
    x, y = f32(rng, n), f32(rng, n)
    return Run([np.int32(n), np.float32(2.5), (IN, x), (INOUT, y.copy())], (64, 1, 1), (4, 1),
               {3: np.float32(2.5) * x + y})


def _conv1d(rng):
    w = 300
    x = f32(rng, w)
    mask = np.array([0.0625, 0.25, 0.375, 0.25, 0.0625])
    expected = np.convolve(x.astype(np.float64), mask, mode="same").astype(np.float32)
    return Run([(IN, x), (OUT, np.zeros(w, np.float32)), np.int32(w)], (128, 1, 1), (3, 1),
               {1: expected})


def _c_div(x, y):
    q = np.abs(x) // np.abs(y) * np.sign(x) * np.sign(y)
    return q, x - q * y


def _types_mix(rng):
    n = 32
    a = rng.integers(-2**31, 2**31 - 1, n).astype(np.int64)
    a[:8] = rng.integers(-50, 50, 8)
    b = rng.integers(-40, 40, n).astype(np.int64)
    b[b == 0] = 3
    i = np.arange(n, dtype=np.int64)
    q, r = _c_div(a, b)
    i32 = lambda v: np.asarray(v, np.int64).astype(np.int32)  # noqa: E731 (wraps)
    iout = np.stack([
        q, r, i32(a * 65537),
        ((i32(a) >> 2) ^ (i32(b) << 3)) | (i32(a) & 0xFF),
        (a >= 0).astype(np.int64) + 10 * ((a < 0) & (b >= 0)),
    ], axis=1)
    uout = np.stack([(a.astype(np.uint32) + i.astype(np.uint32)),
                     (a.astype(np.uint32) > i.astype(np.uint32))], axis=1)
    big = a * 3000000000
    llq, _ = _c_div(big, np.int64(7))
    dout = np.stack([1.0 / b + a, a.astype(np.float32).astype(np.float64) / 3.0], axis=1)
    fout = a.astype(np.float32) / b.astype(np.float32) + np.float32(0.1)
    sout = i32(a * 1000).astype(np.int16)
    cout = i32(a + b).astype(np.int8)
    outs = [np.zeros(5 * n, np.int32), np.zeros(2 * n, np.uint32), np.zeros(n, np.int64),
            np.zeros(2 * n, np.float64), np.zeros(n, np.float32), np.zeros(n, np.int16),
            np.zeros(n, np.int8)]
    return Run([(IN, a.astype(np.int32)), (IN, b.astype(np.int32))] + [(OUT, o) for o in outs],
               (n, 1, 1), (1, 1),
               {2: i32(iout).reshape(-1), 3: uout.astype(np.uint32).reshape(-1),
                4: llq + i, 5: dout.reshape(-1), 6: fout, 7: sout, 8: cout},
               rtol=1e-7, atol=0)


def _collatz(n, limit):
    steps = 0
    if n <= 1:
        return 0
    while True:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
        if steps >= limit or n == 1:
            return steps


def _device_functions(rng):
    n, cols = 64, 8
    ns = rng.integers(0, 60, n).astype(np.int32)
    m = f32(rng, n, cols)
    rowsum = np.clip(np.where(m < 0, 0, m.astype(np.float64) ** 2).sum(axis=1), 0, 10)
    cls = np.array([{0: 1.0, 1: 2.0, 2: 2.0, 3: -1.0}[k & 3] + (0.5 if k > 5 else 0.25)
                    for k in range(n)], np.float32)
    return Run([(IN, ns), (OUT, np.zeros(n, np.int32)), (IN, m), (OUT, np.zeros(n, np.float32)),
                (OUT, np.zeros(n, np.float32)), np.int32(cols)], (32, 1, 1), (2, 1),
               {1: np.array([_collatz(int(k), 200) for k in ns], np.int32),
                3: rowsum.astype(np.float32), 4: cls}, rtol=1e-5)


def _warp_vote(rng):
    n = 128
    x = f32(rng, n)
    x[32:64] = np.abs(x[32:64]) + 1
    x[64:96] = -np.abs(x[64:96]) - 1
    pos = (x > 0).reshape(-1, 32)
    ballot = (pos * (1 << np.arange(32, dtype=np.uint64))).sum(axis=1).astype(np.uint32)
    return Run([(IN, x), (OUT, np.zeros(4, np.uint32)), (OUT, np.zeros(4, np.int32)),
                (OUT, np.zeros(4, np.int32)), (OUT, np.zeros(4, np.int32))], (64, 1, 1), (2, 1),
               {1: ballot, 2: pos.sum(axis=1).astype(np.int32),
                3: pos.any(axis=1).astype(np.int32), 4: pos.all(axis=1).astype(np.int32)})


def _complex(rng):
    n = 100
    a, b = f32(rng, n, 2), f32(rng, n, 2)
    ca, cb = a[:, 0] + 1j * a[:, 1], b[:, 0] + 1j * b[:, 1]
    p = ca * cb
    return Run([(IN, a), (IN, b), (OUT, np.zeros((n, 2), np.float32)), np.int32(n)],
               (64, 1, 1), (2, 1), {2: np.stack([p.real, p.imag], axis=1)}, rtol=1e-5,
               atol=1e-6)


def _math(rng):
    n = 50
    x = f32(rng, n) * 3
    a = np.abs(x) + 1
    i = np.arange(n)
    y = np.stack([np.sqrt(a), 1 / np.sqrt(a), np.exp(-a), np.log(a), np.minimum(x, 0.5),
                  np.maximum(x, -0.5), x * 2 + 1, x / a,
                  np.minimum(i, 3) + np.maximum(-i, -2),
                  np.tanh(x) + np.floor(x) + a ** 1.5], axis=1)
    return Run([(IN, x), (OUT, np.zeros(10 * n, np.float32)), np.int32(n)], (64, 1, 1), (1, 1),
               {1: y.astype(np.float32).reshape(-1)}, rtol=2e-6, atol=1e-6)


CASES = [
    Case("sgemm_naive_course", "sgemmNaive", _gemm_n(48, (16, 16, 1), (3, 3)),
         course_kernel="sgemm_naive"),
    Case("sgemm_tiled_course", "sgemmTiled", _gemm_n(48, (16, 16, 1), (3, 3)),
         course_kernel="sgemm_tiled", options=["-DTILE=16"]),
    Case("sgemm_tiled_course_pad", "sgemmTiled", _gemm_n(64, (32, 32, 1), (2, 2)),
         course_kernel="sgemm_tiled", options=["-DTILE=32", "-DPAD=1"]),
    Case("sgemm_naive_xrow", "sgemm_naive", _gemm_mnk(40, 72, 24, (16, 16, 1), (3, 5))),
    Case("sgemm_coalesced", "sgemm_coalesced", _gemm_mnk(40, 72, 24, (1024, 1, 1), (2, 3))),
    Case("sgemm_shared_ptr", "sgemm_shared_ptr", _gemm_mnk(32, 48, 64, (256, 1, 1), (2, 3))),
    Case("sgemm_tiled_bounds", "sgemm_tiled_bounds", _tiled_bounds),
    Case("sgemm_tiled_dynamic", "sgemm_tiled_dynamic",
         _gemm_n(48, (16, 16, 1), (3, 3), shared=2 * 16 * 16 * 4)),
    Case("sgemm_double_buffer", "sgemm_double_buffer", _gemm_n(64, (16, 16, 1), (4, 4))),
    Case("sgemm_1d_blocktiling", "sgemm_1d_blocktiling",
         _gemm_mnk(64, 96, 32, (256, 1, 1), (3, 2))),
    Case("sgemm_2d_blocktiling", "sgemm_2d_blocktiling",
         _gemm_mnk(128, 64, 32, (256, 1, 1), (1, 2))),
    Case("sgemm_vectorized", "sgemm_vectorized", _gemm_mnk(64, 128, 16, (256, 1, 1), (2, 1))),
    Case("transpose_naive", "transpose_naive", _transpose_naive),
    Case("transpose_shared", "transpose_shared", _transpose_shared),
    Case("transpose_shared_pad", "transpose_shared", _transpose_shared,
         source="transpose_shared", options=["-DPAD=1"]),
    Case("transpose_square", "transpose_square", _transpose_square),
    Case("reduce_interleaved", "reduce_interleaved", _reduce_interleaved),
    Case("reduce_sequential", "reduce_sequential", _reduce_sequential),
    Case("reduce_warp_shuffle", "reduce_warp_shuffle", _reduce_shuffle),
    Case("dot_product", "dot_product", _dot),
    Case("sgemv_warp", "sgemv_warp", _sgemv),
    Case("histogram_global", "histogram_global", _hist_global),
    Case("histogram_shared", "histogram_shared", _hist_shared),
    Case("scan_hillis_steele", "scan_hillis_steele", _scan_hs),
    Case("scan_blelloch", "scan_blelloch", _scan_blelloch),
    Case("atomics_misc", "atomics_misc", _atomics_misc),
    Case("stencil_1d", "stencil_1d", _stencil_1d),
    Case("stencil_2d", "stencil_2d", _stencil_2d),
    Case("softmax_rows", "softmax_rows", _softmax_rows),
    Case("softmax_warp", "softmax_warp", _softmax_warp),
    Case("saxpy_grid_stride", "saxpy_grid_stride", _saxpy),
    Case("conv1d_constant", "conv1d_constant", _conv1d),
    Case("types_mix", "types_mix", _types_mix),
    Case("device_functions", "device_functions", _device_functions),
    Case("warp_vote", "warp_vote", _warp_vote),
    Case("complex_float2", "complex_float2", _complex),
    Case("math_funcs", "math_funcs", _math),
]


def run_case(case: Case, SourceModule, In, Out, InOut, **call_kw):
    """Compile and launch `case` with the given backend objects; returns (Run, outputs by
    argument position, Function)."""
    run = case.setup(np.random.default_rng(1234))
    wrap = {IN: In, OUT: Out, INOUT: InOut}
    args, arrays = [], {}
    for i, a in enumerate(run.args):
        if isinstance(a, tuple):
            arrays[i] = a[1]
            args.append(wrap[a[0]](a[1]))
        else:
            args.append(a)
    f = SourceModule(case.text(), options=list(case.options)).get_function(case.kernel)
    f(*args, block=run.block, grid=run.grid, shared=run.shared, **call_kw)
    return run, {i: arrays[i] for i in run.expected}, f


def check_outputs(run: Run, outputs: dict, where: str) -> None:
    for i, want in run.expected.items():
        got = outputs[i]
        if callable(want):
            want(got)
        else:
            np.testing.assert_allclose(got.reshape(np.shape(want)), want, rtol=run.rtol,
                                       atol=run.atol, err_msg=f"{where}: argument {i}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_emulator_matches_numpy(case):
    from tilinglib import emulator

    run, outputs, f = run_case(case, emulator.SourceModule, emulator.In, emulator.Out,
                               emulator.InOut, hazards="raise")
    check_outputs(run, outputs, f"emulator, {case.name}")
    assert f.last_report.hazards == ()


def test_suite_is_large_enough():
    files = {c.source or c.name for c in CASES if not c.course_kernel}
    assert len(files) >= 25
    assert files <= {p.stem for p in HERE.glob("*.cu")}


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gpu_matches_emulator(case):
    from tilinglib import emulator
    from tilinglib.backend import get_backend

    gpu = get_backend()
    run, gpu_out, _ = run_case(case, gpu.SourceModule, gpu.In, gpu.Out, gpu.InOut)
    check_outputs(run, gpu_out, f"GPU, {case.name}")
    _, emu_out, _ = run_case(case, emulator.SourceModule, emulator.In, emulator.Out,
                             emulator.InOut, hazards="ignore")
    for i, want in run.expected.items():
        if not callable(want):
            np.testing.assert_allclose(gpu_out[i], emu_out[i], rtol=max(run.rtol, 1e-5),
                                       atol=max(run.atol, 1e-5),
                                       err_msg=f"GPU vs emulator, {case.name}: argument {i}")
