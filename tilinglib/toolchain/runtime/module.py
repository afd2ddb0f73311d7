"""The PyCUDA-shaped front door of the emulator: SourceModule, Function, In, Out, InOut.

Signatures mirror `pycuda.compiler.SourceModule` and `pycuda.driver.Function` so that a
notebook cell runs unchanged on either backend. Compiled programs are cached on
(source, options), as PyCUDA caches on a hash of source, options and compiler version.
"""

from __future__ import annotations

import functools
import re
import warnings

import numpy as np

from ...errors import (CompileError, KernelArgumentError, KernelNotFoundError, KernelRuntimeError,
                      LaunchError, TilingLibError)
from ..codegen.compiler import compile_program
from .execute import Launch, LaunchOptions, warn_hazards, warn_if_large
from .schedule import Adversary, Plan, check_schedule
from ..model import values as V
from ..frontend.preprocess import check_options

_DEFAULT = object()     # "not given": keep LaunchOptions' default
MAX_LOCAL_BYTES = 512 * 1024    # local memory per thread, the CUDA limit (ptxas refuses more)
MAX_CONSTANT_BYTES = 64 * 1024  # __constant__ memory of a module, the CUDA limit
from ..frontend.program import parse, recursion_room
from ..frontend.preprocess import preprocess


class _ArgumentHandler:
    """Marks a NumPy array as a kernel argument, like `pycuda.driver.In/Out/InOut`."""

    copy_in = True
    copy_out = True

    def __init__(self, array):
        self.array = array

    def __repr__(self) -> str:
        a = self.array
        shape = getattr(a, "shape", "?")
        dtype = getattr(a, "dtype", "?")
        return f"{type(self).__name__}(array of shape {shape}, dtype {dtype})"


class In(_ArgumentHandler):
    """Copy the array to the device before the launch (the kernel reads it)."""

    copy_out = False


class Out(_ArgumentHandler):
    """Copy the array back after the launch (the kernel writes it). Device memory starts as
    0xFF bytes (NaN for float), so an element the kernel never writes comes back NaN."""

    copy_in = False


class InOut(_ArgumentHandler):
    """Copy in before and back after the launch."""


@functools.lru_cache(maxsize=64)
def _compile(source: str, options: tuple, extern_c: bool = False):
    try:
        pre = preprocess(source, list(options), extern_c=extern_c)
        ast = parse(pre)
        with recursion_room():
            program = compile_program(pre, ast)
    except RecursionError:
        raise CompileError("kernel.cu: the kernel nests too deeply for the emulator's compiler "
                           "(a chain of hundreds of __device__ calls, or expressions and "
                           "blocks nested as deep): flatten it") from None
    except TilingLibError:
        raise
    except Exception as exc:
        # A construct the front end or the compiler mishandles must still reach the student
        # as a compile error, never as a Python traceback from inside tilinglib.
        raise CompileError(f"kernel.cu: the emulator could not compile this source (an "
                           f"internal {type(exc).__name__} while translating it); nvcc may "
                           f"accept it: please report it with the source") from exc
    program.kernel_name = ast.kernel_name          # 'k<128,float>' -> 'k<128, float>'
    program.template_kernels = list(ast.template_kernels)
    program.template_params = dict(getattr(ast, "template_params", {}))
    for code in program.kernels.values():
        if code.local_bytes > MAX_LOCAL_BYTES:
            raise CompileError(f"kernel.cu: {code.name} needs {code.local_bytes:,} bytes of "
                               f"local memory per thread (its local arrays); CUDA allows at "
                               f"most {MAX_LOCAL_BYTES:,} (512 KiB): ptxas refuses the kernel. "
                               f"Use a smaller array, or global memory passed in by the host.")
    constant_bytes = sum(t.size for _, t, _ in program.constants)
    if constant_bytes > MAX_CONSTANT_BYTES:
        # each launch allocates them: '__constant__ int c[1 << 30]' was a 4 GB MemoryError
        names = ", ".join(name for name, _, _ in program.constants[:4])
        raise CompileError(f"kernel.cu: the __constant__ variables ({names}) take "
                           f"{constant_bytes:,} bytes; a GPU has {MAX_CONSTANT_BYTES:,} (64 KiB) "
                           f"of constant memory: ptxas refuses more. Pass big tables in global "
                           f"memory.")
    return program


class SourceModule:
    """Compile CUDA C `source` for the emulator. Same signature as PyCUDA's SourceModule;
    only `source`, `options` (``-D``/``-U`` are applied; ``-fmad``, ``-ftz``, ``-prec-div``,
    ``-prec-sqrt`` and ``--use_fast_math`` change the float arithmetic as in nvcc, see
    docs/emulator.md; ``--expt-relaxed-constexpr`` lets device code call constexpr host
    functions, as with nvcc; the rest are ignored) and `no_extern_c` matter here: without
    it the source is compiled as PyCUDA compiles it, inside ``extern "C" { }``, where an
    ``#include`` of a C++ header (``<vector>``, ``<cooperative_groups.h>``) is refused as
    nvcc refuses it.

    Raises `CompileError` (with the student's line and column) for source that does not
    compile, `UnsupportedFeatureError` for CUDA the emulator does not run.
    """

    def __init__(self, source, nvcc="nvcc", options=None, keep=False, no_extern_c=False,
                 arch=None, code=None, cache_dir=None, include_dirs=(), **kwargs):
        self.source = source
        check_options(options)
        self.options = list(options or [])
        # PyCUDA compiles the source inside extern "C" { } unless no_extern_c: a C++ header
        # there is nvcc's error, and so the emulator's (toolchain/frontend/headers.py)
        self._program = _compile(source, tuple(self.options), not no_extern_c)
        self._constant_data: dict = {}

    def get_function(self, name: str) -> "Function":
        """The `__global__` function `name`. Raises `KernelNotFoundError` (a LookupError)
        naming the kernels that exist if there is none of that name."""
        kernels = self._program.kernels
        if name not in kernels and isinstance(name, str):
            name = self._program.kernel_name(name) or name
        if name in self._program.kernel_errors:
            # the source compiled, but this kernel uses a construct the emulator lacks
            raise self._program.kernel_errors[name]
        if name not in kernels:
            known = ", ".join(sorted(kernels)) or "none"
            hint = ""
            templates = [t for t in self._program.template_kernels
                         if str(name).split("<")[0].strip() == t]
            if templates:
                hint = (f"; '{templates[0]}' is a template: instantiate it in the source, e.g. "
                        f"template __global__ void {templates[0]}<...>(...);")
            raise KernelNotFoundError(f"no __global__ function named '{name}' in this module "
                              f"(kernels found: {known}){hint}")
        return Function(self._program, kernels[name], self)

    def get_global(self, name: str):
        """``(symbol, nbytes)`` of the `__constant__` variable `name`, as PyCUDA's
        ``get_global`` gives ``(device pointer, nbytes)``. Fill it with
        ``tilinglib.emulator.memcpy_htod(symbol, array)``; every later launch of this
        module's kernels sees the copy. Raises KeyError naming the constants there are."""
        for index, (cname, t, _) in enumerate(self._program.constants):
            if cname == name:
                return ConstantSymbol(self, index, cname, t.size), t.size
        known = ", ".join(c[0] for c in self._program.constants) or "none"
        raise KeyError(f"no __constant__ variable named {name!r} in this module "
                       f"(__constant__ variables: {known})")

    def _constant_bytes(self, index: int) -> bytes:
        """The bytes a launch starts `__constant__` variable `index` with."""
        if index in self._constant_data:
            return self._constant_data[index]
        _, t, init = self._program.constants[index]
        return (b"" if init is None else init.tobytes()).ljust(t.size, b"\0")


class ConstantSymbol:
    """A `__constant__` variable of an emulated module (what `get_global` returns)."""

    def __init__(self, module, index, name, nbytes):
        self.module, self.index, self.name, self.nbytes = module, index, name, nbytes

    def __int__(self) -> int:      # PyCUDA's pointers convert to int; keep that working
        return self.index

    def __repr__(self) -> str:
        return f"<__constant__ {self.name}, {self.nbytes} bytes>"


def memcpy_htod(dest, src) -> None:
    """Copy the NumPy array `src` into the `__constant__` variable `dest` (from
    `SourceModule.get_global`), as ``pycuda.driver.memcpy_htod`` does on a GPU."""
    if not isinstance(dest, ConstantSymbol):
        raise TypeError("the emulator's memcpy_htod copies into a __constant__ variable: "
                        "pass the first value of mod.get_global(name)")
    data = np.ascontiguousarray(src).tobytes()
    if len(data) > dest.nbytes:
        raise ValueError(f"{len(data)} bytes do not fit in __constant__ {dest.name} "
                         f"({dest.nbytes} bytes)")
    dest.module._constant_data[dest.index] = data.ljust(dest.nbytes, b"\0")


def memcpy_dtoh(dest, src) -> None:
    """Copy the `__constant__` variable `src` into the NumPy array `dest`."""
    data = src.module._constant_bytes(src.index)
    flat = dest.reshape(-1).view(np.uint8)
    flat[:] = np.frombuffer(data[:flat.shape[0]], dtype=np.uint8)


_DEFINE = re.compile(r"\s*#\s*define\s+([A-Za-z_]\w*)")


class Function:
    """A kernel of an emulated SourceModule. Call it like a PyCUDA Function:
    ``f(*args, block=(x, y, z), grid=(x, y[, z]), shared=bytes)``.

    A fault while the kernel runs raises a `KernelRuntimeError` (`MemoryAccessError`,
    `BarrierError`, `RaceError`, `StepBudgetExceeded`) whose message ends with the
    student's source line, quoted with a caret.

    Emulator-only keywords: `hazards` ("warn", "raise" or "ignore"), `max_steps`,
    `max_seconds` (default 60; None for no limit),
    `check_uninitialized`, `trace` (record warp 0 of block (0, 0, 0): `last_trace`, a tuple
    of `trace.WarpAccess`), `schedule` ("lockstep", the default: every thread of a batch of
    blocks statement by statement; or "adversarial": the warps of each block one at a
    time, in an order chosen from `seed`, 0 to 2**32 - 1, to make each race the lockstep
    run detects change the answer where it can; see `schedule.py`, and
    `tilinglib.find_race_failure` to search seeds). After each call, `last_report` holds
    the `LaunchReport`, `last_counters` the launch's running totals (`memory.Counters`),
    which also hold the bytes requested by shared loads and stores (`shared_load_bytes`,
    `shared_store_bytes`), and `last_schedule` the adversarial schedule's
    `schedule.ScheduleReport` (None under the lockstep one).
    """

    max_threads_per_block = 1024
    num_regs = None

    def __init__(self, program, code, module=None):
        self._module = module
        self._program = program
        self._code = code
        self.name = code.name
        self.params = list(code.params)
        self.shared_size_bytes = code.static_shared_bytes
        self.local_size_bytes = code.local_bytes
        self.const_size_bytes = sum(t.size for _, t, _ in program.constants)
        self.last_report = None
        self.last_trace = None
        self.last_counters = None
        self.last_schedule = None
        self._defined_macros = None

    def __repr__(self) -> str:
        params = ", ".join(f"{p.ctype} {p.name}" for p in self.params)
        return f"<emulated kernel {self.name}({params})>"

    @property
    def defined_macros(self) -> frozenset:
        """The names of the macros the module was compiled with: the ``-D`` options and every
        ``#define`` line of the source (whether or not an ``#if`` skipped it)."""
        if self._defined_macros is None:
            pre = self._program.pre
            found = {m.group(1) for m in map(_DEFINE.match, pre.source_lines) if m}
            self._defined_macros = frozenset(pre.defines) | frozenset(found)
        return self._defined_macros

    def __call__(self, *args, block=None, grid=(1, 1), shared=0, stream=None, texrefs=None,
                 time_kernel=False, hazards="warn", max_steps=None, check_uninitialized=True,
                 batch_threads=None, trace=False, max_seconds=_DEFAULT, schedule="lockstep",
                 seed=None):
        schedule, seed = check_schedule(schedule, seed)
        self._launch(args, block=block, grid=grid, shared=shared, hazards=hazards,
                     max_steps=max_steps, check_uninitialized=check_uninitialized,
                     batch_threads=batch_threads, trace=trace, max_seconds=max_seconds,
                     schedule=schedule, seed=seed)
        return None

    def _launch(self, args, *, block, grid, shared=0, hazards="warn", max_steps=None,
                check_uninitialized=True, batch_threads=None, trace=False,
                max_seconds=_DEFAULT, schedule="lockstep", seed=None, plan=None,
                restriction=None, follow_writers=False):
        """One launch (`__call__`'s work). Under schedule="adversarial", `plan` (a
        schedule.Plan) gives the lockstep hazards, else a lockstep run of the same launch
        on copies of the arguments finds them first; `restriction` (schedule.Restriction)
        narrows the schedule and `follow_writers` records who stored each global element
        (both for the race search, find_race_failure)."""
        from ...launch import check_launch

        check_launch(self.name, self.params, args, block=block, grid=grid, shared=shared,
                     static_shared=self.shared_size_bytes, defined_macros=self.defined_macros)
        block3 = tuple(int(b) for b in block) + (1,) * (3 - len(block))
        grid3 = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        if hazards not in ("warn", "raise", "ignore"):
            raise LaunchError(f"hazards must be 'warn', 'raise' or 'ignore', not {hazards!r}")
        if schedule == "adversarial" and trace:
            raise LaunchError("trace=True records the lockstep schedule: pass either trace=True "
                              "or schedule='adversarial', not both")
        options = LaunchOptions(hazards=hazards, check_uninitialized=check_uninitialized)
        if max_steps is not None:
            options.max_steps = int(max_steps)
        if max_seconds is not _DEFAULT:
            options.max_seconds = None if max_seconds is None else float(max_seconds)
        threads = block3[0] * block3[1] * block3[2] * grid3[0] * grid3[1] * grid3[2]
        if options.max_seconds is not None:
            warn_if_large(self.name, threads)
        if batch_threads is not None:
            options.batch_threads = int(batch_threads)
        options.trace = bool(trace)
        adversary = None
        if schedule == "adversarial" and plan is None:
            plan = self._probe(args, block3, grid3, int(shared or 0), options)
        launch = Launch(self._code, block3, grid3, int(shared or 0), options)
        values, copies = self._bind(launch, args)
        self._constants(launch)
        if schedule == "adversarial":
            adversary = Adversary(launch, seed, plan, restriction, follow_writers)
        try:
            launch.run(values, runner=None if adversary is None else adversary.run)
        except KernelRuntimeError as exc:
            # The executor knows the line; the student's text is here: quote it once.
            exc.quote_source(self._program.pre.source_lines)
            raise
        for array, alloc in copies:
            flat = array.reshape(-1).view(np.uint8)
            flat[:] = alloc.buf[:flat.shape[0]]
        launch.warn_unwritten()
        report = launch.report()
        self.last_report = report
        self.last_counters = launch.counters
        self.last_trace = tuple(launch.tracer.records) if launch.tracer is not None else None
        self.last_schedule = adversary.report() if adversary is not None else None
        if hazards == "warn" and report.hazards:
            warn_hazards(report, launch.block_hint)

    def _constants(self, launch) -> None:
        """Allocate the module's `__constant__` variables in `launch`'s global memory."""
        for index, (name, t, init) in enumerate(self._program.constants):
            if self._module is not None:
                data = self._module._constant_bytes(index)
            else:
                data = b"" if init is None else init.tobytes()
            launch.constant_addresses.append(np.int64(launch.gmem.allocate(
                name, t.size, elem_size=(t.base_elem if t.is_array else t).size,
                init=data.ljust(t.size, b"\0"), readonly=True)))

    def _probe(self, args, block3, grid3, shared, options) -> Plan:
        """The hazards of a lockstep run of this launch, on copies of its arguments (nothing
        is copied back, no warning is issued): the plan of an adversarial schedule."""
        probe_options = LaunchOptions(hazards="warn",
                                      check_uninitialized=options.check_uninitialized,
                                      max_steps=options.max_steps,
                                      max_seconds=options.max_seconds,
                                      max_bytes=options.max_bytes,
                                      batch_threads=options.batch_threads)
        probe = Launch(self._code, block3, grid3, shared, probe_options)
        values, _ = self._bind(probe, args)
        self._constants(probe)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                probe.run(values)
            except KernelRuntimeError as exc:
                exc.quote_source(self._program.pre.source_lines)
                raise
        return Plan(tuple(probe.hazards.values()))

    def _bind(self, launch, args):
        """Allocate argument memory; returns (parameter values, arrays to copy back)."""
        values, copies = [], []
        total = 0
        for p, a in zip(self.params, args):
            if p.ctype.is_pointer:
                array = a.array
                total += array.nbytes
                if total > launch.options.max_bytes:
                    raise KernelArgumentError(
                        f"the arguments of {self.name} need {total:,} bytes, over the "
                        f"emulator's {launch.options.max_bytes:,}-byte limit: use a smaller N")
                init = array.tobytes() if getattr(a, "copy_in", True) else None
                addr = launch.gmem.allocate(p.name, array.nbytes, elem_size=array.itemsize,
                                            init=init,
                                            copied_back=getattr(a, "copy_out", True),
                                            track_writes=init is None)
                values.append(np.int64(addr))
                if getattr(a, "copy_out", True):
                    copies.append((array, launch.gmem.allocations[-1]))
            elif p.ctype.is_struct:
                values.append(V.struct_argument(self.name, p.name, p.ctype, a))
            else:
                values.append(p.ctype.dtype.type(a))
        return values, copies
