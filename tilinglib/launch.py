"""Launch helpers shared by both backends: grid sizes, and the checks made before a launch.

A GPU answers most launch mistakes with a bare ``invalid argument``, or worse with nothing at
all (a float64 array passed for ``float*`` is read as garbage). `check_launch` looks at a
launch before anything runs, on the PyCUDA backend and on the CPU emulator alike, and says
what to change. `grid_for` is the ceil-division every launch needs.

Limits are those of the CUDA C++ Programming Guide, "Technical Specifications per Compute
Capability", for compute capability 9.0 (H100, H200); on a GPU the PyCUDA backend reads them
from the device instead (`DeviceLimits.from_pycuda_device`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import KernelArgumentError, LaunchError
from .gpu import MAX_THREADS_PER_BLOCK, WARP_SIZE, ceil_div

__all__ = ["DeviceLimits", "grid_for", "check_launch"]


@dataclass(frozen=True)
class DeviceLimits:
    """What one GPU allows a launch, and what one SM holds (for occupancy).

    Defaults are the CUDA limits for compute capability 9.0 (H100/H200), from the CUDA C++
    Programming Guide's table of technical specifications and the CUDA occupancy calculator
    (``cuda_occupancy.h``); `multiprocessor_count` and `max_shared_per_sm` match what PyCUDA
    reports on an H200 (132 SMs, 233,472 B). All sizes are in bytes.
    """

    name: str = "compute capability 9.0 (CUDA limits)"
    compute_capability: tuple[int, int] = (9, 0)
    multiprocessor_count: int = 132
    warp_size: int = WARP_SIZE
    max_threads_per_block: int = MAX_THREADS_PER_BLOCK
    max_block_dim: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dim: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    # Shared memory: a block may use 48 KiB without opting in, up to 227 KiB after
    # cudaFuncSetAttribute(MaxDynamicSharedMemorySize). The driver reserves 1 KiB of an SM's
    # shared memory per resident block (compute capability 8.0 and later).
    max_shared_per_block: int = 48 * 1024
    max_shared_per_block_optin: int = 227 * 1024
    max_shared_per_sm: int = 228 * 1024
    reserved_shared_per_block: int = 1024
    shared_alloc_granularity: int = 128
    # Threads, blocks and registers per SM.
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    max_regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_granularity: int = 256   # registers are given to a warp in units of 256
    sub_partitions_per_sm: int = 4     # each SM has 4 schedulers, each with 1/4 of the registers

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    @classmethod
    def from_pycuda_device(cls, device) -> "DeviceLimits":
        """Read the limits of a `pycuda.driver.Device`.

        Attributes the driver does not report (allocation granularities, the number of
        sub-partitions) keep their compute capability 9.0 values.
        """
        import pycuda.driver as drv

        attr = drv.device_attribute

        def get(name: str, default):
            try:
                return int(device.get_attribute(getattr(attr, name)))
            except Exception:  # an attribute this driver or PyCUDA does not know
                return default

        base = cls()
        return cls(
            name=str(device.name()),
            compute_capability=tuple(device.compute_capability()),
            multiprocessor_count=get("MULTIPROCESSOR_COUNT", base.multiprocessor_count),
            warp_size=get("WARP_SIZE", base.warp_size),
            max_threads_per_block=get("MAX_THREADS_PER_BLOCK", base.max_threads_per_block),
            max_block_dim=(get("MAX_BLOCK_DIM_X", 1024), get("MAX_BLOCK_DIM_Y", 1024),
                           get("MAX_BLOCK_DIM_Z", 64)),
            max_grid_dim=(get("MAX_GRID_DIM_X", 2**31 - 1), get("MAX_GRID_DIM_Y", 65535),
                          get("MAX_GRID_DIM_Z", 65535)),
            max_shared_per_block=get("MAX_SHARED_MEMORY_PER_BLOCK", base.max_shared_per_block),
            max_shared_per_block_optin=get("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
                                           base.max_shared_per_block_optin),
            max_shared_per_sm=get("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", base.max_shared_per_sm),
            reserved_shared_per_block=get("RESERVED_SHARED_MEMORY_PER_BLOCK",
                                          base.reserved_shared_per_block),
            max_threads_per_sm=get("MAX_THREADS_PER_MULTIPROCESSOR", base.max_threads_per_sm),
            max_blocks_per_sm=get("MAX_BLOCKS_PER_MULTIPROCESSOR", base.max_blocks_per_sm),
            regs_per_sm=get("MAX_REGISTERS_PER_MULTIPROCESSOR", base.regs_per_sm),
            max_regs_per_block=get("MAX_REGISTERS_PER_BLOCK", base.max_regs_per_block),
        )


# ---------------------------------------------------------------------------------------
# Grid sizes
# ---------------------------------------------------------------------------------------

def _as_int(value, what: str) -> int:
    """A Python int from an int-like value (int, np.int32, ...); refuse floats and bools."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        hint = ""
        if isinstance(value, numbers.Real):
            hint = " (use // for integer division: N // 32, not N / 32)"
        raise LaunchError(f"{what} must be a whole number, got {value!r} "
                          f"of type {type(value).__name__}{hint}.")
    return int(value)


def _as_dims(value, what: str) -> tuple[int, ...]:
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return (int(value),)
    if not isinstance(value, (tuple, list)):
        raise LaunchError(f"{what} must be a tuple of whole numbers such as (32, 32, 1), "
                          f"got {value!r}.")
    return tuple(_as_int(v, f"{what}[{i}]") for i, v in enumerate(value))


def grid_for(n, block) -> tuple[int, ...]:
    """How many blocks cover `n` threads: ceil(n / block), per dimension.

    `n` is the problem size in threads, an int (one dimension) or a tuple ``(nx, ny[, nz])``;
    `block` is the block shape, an int or a tuple of the same or greater length (extra block
    entries, such as the trailing 1 of ``(32, 32, 1)``, are ignored). Returns a tuple of
    Python ints with one entry per entry of `n`, ready for ``grid=``::

        grid_for(1000, 256)                -> (4,)
        grid_for((N, N), (32, 32, 1))      -> (ceil(N/32), ceil(N/32))

    Order is CUDA's: x first, so for a matrix of `rows` x `cols` pass ``(cols, rows)``.
    A kernel launched this way must guard its last, partly filled blocks
    (``if (row < N && col < N)``). Raises `LaunchError` for sizes below 1 or mismatched
    lengths.
    """
    ns = _as_dims(n, "n")
    bs = _as_dims(block, "block")
    if len(bs) < len(ns):
        raise LaunchError(f"n has {len(ns)} dimensions but block only {len(bs)}: "
                          f"give a block size for each, e.g. grid_for({ns}, (32, 32, 1)).")
    for i, (ni, bi) in enumerate(zip(ns, bs)):
        if ni < 1 or bi < 1:
            raise LaunchError(f"grid_for needs sizes of at least 1, got n[{i}]={ni}, "
                              f"block[{i}]={bi}.")
    return tuple(ceil_div(ni, bi) for ni, bi in zip(ns, bs))


# ---------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------

_AXES = "xyz"


def _numpy_name(dtype: np.dtype) -> str:
    return f"np.{np.dtype(dtype).name}"


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a bare NumPy array (dtype {value.dtype}, shape {value.shape})"
    if isinstance(value, np.generic):
        return f"a {_numpy_name(value.dtype)} ({value.item()!r})"
    if isinstance(value, bool):
        return "a Python bool"
    if isinstance(value, int):
        return "a Python int"
    if isinstance(value, float):
        return "a Python float"
    if _wrapped_array(value) is not None:
        return f"{type(value).__name__}(array)"
    return f"a {type(value).__name__}"


def _wrapped_array(value: Any):
    """The host array inside an In/Out/InOut (PyCUDA's ArgumentHandler keeps it as `.array`)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return None
    return getattr(value, "array", None)


def _direction(value: Any) -> str:
    """'InOut', 'Out' or 'In': the name of the wrapper class (or a base of it)."""
    for klass in type(value).__mro__:
        if klass.__name__ in ("InOut", "Out", "In"):
            return klass.__name__
    return type(value).__name__


def _is_device_pointer(value: Any) -> bool:
    """Memory already on the device: a PyCUDA DeviceAllocation, a GPUArray, a CuPy array."""
    if hasattr(value, "__cuda_array_interface__") or hasattr(value, "gpudata"):
        return True
    return type(value).__name__ in ("DeviceAllocation", "PooledDeviceAllocation")


def _param_label(index: int, param) -> str:
    return f"parameter #{index} '{param.name}' ({param.ctype})"


def _scalar_fix(ctype, value: Any) -> str:
    shown = value if not isinstance(value, np.generic) else value.item()
    return f"{_numpy_name(ctype.dtype)}({shown!r})"


def _check_scalar(kernel: str, index: int, param, value: Any) -> None:
    ctype = param.ctype
    want = np.dtype(ctype.dtype)
    label = _param_label(index, param)
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        raise KernelArgumentError(
            f"{kernel}: {label} got {_describe(value)}. A kernel parameter has a fixed C type "
            f"and Python numbers have none: pass {_scalar_fix(ctype, value)}.")
    if isinstance(value, np.generic):
        if value.dtype != want:
            raise KernelArgumentError(
                f"{kernel}: {label} got {_describe(value)}, but the kernel takes "
                f"{ctype} ({_numpy_name(want)}): pass {_scalar_fix(ctype, value)}.")
        return
    if isinstance(value, np.ndarray) or _wrapped_array(value) is not None:
        raise KernelArgumentError(
            f"{kernel}: {label} got {_describe(value)}, but the kernel takes one {ctype} "
            f"by value: pass a scalar such as {_numpy_name(want)}(...).")
    raise KernelArgumentError(
        f"{kernel}: {label} got {_describe(value)}: pass a {_numpy_name(want)}(...).")


def _check_pointer(kernel: str, index: int, param, value: Any) -> None:
    label = _param_label(index, param)
    target = getattr(param.ctype, "target", None)
    if getattr(target, "is_array", False):      # float (*C)[N]: the rows' elements
        target = target.base_elem
    want = getattr(target, "dtype", None) if getattr(target, "is_scalar", False) else None
    name = param.name or f"#{index}"
    if isinstance(value, np.ndarray):
        raise KernelArgumentError(
            f"{kernel}: {label} got {_describe(value)}. Say which way the data goes: "
            f"tl.In({name}) to read it in the kernel, tl.Out({name}) to get results back, "
            f"tl.InOut({name}) for both.")
    array = _wrapped_array(value)
    if array is None:
        if _is_device_pointer(value):
            dtype = getattr(value, "dtype", None)
            if want is not None and dtype is not None and np.dtype(dtype) != want:
                raise KernelArgumentError(
                    f"{kernel}: {label} got a device array of dtype {np.dtype(dtype)}; the "
                    f"kernel reads {_numpy_name(want)}: convert it (x.astype({_numpy_name(want)})).")
            return
        raise KernelArgumentError(
            f"{kernel}: {label} got {_describe(value)}; the kernel takes a pointer: pass an "
            f"array wrapped in tl.In(...), tl.Out(...) or tl.InOut(...).")
    if not isinstance(array, np.ndarray):
        raise KernelArgumentError(
            f"{kernel}: {label}: {type(value).__name__}(...) holds a "
            f"{type(array).__name__}, not a NumPy array: wrap np.asarray(...) instead.")
    if want is not None and array.dtype != want:
        if _direction(value) in ("Out", "InOut"):
            # A converted copy would receive the results, and the caller's array would not.
            fix = (f"make {name} with dtype={_numpy_name(want)} (e.g. "
                   f"{name} = np.empty(shape, dtype={_numpy_name(want)})) and pass that")
        else:
            fix = (f"pass {name}.astype({_numpy_name(want)}), or make the array with "
                   f"dtype={_numpy_name(want)} in the first place")
        raise KernelArgumentError(
            f"{kernel}: {label} got an array of dtype {array.dtype}, but the kernel reads "
            f"{target} ({want.itemsize} bytes an element) and would see garbage: {fix}.")
    if not array.flags.c_contiguous:
        why = ("it is a transposed view (.T); the kernel indexes memory row by row"
               if array.flags.f_contiguous else "it is a strided view of another array")
        raise KernelArgumentError(
            f"{kernel}: {label} got an array that is not C-contiguous ({why}): pass "
            f"tl.{_direction(value)}(np.ascontiguousarray({name})).")
    if _direction(value) in ("Out", "InOut") and not array.flags.writeable:
        raise KernelArgumentError(
            f"{kernel}: {label} is {_direction(value)}(...) of a read-only array, so the "
            f"results cannot be copied back: pass a writable copy ({name}.copy()).")


def _check_args(kernel: str, params: Sequence, args: Sequence) -> None:
    if len(args) != len(params):
        signature = ", ".join(f"{p.ctype} {p.name}" for p in params)
        raise KernelArgumentError(
            f"{kernel} takes {len(params)} argument{'s' if len(params) != 1 else ''} "
            f"({signature}), but {len(args)} {'were' if len(args) != 1 else 'was'} passed.")
    for index, (param, value) in enumerate(zip(params, args)):
        ctype = param.ctype
        if getattr(ctype, "is_pointer", False):
            _check_pointer(kernel, index, param, value)
        elif getattr(ctype, "is_scalar", False):
            _check_scalar(kernel, index, param, value)
        # Other parameter types (structs such as float4 by value) are not checked here.


# ---------------------------------------------------------------------------------------
# Launch configuration checks
# ---------------------------------------------------------------------------------------

def _tile_hint(defined_macros, most: int) -> str:
    """The course's hint for a block over the limit: a kernel with a TILE macro (lessons 03
    to 06: one thread per element of a TILE x TILE tile) is told how large TILE can be."""
    if "TILE" not in defined_macros:
        return ""
    side = int(most ** 0.5)
    return (f" For a TILE x TILE tile with one thread per element, TILE can be at most "
            f"{side} ({side} x {side} = {most:,}).")


def _check_block(kernel: str, block, limits: DeviceLimits, max_threads: int | None,
                 defined_macros=()) -> tuple:
    if block is None:
        raise LaunchError(f"{kernel}: no block size: pass block=(x, y, z), e.g. block=(32, 32, 1).")
    dims = _as_dims(block, f"{kernel}: block")
    if len(dims) != 3:
        raise LaunchError(
            f"{kernel}: block={tuple(block) if isinstance(block, (list, tuple)) else block} "
            f"must have three entries (x, y, z): write "
            f"block={tuple(dims) + (1,) * (3 - len(dims)) if len(dims) < 3 else dims[:3]}.")
    for axis, d, lim in zip(_AXES, dims, limits.max_block_dim):
        if d < 1:
            raise LaunchError(f"{kernel}: block.{axis} = {d}; every block size must be at least 1.")
        if d > lim:
            raise LaunchError(
                f"{kernel}: block.{axis} = {d} is over the limit of {lim} for {axis} "
                f"(limits {limits.max_block_dim[0]}, {limits.max_block_dim[1]}, "
                f"{limits.max_block_dim[2]}): use a smaller block.")
    threads = dims[0] * dims[1] * dims[2]
    if threads > limits.max_threads_per_block:
        most = limits.max_threads_per_block
        side = int(most ** 0.5)
        tile = _tile_hint(defined_macros, most)
        raise LaunchError(
            f"{kernel}: block={dims} has {threads:,} threads; a block holds at most "
            f"{most:,} threads, e.g. {side} x {side}: use a smaller block.{tile}")
    if max_threads is not None and threads > max_threads:
        raise LaunchError(
            f"{kernel}: block={dims} has {threads:,} threads, but this kernel can run at "
            f"most {max_threads:,} per block (its registers per thread limit it): use a "
            f"smaller block.")
    return dims


def _check_grid(kernel: str, grid, limits: DeviceLimits) -> tuple:
    dims = _as_dims(grid, f"{kernel}: grid")
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"{kernel}: grid={dims} must have one to three entries (x, y, z).")
    for axis, d, lim in zip(_AXES, dims, limits.max_grid_dim):
        if d < 1:
            raise LaunchError(
                f"{kernel}: grid.{axis} = {d}: a grid needs at least one block in every "
                f"dimension. If it came from N // block, N is smaller than the block: use "
                f"tl.grid_for(N, block), which rounds up.")
        if d > lim:
            raise LaunchError(
                f"{kernel}: grid.{axis} = {d:,} is over the limit of {lim:,} blocks for "
                f"{axis} (limits {limits.max_grid_dim[0]:,}, {limits.max_grid_dim[1]:,}, "
                f"{limits.max_grid_dim[2]:,}): use bigger blocks, or put the large count in x.")
    return dims


def _check_shared(kernel: str, shared, static_shared: int, limits: DeviceLimits) -> None:
    dynamic = _as_int(shared if shared is not None else 0, f"{kernel}: shared")
    if dynamic < 0:
        raise LaunchError(f"{kernel}: shared={dynamic}: dynamic shared memory cannot be negative.")
    total = dynamic + int(static_shared or 0)
    if total > limits.max_shared_per_block:
        raise LaunchError(
            f"{kernel}: this launch needs {total:,} bytes of shared memory per block "
            f"({int(static_shared or 0):,} static __shared__ + {dynamic:,} dynamic from "
            f"shared=), over the {limits.max_shared_per_block:,}-byte "
            f"({limits.max_shared_per_block / 1024:g} KiB) limit per block: use a smaller "
            f"tile or a smaller shared= value.")


def check_launch(kernel_name: str, params: Sequence | None, args: Sequence, *, block,
                 grid=(1, 1), shared=0, static_shared: int = 0,
                 limits: DeviceLimits = DeviceLimits(),
                 max_threads_per_block: int | None = None, defined_macros=()) -> None:
    """Refuse a launch that a GPU would refuse or misread, with a message saying what to change.

    Used by both backends before anything runs. Arguments:

    - `kernel_name`: the kernel's name, for messages;
    - `params`: the kernel's parameters, a list of objects with `.name` and `.ctype`
      (`tilinglib.toolchain.model.c_types` types: a `Scalar` with `.dtype`, or a `Pointer` with
      `.target`), as `tilinglib.toolchain.codegen.compiler.kernel_signatures` returns them; None skips
      the argument checks (only block, grid and shared memory are checked);
    - `args`: what the caller passed: NumPy scalars for value parameters, arrays wrapped in
      `In`/`Out`/`InOut` (anything with an `.array` attribute, like PyCUDA's
      ArgumentHandler) or device memory for pointers;
    - `block` (3 ints), `grid` (1 to 3 ints), `shared` (dynamic shared bytes),
      `static_shared` (the kernel's static ``__shared__`` bytes), as for PyCUDA's call;
    - `limits`: the device's `DeviceLimits` (compute capability 9.0 by default);
    - `max_threads_per_block`: the kernel's own limit, where known (PyCUDA's
      ``Function.max_threads_per_block``; heavy register use lowers it below 1,024);
    - `defined_macros`: the macro names the kernel was compiled with (the emulator's
      ``Function.defined_macros``: -D options and #define lines); with TILE among them a block
      over the limit also says how large TILE can be (`_tile_hint`, the course's hint).

    Raises `KernelArgumentError` (a TypeError) for: a wrong number of arguments; a Python int
    or float for a scalar parameter (use ``np.int32(N)``, ``np.float32(x)``); a NumPy
    scalar of the wrong dtype; a bare array, or an array of the wrong dtype (e.g. float64
    for ``float*``: use ``A.astype(np.float32)``), a non-C-contiguous array
    (``np.ascontiguousarray``), or a read-only array behind Out/InOut.
    Raises `LaunchError` (a ValueError) for: a block that is not three whole numbers, over
    1,024 threads or over a dimension limit (1024, 1024, 64); grid entries below 1 or over
    the limits (2^31-1, 65535, 65535); static plus dynamic shared memory over the per-block
    limit (48 KiB unless the kernel opted in to more).
    """
    _check_block(kernel_name, block, limits, max_threads_per_block, defined_macros)
    _check_grid(kernel_name, grid, limits)
    _check_shared(kernel_name, shared, static_shared, limits)
    if params is not None:
        _check_args(kernel_name, params, args)
