"""Stage 1 of the front end (tilinglib.toolchain.frontend.preprocess): macros, conditionals, -D options,
CUDA keywords rewritten to C, line numbers kept."""

from __future__ import annotations

import numpy as np
import pytest

from emulator_helpers import launch
from tilinglib.toolchain.codegen.compiler import kernel_signatures
from tilinglib.toolchain.frontend.preprocess import parse_options, preprocess
from tilinglib.errors import CompileError, UnsupportedFeatureError


def test_parse_options_forms():
    defines, undefines = parse_options(["-DTILE=16", "-D", "PAD=1", "-DFAST", "-UX", "-O3",
                                        "--use_fast_math", "-arch=sm_90", "-lineinfo"])
    assert defines == {"TILE": "16", "PAD": "1", "FAST": "1"}
    assert undefines == ["X"]


def test_bad_options_are_compile_errors():
    with pytest.raises(CompileError, match="-DNAME"):
        parse_options(["-D=3"])
    with pytest.raises(CompileError, match="strings"):
        parse_options([16])


SRC = """#include <cuda_runtime.h>
#define SQ(x) ((x) * (x))
#define ADD3(a, b, c) ((a) + (b) + (c))
#ifndef TILE
#define TILE 4
#endif
#if TILE >= 8
#define KIND 2
#elif defined(SMALL)
#define KIND 1
#else
#define KIND 0
#endif
extern "C" {
__global__ void __launch_bounds__(256, 2)
k(int* __restrict__ out)
{
    #pragma unroll 4
    for (int i = 0; i < 1; ++i)
        out[threadIdx.x] = SQ(TILE) * 10 + KIND + ADD3(1, 2, threadIdx.x) * 1000;
}
}
"""


@pytest.mark.parametrize("options, tile, kind", [
    (None, 4, 0), (["-DTILE=8"], 8, 2), (["-DSMALL"], 4, 1), (["-D", "TILE=2", "-DSMALL"], 2, 1),
])
def test_macros_conditionals_and_options(options, tile, kind):
    out = np.zeros(4, np.int32)
    launch(SRC, "k", out, block=(4, 1, 1), options=options)
    assert list(out) == [tile * tile * 10 + kind + (3 + t) * 1000 for t in range(4)]


def test_lines_survive_comments_macros_and_continuations():
    src = ("/* a comment\n   over two lines */\n#define LONG_MACRO(a) \\\n    ((a) + 1)\n"
           "__global__ void k(float* a)\n{\n    a[0] = LONG_MACRO(1.0f) +;\n}\n")
    with pytest.raises(CompileError) as info:
        preprocess_and_compile(src)
    assert info.value.line == 7


def preprocess_and_compile(src, options=None):
    from tilinglib.emulator import SourceModule

    return SourceModule(src, options=options)


def test_error_directive_is_reported_with_its_line():
    src = "#if TILE > 32\n#error TILE must be at most 32\n#endif\n__global__ void k() {}\n"
    preprocess_and_compile(src, ["-DTILE=16"])
    with pytest.raises(CompileError) as info:
        preprocess_and_compile(src, ["-DTILE=64"])
    assert info.value.line == 2 and "TILE must be at most 32" in str(info.value)


def test_cuda_keywords_reach_clang_unchanged_so_columns_are_the_students():
    src = ("__global__ void k(float* __restrict__ a) { __shared__ float s[4]; }\n"
           "__device__ __forceinline__ float f(float x) { return x; }\n")
    pre = preprocess(src)
    assert pre.text.split("\n", 1)[1] == src          # after the #line marker


def test_cuda_keywords_become_the_compilers_markers():
    from pycparser import c_ast
    from tilinglib.toolchain.frontend.lower import DEVICE_MARK, KERNEL_MARK, SHARED_MARK
    from tilinglib.toolchain.frontend.program import parse

    ast = parse(preprocess("__global__ void k(float* __restrict__ a) { __shared__ float s[4]; }"
                           "\n__device__ __forceinline__ float f(float x) { return x; }\n"))
    funcs = {n.decl.name: n for n in ast.ext if isinstance(n, c_ast.FuncDef)}
    assert funcs["k"].decl.funcspec == [KERNEL_MARK] and funcs["f"].decl.funcspec == [DEVICE_MARK]
    shared = funcs["k"].body.block_items[0]
    assert shared.name == "s" and shared.storage == [SHARED_MARK]
    assert funcs["k"].decl.type.args.params[0].type.quals == ["restrict"]
    assert (funcs["k"].coord.line, funcs["f"].coord.line) == (1, 2)


def test_kernel_signatures_read_parameter_types():
    sigs = kernel_signatures("typedef float real;\n"
                             "__global__ void a(int n, const real* x, unsigned char* c, "
                             "size_t m, double d) {}\n__device__ void helper() {}\n")
    assert list(sigs) == ["a"]
    kinds = [(p.name, p.ctype.kind) for p in sigs["a"]]
    assert kinds == [("n", "int"), ("x", "pointer"), ("c", "pointer"), ("m", "unsigned long"),
                     ("d", "double")]
    assert sigs["a"][1].ctype.target.kind == "float"


def test_a_missing_semicolon_is_pointed_at():
    from tilinglib.emulator import SourceModule
    from tilinglib.errors import CompileError

    src = "__global__ void k(float* x) {\n    x[0] = 1.0f\n    x[1] = 2.0f;\n}\n"
    with pytest.raises(CompileError, match=r"kernel.cu:2:16: syntax error \(is a ';' missing "
                                           r"at the end of line 2\?\)") as info:
        SourceModule(src)
    assert (info.value.line, info.value.column) == (2, 16)
