"""Kernels that attack the grader, generated: each aims at full marks without doing the work.

Used by ``bench/grade_class.py`` (as submissions of the class) and by
``tests/test_grading_secret.py`` (each with its status and score asserted). Each function
returns CUDA C for the assignment named in its docstring; the public shapes and data they
exploit are the graders' own (`tilinglib.grading.sgemm.sgemm_cases`, `_inputs`), read here
as an attacker reads the public code.

- `lookup_table(tile)`: a1's kernel (and a2's FIXED_KERNEL at TILE 16) that multiplies
  nothing: a ``__constant__`` table of C for each public shape with the public data (seed
  0), one dummy shared store and load, and the table's entry copied to C.
- `shape_detecting(tile)`: a1's tiled kernel on the public shapes, a naive loop over global
  memory on every other shape.
- `shape_detecting_coarse()`: the same for a4 (the coarsened kernel on the public shapes at
  TILE 32).
- `wrong_on_big_grids(source, blocks)`: any kernel, wrong (C left unwritten) on every grid
  of more than `blocks` blocks.
"""

from __future__ import annotations

import re

import numpy as np

BIG = 4096



def _public_shapes(tile: int) -> list:
    from tilinglib.grading.sgemm import sgemm_cases

    return [s for case in sgemm_cases(tile) for s in case.shapes]


def _is_public(tile: int) -> str:
    shapes = _public_shapes(tile)
    return " || ".join(f"(M == {m} && N == {n} && K == {k})" for m, n, k in shapes)


def lookup_table(tile: int = 16, kernel: str = "sgemm") -> str:
    """a1 / a2: C looked up, for each public shape, in a table made from the public data
    (seed 0); one global load of A and of B, stored in shared memory and read back, so that
    the tiles "are staged"."""
    from tilinglib.grading.sgemm import _inputs

    values, offsets, cond = [], [], []
    for m, n, k in _public_shapes(tile):
        A, B = _inputs(m, n, k, 0)
        C = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
        offsets.append(len(values))
        cond.append((m, n, k))
        values += [repr(float(v)) + "f" for v in C.ravel()]
    base = "\n".join(f"    if (M == {m} && N == {n} && K == {k}) base = {o};"
                     for (m, n, k), o in zip(cond, offsets))
    table = ",\n".join(", ".join(values[i:i + 8]) for i in range(0, len(values), 8))
    return (f"#define TILE {tile}\n"
            f"__constant__ float table[{len(values)}] = {{\n{table}\n}};\n"
            f"__global__ void {kernel}(int M, int N, int K, const float* A, const float* B, "
            f"float* C)\n{{\n"
            f"    __shared__ float As[TILE][TILE];\n    __shared__ float Bs[TILE][TILE];\n"
            f"    As[threadIdx.y][threadIdx.x] = A[0];\n    Bs[threadIdx.y][threadIdx.x] = B[0];\n"
            f"    __syncthreads();\n"
            f"    float d = 0.0f * As[threadIdx.y][threadIdx.x] * Bs[threadIdx.y][threadIdx.x];\n"
            f"    int row = blockIdx.y * TILE + threadIdx.y;\n"
            f"    int col = blockIdx.x * TILE + threadIdx.x;\n"
            f"    long base = -1;\n{base}\n"
            f"    if (base >= 0 && row < M && col < N)\n"
            f"        C[(size_t)row * N + col] = table[base + (size_t)row * N + col] + d;\n"
            f"}}\n")


_TILED_BODY = """
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    if (!({public})) {{
        if (row < M && col < N) {{
            float s = 0.0f;
            for (int k = 0; k < K; ++k)
                s += A[(size_t)row * K + k] * B[(size_t)k * N + col];
            C[(size_t)row * N + col] = s;
        }}
        return;
    }}
    float sum = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {{
        int ka = t * TILE + tx, kb = t * TILE + ty;
        As[ty][tx] = (row < M && ka < K) ? A[(size_t)row * K + ka] : 0.0f;
        Bs[ty][tx] = (kb < K && col < N) ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }}
    if (row < M && col < N)
        C[(size_t)row * N + col] = sum;
"""


def shape_detecting(tile: int = 16) -> str:
    """a1: the tiled kernel when (M, N, K) is one of the public shapes, naive otherwise (every
    thread of the block returns together, so no barrier is partial)."""
    return (f"#define TILE {tile}\n__global__ void sgemm(int M, int N, int K, const float* A, "
            f"const float* B, float* C)\n{{" + _TILED_BODY.format(public=_is_public(tile))
            + "}\n")


def shape_detecting_coarse(solution: str) -> str:
    """a4: `solution` (a correct coarsened kernel, ``sgemmCoarse``) on the public shapes, a
    naive loop over global memory on every other shape."""
    naive = (f"    if (!({_is_public(32)})) {{\n"
             "        int col = blockIdx.x * TILE + threadIdx.x;\n"
             "        int row0 = blockIdx.y * TILE + threadIdx.y * COARSE;\n"
             "        for (int c = 0; c < COARSE; ++c) {\n"
             "            int row = row0 + c;\n"
             "            if (row < M && col < N) {\n"
             "                float s = 0.0f;\n"
             "                for (int k = 0; k < K; ++k)\n"
             "                    s += A[(size_t)row * K + k] * B[(size_t)k * N + col];\n"
             "                C[(size_t)row * N + col] = s;\n"
             "            }\n        }\n        return;\n    }\n")
    head = re.search(r"__global__ void sgemmCoarse\([^)]*\)\s*\{\n", solution)
    if head is None:
        raise ValueError("no sgemmCoarse definition in the solution")
    return solution[:head.end()] + naive + solution[head.end():]


def wrong_on_big_grids(source: str, kernel: str = "sgemm", blocks: int = BIG) -> str:
    """`source` with a first statement that returns (C left as it was) on every grid of more
    than `blocks` blocks."""
    head = re.search(rf"__global__ void {kernel}\([^)]*\)\s*\{{\n", source)
    if head is None:
        raise ValueError(f"no {kernel} definition in the source")
    guard = (f"    if ((long)gridDim.x * gridDim.y > {blocks}) return;   // wrong on big "
             f"grids only\n")
    return source[:head.end()] + guard + source[head.end():]
