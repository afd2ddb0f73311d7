"""Tests of tilinglib.launch: grid_for and the checks made before every launch."""

from collections import namedtuple

import numpy as np
import pytest

from tilinglib.toolchain.model.c_types import FLOAT, INT, UINT, Pointer
from tilinglib.errors import KernelArgumentError, LaunchError
from tilinglib.launch import DeviceLimits, check_launch, grid_for

Param = namedtuple("Param", "name ctype")

SGEMM = [Param("N", INT), Param("A", Pointer(FLOAT)), Param("B", Pointer(FLOAT)),
         Param("C", Pointer(FLOAT))]


class In:
    """Stands for PyCUDA's / the emulator's In: keeps the host array as `.array`."""

    def __init__(self, array):
        self.array = array


class Out(In):
    pass


class InOut(In):
    pass


def sgemm_args(n=64, dtype=np.float32):
    a = np.ones((n, n), dtype)
    return [np.int32(n), In(a), In(a.copy()), Out(np.zeros((n, n), dtype))]


def check(args, params=SGEMM, block=(32, 32, 1), grid=(2, 2), **kw):
    check_launch("sgemmNaive", params, args, block=block, grid=grid, **kw)


# --- grid_for -------------------------------------------------------------------------

def test_grid_for_rounds_up_per_dimension():
    assert grid_for(1000, 256) == (4,)
    assert grid_for(1024, 256) == (4,)
    assert grid_for((100, 40), (32, 32, 1)) == (4, 2)
    assert grid_for((4096, 4096), (32, 32)) == (128, 128)


def test_grid_for_returns_python_ints():
    grid = grid_for((np.int32(65), np.int64(33)), (np.int32(32), 32, 1))
    assert grid == (3, 2)
    assert all(type(g) is int for g in grid)


@pytest.mark.parametrize("n, block", [(0, 32), (10, 0), ((10, 10), (32,)), (10.0, 32)])
def test_grid_for_refuses_bad_sizes(n, block):
    with pytest.raises(LaunchError):
        grid_for(n, block)


# --- arguments ------------------------------------------------------------------------

def test_correct_launch_passes():
    check(sgemm_args())   # raises nothing


def test_python_int_for_int_parameter_says_np_int32():
    args = sgemm_args()
    args[0] = 64
    with pytest.raises(KernelArgumentError) as err:
        check(args)
    message = str(err.value)
    assert "parameter #0 'N'" in message
    assert "np.int32(64)" in message


def test_python_float_for_float_parameter_says_np_float32():
    params = [Param("n", INT), Param("a", FLOAT), Param("x", Pointer(FLOAT)),
              Param("y", Pointer(FLOAT))]
    x = np.ones(8, np.float32)
    with pytest.raises(KernelArgumentError, match=r"np\.float32\(2\.0\)"):
        check([np.int32(8), 2.0, In(x), InOut(x.copy())], params=params)


def test_numpy_scalar_of_wrong_dtype():
    args = sgemm_args()
    args[0] = np.int64(64)
    with pytest.raises(KernelArgumentError) as err:
        check(args)
    assert "np.int64" in str(err.value) and "np.int32(64)" in str(err.value)


def test_unsigned_parameter_wants_uint32():
    params = [Param("n", UINT)]
    with pytest.raises(KernelArgumentError, match=r"np\.uint32"):
        check([np.int32(3)], params=params)
    check([np.uint32(3)], params=params)


def test_float64_array_for_float_pointer_says_astype():
    args = sgemm_args(dtype=np.float64)
    with pytest.raises(KernelArgumentError) as err:
        check(args)
    message = str(err.value)
    assert "parameter #1 'A'" in message
    assert "float64" in message and "A.astype(np.float32)" in message


def test_int_array_for_float_pointer():
    args = sgemm_args()
    args[2] = In(np.ones((64, 64), np.int32))
    with pytest.raises(KernelArgumentError, match=r"B\.astype\(np\.float32\)"):
        check(args)


def test_bare_array_must_be_wrapped():
    args = sgemm_args()
    args[1] = args[1].array
    with pytest.raises(KernelArgumentError) as err:
        check(args)
    assert "tl.In(A)" in str(err.value) and "tl.Out(A)" in str(err.value)


def test_transposed_array_is_refused_with_ascontiguousarray():
    args = sgemm_args()
    args[2] = In(np.ones((64, 32), np.float32).T)
    with pytest.raises(KernelArgumentError) as err:
        check(args)
    assert "tl.In(np.ascontiguousarray(B))" in str(err.value)
    assert ".T" in str(err.value)


def test_strided_view_is_refused():
    args = sgemm_args()
    args[1] = In(np.ones((64, 128), np.float32)[:, ::2])
    with pytest.raises(KernelArgumentError, match="not C-contiguous"):
        check(args)


def test_read_only_output_is_refused():
    args = sgemm_args()
    out = np.zeros((64, 64), np.float32)
    out.flags.writeable = False
    args[3] = Out(out)
    with pytest.raises(KernelArgumentError, match=r"C\.copy\(\)"):
        check(args)


def test_wrong_argument_count_lists_the_signature():
    with pytest.raises(KernelArgumentError) as err:
        check(sgemm_args()[:3])
    message = str(err.value)
    assert "takes 4 arguments" in message and "3 were passed" in message
    assert "int N, float* A" in message


def test_scalar_for_pointer_and_array_for_scalar():
    args = sgemm_args()
    args[3] = np.float32(0)
    with pytest.raises(KernelArgumentError, match="takes a pointer"):
        check(args)
    args = sgemm_args()
    args[0] = In(np.ones(4, np.int32))
    with pytest.raises(KernelArgumentError, match="by value"):
        check(args)


def test_device_memory_is_accepted_and_dtype_checked_when_known():
    class FakeGPUArray:
        def __init__(self, dtype):
            self.gpudata = 1234
            self.dtype = np.dtype(dtype)

    args = sgemm_args()
    args[1] = FakeGPUArray(np.float32)
    check(args)
    args[1] = FakeGPUArray(np.float64)
    with pytest.raises(KernelArgumentError, match="float64"):
        check(args)


def test_params_none_skips_argument_checks():
    check([64, "anything"], params=None)


# --- block, grid, shared memory -------------------------------------------------------

@pytest.mark.parametrize("block, fragment", [
    ((64, 32, 1), "2,048 threads"),
    ((2048, 1, 1), "block.x = 2048"),
    ((1, 1, 65), "block.z = 65"),
    ((32, 32), "three entries"),
    ((0, 1, 1), "at least 1"),
    ((16.0, 16, 1), "whole number"),
])
def test_block_limits(block, fragment):
    with pytest.raises(LaunchError) as err:
        check(sgemm_args(), block=block)
    assert fragment in str(err.value)


def test_thousand_threads_is_the_last_legal_block():
    check(sgemm_args(), block=(32, 32, 1))
    check(sgemm_args(), block=(1024, 1, 1))


def test_kernel_own_thread_limit():
    with pytest.raises(LaunchError, match="at most 512"):
        check(sgemm_args(), block=(32, 32, 1), max_threads_per_block=512)


@pytest.mark.parametrize("grid, fragment", [
    ((0, 1), "grid.x = 0"),
    ((4, -1), "grid.y = -1"),
    ((1, 65536), "grid.y = 65,536"),
    ((2**31, 1), "grid.x = 2,147,483,648"),
    ((2.0, 2), "N // 32"),
    ((1, 1, 1, 1), "one to three"),
])
def test_grid_limits(grid, fragment):
    with pytest.raises(LaunchError) as err:
        check(sgemm_args(), grid=grid)
    assert fragment in str(err.value)


def test_grid_may_be_an_int_or_have_three_entries():
    check(sgemm_args(), grid=4)
    check(sgemm_args(), grid=(2**31 - 1, 65535, 65535))


def test_shared_memory_over_48_kib_names_both_parts():
    with pytest.raises(LaunchError) as err:
        check(sgemm_args(), shared=200_000, static_shared=8_192)
    message = str(err.value)
    assert "208,192 bytes" in message
    assert "8,192 static" in message and "200,000 dynamic" in message
    assert "49,152-byte (48 KiB)" in message


def test_shared_memory_exactly_at_the_limit_passes():
    check(sgemm_args(), shared=49152 - 8448, static_shared=8448)
    with pytest.raises(LaunchError):
        check(sgemm_args(), shared=49152 - 8448 + 1, static_shared=8448)
    with pytest.raises(LaunchError, match="negative"):
        check(sgemm_args(), shared=-1)


def test_limits_can_be_raised_for_opt_in_kernels():
    limits = DeviceLimits(max_shared_per_block=DeviceLimits().max_shared_per_block_optin)
    check(sgemm_args(), shared=200_000, limits=limits)


def test_default_limits_are_compute_capability_9_0():
    limits = DeviceLimits()
    assert limits.compute_capability == (9, 0)
    assert limits.max_block_dim == (1024, 1024, 64)
    assert limits.max_grid_dim == (2147483647, 65535, 65535)
    assert limits.max_shared_per_block == 49152
    assert limits.max_shared_per_sm == 233472        # measured on an H200 through PyCUDA
    assert limits.max_warps_per_sm == 64
