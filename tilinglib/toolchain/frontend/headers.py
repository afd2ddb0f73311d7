"""The header names an ``#include`` may give, and what each provides to device code.

A .cu file from a repository starts with ``#include <cuda_runtime.h>``, ``<cstdio>``,
``<vector>``, ``<cublas_v2.h>``...: nvcc reads them from the toolkit and the host compiler.
The front end reads no file (preprocess.py): it accepts every header *name* below and
satisfies it inside, with what device code may use from it (the prelude, prelude.py). Host
code that uses the rest (``std::vector``, ``cudaMalloc``, ``cublasSgemm``) is parsed and set
aside (docs/frontend.md, "Host code"). Any other name, or a file path, is a `CompileError`.

Each `Header` says:

- `library`: where the name comes from (the C or C++ standard library, POSIX, or a part of
  the CUDA toolkit);
- `device`: what device code may use from it, in the emulator as with nvcc (a name the
  prelude declares only for the host, such as ``std::min`` or ``cudaMalloc``, called from
  device code is nvcc's error, "calling a __host__ function(...) from a __global__
  function(...) is not allowed");
- `cxx`: whether it declares C++ only (templates, overloads, namespaces): inside the
  ``extern "C" { }`` that PyCUDA's `SourceModule` wraps a source in by default, nvcc
  refuses such a header ("this declaration may not have extern "C" linkage"), so the
  emulator refuses it there too, saying to pass ``no_extern_c=True``. The C headers and the
  CUDA runtime's C headers compile inside the wrapping, and so do the C++ headers that
  libstdc++ wraps in ``extern "C++"`` itself (`EXTERN_C_COMPILES`: <limits>, <utility>,
  <type_traits>, ...), as nvcc 13.0 showed on an H200 (bench/gpu_cu_files.py compiles a
  kernel after each header with nvcc in both modes and prints where nvcc and this table
  differ; its run is bench/results/gpu_cu_files_h200.json).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Header:
    """One header name: see the module docstring."""

    name: str
    library: str
    device: str
    cxx: bool = False


_NOTHING = "nothing device code uses (host declarations)"
_TYPES = "its types and macros"

# The C17 standard library (ISO/IEC 9899:2018, clause 7), as C++ includes it.
_C = {
    "assert.h": "assert()", "ctype.h": _NOTHING, "errno.h": _NOTHING, "fenv.h": _NOTHING,
    "float.h": "FLT_MAX, FLT_MIN, FLT_EPSILON, DBL_MAX, ...", "inttypes.h": _TYPES,
    "iso646.h": "the operator spellings (and, or, not, ...)",
    "limits.h": "INT_MAX, INT_MIN, UINT_MAX, ...", "locale.h": _NOTHING,
    "math.h": "the math functions (sqrtf, expf, fmaxf, ...), M_PI, INFINITY, NAN",
    "setjmp.h": _NOTHING, "signal.h": _NOTHING, "stdalign.h": "alignas, alignof",
    "stdarg.h": _NOTHING, "stdbool.h": "bool, true, false", "stddef.h": "size_t, NULL",
    "stdint.h": "int8_t ... uint64_t", "stdio.h": "printf",
    "stdlib.h": "abs (malloc and free in device code: not in the emulator)",
    "stdnoreturn.h": _NOTHING, "string.h": "memcpy, memset", "threads.h": _NOTHING,
    "time.h": _NOTHING, "uchar.h": _NOTHING, "wchar.h": _NOTHING, "wctype.h": _NOTHING,
}
# C headers that C++'s library makes C++ (libstdc++'s <complex.h> and <tgmath.h> include
# <complex>; <stdatomic.h> is C++23's <atomic>).
_C_AS_CXX = {"complex.h": _NOTHING, "tgmath.h": _NOTHING, "stdatomic.h": _NOTHING}

# The C++17 standard library (ISO/IEC 14882:2017, [headers]), and the C++20 names (empty
# under nvcc's default -std=c++17). Device code uses the <cXXX> forms of the C headers as
# those; from the rest only what CUDA makes __device__ (the float and double overloads of
# std::sqrt, std::abs, std::exp... in <cmath>), and std::move from <utility>.
_CXX_C = {
    "cassert": "assert()", "cctype": _NOTHING, "cerrno": _NOTHING, "cfenv": _NOTHING,
    "cfloat": "FLT_MAX, ...", "cinttypes": _TYPES, "ciso646": _NOTHING,
    "climits": "INT_MAX, ...", "clocale": _NOTHING,
    "cmath": "the math functions, and std::sqrt, std::abs, std::exp ... for float and double",
    "csetjmp": _NOTHING, "csignal": _NOTHING, "cstdalign": _NOTHING, "cstdarg": _NOTHING,
    "cstdbool": _NOTHING, "cstddef": "size_t, NULL", "cstdint": "int8_t ... uint64_t",
    "cstdio": "printf", "cstdlib": "abs", "cstring": "memcpy, memset", "ctime": _NOTHING,
    "cuchar": _NOTHING, "cwchar": _NOTHING, "cwctype": _NOTHING,
}
_CXX_C_AS_CXX = {"ccomplex": _NOTHING, "ctgmath": _NOTHING}
_CXX = {
    "algorithm": "nothing: std::min, std::max, std::swap are constexpr host functions "
                 "(nvcc: '--expt-relaxed-constexpr' allows them)",
    "any": _NOTHING, "array": _NOTHING, "atomic": _NOTHING, "bitset": _NOTHING,
    "chrono": _NOTHING, "codecvt": _NOTHING, "complex": _NOTHING,
    "condition_variable": _NOTHING, "deque": _NOTHING, "exception": _NOTHING,
    "execution": _NOTHING, "filesystem": _NOTHING, "forward_list": _NOTHING,
    "fstream": _NOTHING, "functional": _NOTHING, "future": _NOTHING,
    "initializer_list": _NOTHING, "iomanip": _NOTHING, "ios": _NOTHING, "iosfwd": _NOTHING,
    "iostream": "nothing (std::cout in device code is a host call: use printf)",
    "istream": _NOTHING, "iterator": _NOTHING,
    "limits": "nothing: std::numeric_limits<T>::max() is a constexpr host function",
    "list": _NOTHING, "locale": _NOTHING, "map": _NOTHING, "memory": _NOTHING,
    "memory_resource": _NOTHING, "mutex": _NOTHING, "new": _NOTHING, "numeric": _NOTHING,
    "optional": _NOTHING, "ostream": _NOTHING, "queue": _NOTHING, "random": _NOTHING,
    "ratio": _NOTHING, "regex": _NOTHING, "scoped_allocator": _NOTHING, "set": _NOTHING,
    "shared_mutex": _NOTHING, "sstream": _NOTHING, "stack": _NOTHING, "stdexcept": _NOTHING,
    "streambuf": _NOTHING, "string": _NOTHING, "string_view": _NOTHING,
    "strstream": _NOTHING, "system_error": _NOTHING, "thread": _NOTHING, "tuple": _NOTHING,
    "type_traits": _NOTHING, "typeindex": _NOTHING, "typeinfo": _NOTHING,
    "unordered_map": _NOTHING, "unordered_set": _NOTHING,
    "utility": "std::move", "valarray": _NOTHING, "variant": _NOTHING,
    "vector": "nothing (std::vector is host memory)",
    # C++20 (nvcc 13 compiles C++17 by default: these are empty there)
    "barrier": _NOTHING, "bit": _NOTHING, "compare": _NOTHING, "concepts": _NOTHING,
    "coroutine": _NOTHING, "format": _NOTHING, "latch": _NOTHING, "numbers": _NOTHING,
    "ranges": _NOTHING, "semaphore": _NOTHING, "source_location": _NOTHING,
    "span": _NOTHING, "stop_token": _NOTHING, "syncstream": _NOTHING, "version": _NOTHING,
}
# POSIX headers that CUDA samples include for timing and threads (Linux, where nvcc runs).
_POSIX = {"unistd.h": _NOTHING, "sys/time.h": _NOTHING, "sys/types.h": _NOTHING,
          "strings.h": _NOTHING,
          "pthread.h": _NOTHING, "dirent.h": _NOTHING, "fcntl.h": _NOTHING,
          "sys/stat.h": _NOTHING, "sys/mman.h": _NOTHING}

_RUNTIME = "the CUDA built-ins: threadIdx, __syncthreads, atomics, shuffles, vector types"
# The CUDA toolkit's headers (CUDA 13 include/): C API headers compile inside extern "C".
_CUDA_C = {
    "cuda.h": _RUNTIME + " (the driver API cu* is host code)",
    "cuda_runtime.h": _RUNTIME + " (cudaMalloc, cudaMemcpy ... are host code)",
    "cuda_runtime_api.h": _RUNTIME, "cuda_device_runtime_api.h": _RUNTIME,
    "device_launch_parameters.h": "threadIdx, blockIdx, blockDim, gridDim, warpSize",
    "device_functions.h": _RUNTIME, "device_atomic_functions.h": "the atomics",
    "device_types.h": _TYPES, "driver_types.h": _TYPES, "driver_functions.h": _TYPES,
    "host_defines.h": "__global__, __device__, ...", "crt/host_defines.h": "the same",
    "host_config.h": _NOTHING, "crt/host_config.h": _NOTHING,
    "builtin_types.h": _TYPES, "vector_types.h": "float4, int2, dim3, ...",
    "vector_functions.h": "make_float4, make_int2, ...", "math_constants.h": "CUDART_PI_F, ...",
    "math_functions.h": "the math functions", "crt/math_functions.h": "the math functions",
    "channel_descriptor.h": _NOTHING, "surface_types.h": _NOTHING, "texture_types.h": _NOTHING,
    "sm_20_atomic_functions.h": "the atomics", "sm_32_atomic_functions.h": "the atomics",
    "sm_35_atomic_functions.h": "the atomics", "sm_60_atomic_functions.h": "the atomics",
    "sm_20_intrinsics.h": _RUNTIME, "sm_30_intrinsics.h": "the shuffles and votes",
    "sm_32_intrinsics.h": "__ldg", "sm_35_intrinsics.h": _RUNTIME,
    "sm_61_intrinsics.h": _RUNTIME, "cuComplex.h": _NOTHING, "library_types.h": _TYPES,
    "cuda_profiler_api.h": _NOTHING + " (cudaProfilerStart/Stop)",
    "cudaProfiler.h": _NOTHING, "cudaTypedefs.h": _NOTHING, "cuda_occupancy.h": _NOTHING,
    "curand.h": _NOTHING + " (cuRAND's host API)", "cufft.h": _NOTHING,
    "cusparse.h": _NOTHING, "cusolverDn.h": _NOTHING, "nvrtc.h": _NOTHING,
    "nvToolsExt.h": _NOTHING + " (NVTX ranges)", "nvtx3/nvToolsExt.h": _NOTHING,
    "cuda_gl_interop.h": _NOTHING,
}
_CG = "cooperative groups: thread_block, tiled_partition, coalesced_threads, cg::reduce (docs/frontend.md)"
_CUDA_CXX = {
    "cooperative_groups.h": _CG, "cooperative_groups/reduce.h": _CG,
    "cooperative_groups/memcpy_async.h": "cooperative_groups::memcpy_async, wait",
    "cooperative_groups/scan.h": "nothing (cg::inclusive_scan is not in the emulator)",
    "cuda/barrier": "cuda::barrier, cuda::memcpy_async (docs/frontend.md)",
    "cuda/std/barrier": "cuda::thread_scope", "cuda/std/utility": "cuda::std::move",
    "cuda/pipeline": "nothing (cuda::pipeline is not in the emulator)",
    "cuda/atomic": "nothing (cuda::atomic is not in the emulator: use atomicAdd, ...)",
    "cuda/std/atomic": "nothing (as cuda/atomic)", "cuda/std/cstdint": "int8_t ... uint64_t",
    "cuda/std/type_traits": _NOTHING, "cuda/std/limits": _NOTHING,
    "cuda/std/array": _NOTHING, "cuda/std/cmath": "the math functions",
    "cuda/annotated_ptr": _NOTHING,
    "cuda_pipeline.h": "__pipeline_memcpy_async, __pipeline_commit, __pipeline_wait_prior",
    "cuda_pipeline_primitives.h": "the same", "cuda_awbarrier.h": _NOTHING,
    "cuda_awbarrier_primitives.h": _NOTHING,
    "cuda_fp16.h": "nothing: __half is refused where it is used", "cuda_fp16.hpp": "the same",
    "cuda_bf16.h": "nothing: __nv_bfloat16 is refused where it is used",
    "cuda_bf16.hpp": "the same", "cuda_fp8.h": _NOTHING,
    "mma.h": "nothing: nvcuda::wmma is refused where it is used",
    "curand_kernel.h": "nothing: cuRAND's device API (curand_init, curand_uniform) is "
                       "refused where it is used",
    "cublas_v2.h": _NOTHING + " (cuBLAS is host code)", "cublas.h": _NOTHING,
    "cublas_api.h": _NOTHING, "cublasLt.h": _NOTHING, "cublasXt.h": _NOTHING,
    "cub/cub.cuh": "nothing: cub:: is refused where it is used",
    "cub/block/block_reduce.cuh": "the same", "cub/block/block_scan.cuh": "the same",
    "cub/warp/warp_reduce.cuh": "the same", "cub/device/device_reduce.cuh": "the same",
    "cub/device/device_scan.cuh": "the same", "cub/util_type.cuh": "the same",
    "thrust/device_vector.h": _NOTHING + " (Thrust is host code)",
    "thrust/host_vector.h": _NOTHING, "thrust/reduce.h": _NOTHING,
    "thrust/sort.h": _NOTHING, "thrust/transform.h": _NOTHING, "thrust/fill.h": _NOTHING,
    "thrust/copy.h": _NOTHING, "thrust/sequence.h": _NOTHING,
    "thrust/functional.h": _NOTHING, "thrust/execution_policy.h": _NOTHING,
    "thrust/device_ptr.h": _NOTHING, "thrust/scan.h": _NOTHING,
    "thrust/iterator/counting_iterator.h": _NOTHING,
}


# Measured with nvcc 13.0 on the H200 (bench/gpu_cu_files.py, bench/results/gpu_cu_files_h200.json):
# these C++ headers compile inside PyCUDA's extern "C" wrapping, since libstdc++ wraps their
# declarations in extern "C++" itself (<vector>, <iostream>, <algorithm> ... do not); and
# these C API headers of the toolkit do not, since they declare C++ under __cplusplus.
EXTERN_C_COMPILES = frozenset({
    "barrier", "bit", "ccomplex", "compare", "complex.h", "concepts", "ctgmath", "exception",
    "format", "initializer_list", "latch", "limits", "new", "numbers", "ranges", "semaphore",
    "source_location", "span", "stdatomic.h", "stop_token", "syncstream", "tgmath.h",
    "type_traits", "typeinfo", "utility", "version"})
EXTERN_C_REFUSED = frozenset({"cuda_occupancy.h", "cusolverDn.h", "cusparse.h"})

# Header names nvcc refuses in both modes with every toolkit (seen with nvcc 13.0 on the H200,
# the same run): they are not in `HEADERS`, and the emulator refuses them with the reason
# and what to write instead (preprocess.py), where any other unknown name gets "reads no
# files". Two more failed there for want of a file that other machines have, and stay
# accepted (`MACHINE_DEPENDENT`).
NVCC_REFUSED = {
    "coroutine": "libstdc++'s <coroutine> requires -fcoroutines (C++20), which nvcc's "
                 "default C++17 lacks (nvcc: '#error \"the <coroutine> header requires "
                 "-fcoroutines\"'). Coroutines are host code: remove the #include",
    "cuda_fp16.hpp": "nvcc: 'Do not include this file directly. Instead, include "
                     "cuda_fp16.h.' Write #include <cuda_fp16.h>",
    "cuda_bf16.hpp": "nvcc: 'Do not include this file directly. Instead, include "
                     "cuda_bf16.h.' Write #include <cuda_bf16.h>",
}


# Accepted here, refused by nvcc 13.0 on the H200 for a file that machine lacks:
# cuda_gl_interop.h includes <GL/gl.h> (OpenGL's headers, installed on most desktops) and
# nvToolsExt.h is NVTX 2, which CUDA 12 still ships and CUDA 13 dropped for nvtx3/.
MACHINE_DEPENDENT = {"cuda_gl_interop.h": "needs OpenGL's headers (GL/gl.h)",
                     "nvToolsExt.h": "CUDA 12 and older (CUDA 13: nvtx3/nvToolsExt.h)"}


def _table() -> dict:
    out = {}
    for group, library, cxx in ((_C, "C standard library", False),
                                (_C_AS_CXX, "C standard library (C++ in C++)", True),
                                (_CXX_C, "C++ standard library (C headers)", False),
                                (_CXX_C_AS_CXX, "C++ standard library", True),
                                (_CXX, "C++ standard library", True),
                                (_POSIX, "POSIX", False),
                                (_CUDA_C, "CUDA toolkit (C API)", False),
                                (_CUDA_CXX, "CUDA toolkit (C++)", True)):
        for name, device in group.items():
            if name in NVCC_REFUSED:
                continue
            out[name] = Header(name, library, device,
                               (cxx or name in EXTERN_C_REFUSED) and name not in EXTERN_C_COMPILES)
    return out


HEADERS: dict = _table()
"""Every header name an ``#include`` may give: name -> `Header`."""

# Headers whose declarations the prelude reads only when the source includes them.
COOPERATIVE_GROUPS_HEADERS = frozenset({"cooperative_groups.h", "cooperative_groups/reduce.h",
                                        "cooperative_groups/memcpy_async.h",
                                        "cooperative_groups/scan.h"})

# CUDA libraries whose device API the emulator does not run: a name of theirs used in
# device code is an UnsupportedFeatureError naming the library (the #include is fine).
UNSUPPORTED_LIBRARIES = {
    "cub": "CUB (cub::BlockReduce, cub::WarpReduce, ...)",
    "nvcuda": "the warp matrix functions of <mma.h> (nvcuda::wmma)",
    "curand": "cuRAND's device API (curand_init, curand_uniform, curandState)",
    "thrust": "Thrust in device code",
}


def header(name: str) -> Header | None:
    """The `Header` of `name` (as written between the brackets or quotes), or None."""
    return HEADERS.get(name.strip())


def table_rows() -> list:
    """(name, library, device, refused inside extern "C") for every header, sorted by
    library then name: the table of docs/frontend.md."""
    return sorted(((h.name, h.library, h.device, h.cxx) for h in HEADERS.values()),
                  key=lambda r: (r[1], r[0]))


def markdown_table() -> str:
    """The header table of docs/frontend.md ("A .cu file as written"), from `HEADERS`: one
    row per library and what device code gets (tests/test_cu_files.py checks the doc)."""
    groups: dict = {}
    for name, library, device, cxx in table_rows():
        groups.setdefault((library, device, cxx), []).append(name)
    rows = ["| library | headers | what device code gets | inside extern \"C\" |",
            "|---|---|---|---|"]
    for (library, device, cxx), names in sorted(groups.items()):
        rows.append(f"| {library} | {', '.join('`' + n + '`' for n in names)} | {device} | "
                    f"{'refused' if cxx else 'compiles'} |")
    return "\n".join(rows) + "\n"
