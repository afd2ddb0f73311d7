"""A .cu file compiles as written (toolchain/frontend/headers.py, host_prelude.py, parse.host_code):
every header name of the C and C++ libraries and of the CUDA toolkit is satisfied inside,
in the mode nvcc would compile it (PyCUDA's extern "C" wrapping refuses C++ headers, as nvcc
does); host code is parsed and set aside; device code that uses a host name gets nvcc's
error; a whole file pasted from a repository launches its kernels."""

from __future__ import annotations

import numpy as np
import pytest

from tilinglib.emulator import In, InOut, Out, SourceModule
from tilinglib.errors import CompileError, UnsupportedFeatureError
from tilinglib.toolchain.frontend import mangled_names
from tilinglib.toolchain.frontend.headers import HEADERS, NVCC_REFUSED, table_rows

KERNEL = "__global__ void k(int *out) { out[threadIdx.x] = 7 * threadIdx.x; }\n"


def _runs(src, **kw):
    out = np.zeros(32, np.int32)
    SourceModule(src, **kw).get_function("k")(Out(out), block=(32, 1, 1), grid=(1, 1))
    return out.tolist() == [7 * t for t in range(32)]


def test_every_header_name_is_satisfied_at_once_in_cxx_mode():
    src = "".join(f"#include <{name}>\n" for name in sorted(HEADERS)) + KERNEL
    assert _runs(src, no_extern_c=True)
    assert len(HEADERS) > 200


def test_the_c_headers_compile_inside_the_default_extern_c_wrapping():
    c_headers = sorted(n for n, h in HEADERS.items() if not h.cxx)
    assert {"stdio.h", "cstdio", "cassert", "cuda_runtime.h", "cuda_profiler_api.h",
            "curand.h", "math.h"} <= set(c_headers)
    assert _runs("".join(f"#include <{n}>\n" for n in c_headers) + KERNEL)


@pytest.mark.parametrize("name", sorted(n for n, h in HEADERS.items() if h.cxx))
def test_a_cxx_header_inside_extern_c_is_refused_as_nvcc_refuses_it(name):
    src = "#include <cstdio>\n" + f"#include <{name}>\n" + KERNEL
    with pytest.raises(CompileError) as info:
        SourceModule(src)
    text = str(info.value)
    assert info.value.line == 2
    assert 'this declaration may not have extern "C" linkage' in text
    assert "no_extern_c=True" in text and "mangled_names" in text


@pytest.mark.parametrize("name, advice", [
    ("coroutine", "remove the #include"), ("cuda_fp16.hpp", "#include <cuda_fp16.h>"),
    ("cuda_bf16.hpp", "#include <cuda_bf16.h>")])
@pytest.mark.parametrize("no_extern_c", [True, False])
def test_a_header_nvcc_refuses_in_both_modes_is_refused_with_what_to_write(name, advice,
                                                                           no_extern_c):
    """nvcc 13.0 on the H200 refused these three in C++ mode and inside extern "C"
    (bench/results/gpu_cu_files_h200.json), as every toolkit does: the emulator refuses
    them at their line."""
    assert set(NVCC_REFUSED) == {"coroutine", "cuda_fp16.hpp", "cuda_bf16.hpp"}
    src = "#include <cstdio>\n" + f"#include <{name}>\n" + KERNEL
    with pytest.raises(CompileError) as info:
        SourceModule(src, no_extern_c=no_extern_c)
    assert info.value.line == 2
    assert "nvcc refuses this header" in str(info.value) and advice in str(info.value)
    assert name not in HEADERS


def test_a_name_outside_the_lists_is_still_refused_without_reading_anything():
    for name in ("helper_cuda.h", "torch/types.h", "mpi.h", "vector.h", "cuda_runtime"):
        with pytest.raises(CompileError, match="reads no files") as info:
            SourceModule(f"#include <{name}>\n" + KERNEL, no_extern_c=True)
        assert info.value.line == 1


def test_the_header_table_says_what_device_code_gets():
    rows = {name: (library, device, cxx) for name, library, device, cxx in table_rows()}
    assert rows["vector"][2] and not rows["cstdio"][2]
    assert rows["cstdio"][1] == "printf" and "cuBLAS is host code" in rows["cublas_v2.h"][1]
    assert rows["cooperative_groups.h"][0] == "CUDA toolkit (C++)"


# A whole file in the style of the samples people paste: includes, an error-checking
# macro, a host helper, a host struct with a std::vector, globals, a template kernel that
# only the launch in main instantiates, and main itself.
WHOLE_FILE = r"""
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <iostream>
#include <algorithm>
#include <chrono>
#include <random>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    fprintf(stderr, "%s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
    exit(EXIT_FAILURE); } } while (0)

const int BLOCK = 256;
int verbose = 1;
struct Timer { std::vector<float> laps; cudaEvent_t start; };

__global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

template <typename T> __global__ void scale(T *x, T s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

void fill(std::vector<float> &v) {
    std::mt19937 gen(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto &x : v) x = dist(gen);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
    std::vector<float> a(n), b(n), c(n);
    fill(a); fill(b);
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * sizeof(float)));
    CHECK(cudaMalloc(&db, n * sizeof(float)));
    CHECK(cudaMalloc(&dc, n * sizeof(float)));
    CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(BLOCK), grid((n + BLOCK - 1) / BLOCK);
    auto t0 = std::chrono::high_resolution_clock::now();
    add<<<grid, block>>>(da, db, dc, n);
    scale<float><<<grid, block>>>(dc, 2.0f, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    auto t1 = std::chrono::high_resolution_clock::now();
    cublasHandle_t handle;
    cublasCreate(&handle);
    CHECK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
    std::cout << "max " << *std::max_element(c.begin(), c.end()) << " in "
              << std::chrono::duration<double, std::milli>(t1 - t0).count() << " ms" << std::endl;
    cudaFree(da); cudaFree(db); cudaFree(dc);
    return 0;
}
"""


def test_a_whole_file_with_host_code_launches_its_kernels():
    m = SourceModule(WHOLE_FILE, no_extern_c=True)
    n = 1000
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    c = np.zeros(n, np.float32)
    m.get_function("add")(In(a), In(b), Out(c), np.int32(n), block=(256, 1, 1), grid=(4, 1))
    m.get_function("scale<float>")(InOut(c), np.float32(2), np.int32(n),
                                   block=(256, 1, 1), grid=(4, 1))
    np.testing.assert_array_equal(c, 2 * (a + b))
    assert set(mangled_names(WHOLE_FILE)) == {"add", "scale<float>"}


def test_the_whole_file_in_the_default_mode_says_what_to_write():
    with pytest.raises(CompileError, match=r"#include <vector> inside the extern \"C\"") as info:
        SourceModule(WHOLE_FILE)
    assert info.value.line == 4


@pytest.mark.parametrize("body, message", [
    ("o[0] = std::min(1, 2);",
     'calling a constexpr __host__ function("min") from a __global__ function("k") is not '
     "allowed. The experimental flag '--expt-relaxed-constexpr'"),
    ("float *p; cudaMalloc(&p, 4);",
     'calling a __host__ function("cudaMalloc") from a __global__ function("k") is not allowed'),
    ("std::cout << o[0];", 'identifier "cout" is undefined in device code'),
    ("o[0] = rand();", 'calling a __host__ function("rand") from a __global__ function("k")'),
    ("o[0] = host_counter;", 'identifier "host_counter" is undefined in device code'),
    ("o[0] = helper(1);", 'calling a __host__ function("helper") from a __global__ '
                          'function("k")'),
])
def test_a_host_name_in_device_code_is_nvccs_error(body, message):
    src = ("#include <cstdlib>\n#include <algorithm>\n#include <iostream>\n"
           "#include <cuda_runtime.h>\nint host_counter = 3;\nint helper(int x) { return x; }\n"
           f"__global__ void k(int *o) {{\n    {body}\n}}\n")
    with pytest.raises(CompileError) as info:
        SourceModule(src, no_extern_c=True)
    assert message in str(info.value)
    assert info.value.line == 8


def test_a_device_function_calling_a_host_one_names_itself():
    src = ("int twice(int x) { return 2 * x; }\n__device__ int f(int x) { return twice(x); }\n"
           "__global__ void k(int *o) { o[0] = f(1); }\n")
    with pytest.raises(CompileError, match=r'calling a __host__ function\("twice"\) from a '
                                           r'__device__ function\("f"\)') as info:
        SourceModule(src)
    assert info.value.line == 2


def test_cmath_gives_device_code_the_std_math_functions():
    src = ("#include <cmath>\n__global__ void k(float *o) {\n"
           "    float x = -2.25f;\n"
           "    o[0] = std::sqrt(std::fabs(x)) + std::fmax(x, 1.0f) + std::floor(x);\n}\n")
    o = np.zeros(1, np.float32)
    SourceModule(src).get_function("k")(Out(o), block=(1, 1, 1), grid=(1, 1))
    assert o[0] == np.float32(1.5 + 1.0 - 3.0)


def test_errors_in_host_code_are_set_aside_but_device_errors_are_not():
    host_typo = ("#include <cstdio>\nvoid report(int n) { printf(\"%d\\n\", n) undefined_name; }\n"
                 + KERNEL)
    assert _runs(host_typo)                 # nvcc would refuse it; no kernel depends on it
    device_typo = host_typo.replace("7 * threadIdx.x", "7 * threadIdx.x + undefined_name")
    with pytest.raises(CompileError, match="'undefined_name' is not declared") as info:
        SourceModule(device_typo)
    assert info.value.line == 3 and "1 errors" not in str(info.value)


def test_a_kernel_using_what_the_emulator_lacks_does_not_stop_the_others():
    src = ("#include <cstdio>\n"
           "__global__ void good(int *o) { o[threadIdx.x] = 1; }\n"
           "__global__ void bad(int *o) {\n    static int n = 0;\n    o[0] = n;\n}\n")
    m = SourceModule(src)
    o = np.zeros(4, np.int32)
    m.get_function("good")(Out(o), block=(4, 1, 1), grid=(1, 1))
    assert o.tolist() == [1, 1, 1, 1]
    with pytest.raises(UnsupportedFeatureError, match="static") as info:
        m.get_function("bad")
    assert info.value.line == 4
    with pytest.raises(UnsupportedFeatureError, match="static"):      # alone, at compile
        SourceModule(src.replace("__global__ void good", "__device__ void good"))


@pytest.mark.parametrize("header, body, library", [
    ("curand_kernel.h", "curandState st; curand_init(1, threadIdx.x, 0, &st);", "cuRAND"),
    ("cub/cub.cuh", "typedef cub::BlockReduce<float, 32> R;", "cub"),
])
def test_a_library_device_api_is_refused_where_it_is_used(header, body, library):
    src = f"#include <{header}>\n__global__ void k(float *o) {{\n    {body}\n}}\n"
    with pytest.raises(CompileError, match=f"does not support {library}") as info:
        SourceModule(src, no_extern_c=True)
    assert info.value.line == 3


def test_the_gpu_scripts_emulator_side():
    """bench/gpu_cu_files.py's logic, on the emulator alone (the integrator runs it on the
    H200 beside nvcc): the verdicts it prints for the emulator."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "bench" / "gpu_cu_files.py"
    spec = importlib.util.spec_from_file_location("gpu_cu_files", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    emu = script.emulator_side(["cstdio", "vector", "cuda_runtime.h", "cublas_v2.h"])
    assert emu["headers"]["cstdio"] == {"cxx": "ok", "extern_c": "ok"}
    assert emu["headers"]["vector"]["cxx"] == "ok"
    assert emu["headers"]["vector"]["extern_c"].startswith("refused: kernel.cu:1:")
    assert emu["uses"]["std::sqrt(float)"] == "ok"
    assert "--expt-relaxed-constexpr" in emu["uses"]["std::min (constexpr host)"]
    assert emu["uses"]["a host function"].startswith("refused")
    assert emu["whole_file"]["result"] == "ok"
    assert emu["whole_file"]["default mode"].startswith("refused")
    rows = list(emu["barriers"].values())
    assert all(r["matches_numpy"] for r in rows)
    assert [r["hazards_raise"] for r in rows] == ["BarrierError"] * 3 + ["completes"]
    assert rows[0]["hazards"] == ["barrier-after-exit"]
    assert rows[1]["hazards"] == rows[2]["hazards"] == ["barrier-in-divergent-code"]
    assert rows[0]["warnings"] == ["DivergentBarrierWarning"] and rows[3]["warnings"] == []


def test_the_docs_header_table_is_the_catalogues():
    from pathlib import Path

    from tilinglib.toolchain.frontend.headers import markdown_table

    doc = (Path(__file__).resolve().parent.parent / "docs" / "frontend.md").read_text()
    begin = "<!-- header table: tilinglib.toolchain.frontend.headers.markdown_table() -->\n"
    table = doc.split(begin, 1)[1].split("<!-- end of header table -->", 1)[0]
    assert table == markdown_table()
