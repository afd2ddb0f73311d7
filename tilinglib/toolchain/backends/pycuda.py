"""The PyCUDA backend: PyCUDA's own SourceModule and In/Out/InOut, with three repairs.

What students call is PyCUDA (``pycuda.compiler.SourceModule``, ``get_function``, a call with
``block=``, ``grid=``, ``shared=``), wrapped thinly so that:

1. compile errors name the student's own line numbers. PyCUDA puts ``extern "C" {`` on a
   line of its own before the source, so nvcc's line numbers are one too many; here the
   source is wrapped with a ``#line 1`` directive after that line instead (and PyCUDA told
   ``no_extern_c=True``), and nvcc's text is raised as tilinglib's `CompileError`;
2. every launch is checked first (`tilinglib.launch.check_launch`): argument types and
   dtypes, block, grid and shared memory, where PyCUDA would say ``invalid argument`` or
   pass a float64 array through as garbage; a launch the driver still refuses (too many
   registers for the block) is raised as `LaunchError` with the numbers;
3. a sticky CUDA error (an illegal memory access, for one) kills the context until the
   process restarts. It is reported once as `ContextLostError` with what to do, and every
   later call raises the same short error instead of a cascade of driver errors.

Nothing here imports PyCUDA at module import; `backend_fields` does, when the backend is
chosen (tilinglib.backend builds its `Backend` from them; this module imports no backend).
"""

from __future__ import annotations

import contextlib
import functools
import re
import warnings
from dataclasses import replace
from typing import Any

from ...errors import CompileError, ContextLostError, KernelNotFoundError, LaunchError
from ...launch import DeviceLimits, check_launch

__all__ = ["SourceModule", "CheckedFunction", "CudaSession", "backend_fields",
           "wrap_source", "compile_error_from_nvcc", "is_sticky_error"]


# ---------------------------------------------------------------------------------------
# The GPU context
# ---------------------------------------------------------------------------------------

#: Texts of the CUDA errors that leave the context unusable (cuGetErrorString's wording for
#: CUDA_ERROR_ILLEGAL_ADDRESS, _LAUNCH_FAILED, _MISALIGNED_ADDRESS, _ILLEGAL_INSTRUCTION,
#: _INVALID_PC, _HARDWARE_STACK_ERROR, _INVALID_ADDRESS_SPACE, _LAUNCH_TIMEOUT, _ASSERT,
#: _ECC_UNCORRECTABLE), matched in lower case.
STICKY_ERROR_TEXTS = (
    "illegal memory access",
    "unspecified launch failure",
    "misaligned address",
    "illegal instruction",
    "invalid program counter",
    "hardware stack error",
    "not supported on global/shared address space",
    "launch timed out",
    "device-side assert",
    "uncorrectable ecc error",
)


def is_sticky_error(exc: BaseException) -> bool:
    """True when `exc` is a CUDA error after which the context cannot be used again."""
    text = str(exc).lower()
    return any(fragment in text for fragment in STICKY_ERROR_TEXTS)


class CudaSession:
    """The process's GPU: PyCUDA's driver module, the device, its limits, and whether the
    context has been lost. One per process (`current`), made when the backend is chosen."""

    def __init__(self, drv, device, limits: DeviceLimits):
        self.drv = drv
        self.device = device
        self.device_name = str(device.name())
        self.limits = limits
        self.lost: str | None = None      # the CUDA error that killed the context

    @staticmethod
    @functools.lru_cache(maxsize=1)
    def current() -> "CudaSession":
        """Open (once) the primary context of the first usable device, as
        ``import pycuda.autoprimaryctx`` does, and describe it."""
        import pycuda.driver as drv

        drv.init()
        if drv.Device.count() == 0:
            raise RuntimeError("the CUDA driver found no CUDA device")
        import pycuda.autoprimaryctx as primary  # retains and pushes the primary context; once

        device = primary.device
        return CudaSession(drv, device, DeviceLimits.from_pycuda_device(device))

    def _lost_error(self) -> ContextLostError:
        return ContextLostError(
            f"the GPU context is lost: restart the notebook kernel (Kernel > Restart) and run "
            f"the cells again (earlier: {self.lost}).")

    @contextlib.contextmanager
    def guard(self, what: str):
        """Run a PyCUDA call; turn a sticky CUDA error into `ContextLostError`, once."""
        if self.lost is not None:
            raise self._lost_error()
        try:
            yield
        except ContextLostError:
            raise
        except Exception as exc:
            if not is_sticky_error(exc):
                raise
            self.lost = f"{what}: {type(exc).__name__}: {exc}"
            raise ContextLostError(
                f"the GPU context is lost: restart the notebook kernel (Kernel > Restart) and "
                f"run the cells again.\n{what} failed with\n    {type(exc).__name__}: {exc}\n"
                f"An error like this, most often a kernel reading or writing outside its "
                f"arrays, leaves the CUDA context unusable: every later GPU call in this "
                f"process would fail too. To find the bad access, run the same kernel on the "
                f"CPU emulator (from tilinglib.toolchain.backends.emulator import SourceModule), which names the "
                f"line, index, block and thread; check the `if (row < N && col < N)` guards "
                f"and the grid size.") from None


def backend_fields() -> dict:
    """The fields of `tilinglib.backend.Backend` for PyCUDA (all but `name` and `reason`):
    SourceModule, In, Out, InOut, device_name and limits. Opens the GPU; raises whatever
    stops it (ImportError without PyCUDA, pycuda's errors without a device)."""
    import pycuda.driver as drv

    session = CudaSession.current()
    return dict(SourceModule=SourceModule, In=drv.In, Out=drv.Out, InOut=drv.InOut,
                device_name=session.device_name, limits=session.limits)


# ---------------------------------------------------------------------------------------
# Compiling
# ---------------------------------------------------------------------------------------

def wrap_source(source: str, no_extern_c: bool = False) -> str:
    """The text handed to nvcc: the source in ``extern "C" { }`` (so kernel names are not
    mangled, as PyCUDA does) with ``#line 1`` first, so nvcc counts lines as the student
    does. With `no_extern_c` the source is returned as it is (its lines are already right)."""
    if no_extern_c:
        return source
    return 'extern "C" {\n#line 1\n' + source + "\n}\n"


_NVCC_LOCATION = re.compile(r"kernel\.cu\((\d+)\): (?:error|catastrophic error)")
_NVCC_ERROR_COUNT = re.compile(r"^(\d+) errors? detected in the compilation", re.M)
_TOO_MUCH_SHARED = re.compile(
    r"uses too much shared data \((0x[0-9a-fA-F]+) bytes, (0x[0-9a-fA-F]+) max\)")


def _nvcc_column(nvcc_lines: list, at: int, source_line: str) -> int | None:
    """1-based column of nvcc's caret under its copy of `source_line`: nvcc prints the line
    (indented) after ``kernel.cu(N): error: ...`` at index `at`, and a ``^`` below it."""
    if at + 2 >= len(nvcc_lines) or not source_line.strip():
        return None
    shown, caret = nvcc_lines[at + 1], nvcc_lines[at + 2]
    code = source_line.strip()
    if caret.strip() != "^" or code not in shown:
        return None
    shift = shown.index(code) - source_line.index(code)     # nvcc's indent
    column = caret.index("^") - shift + 1
    return column if 1 <= column <= len(source_line) else None


def compile_error_from_nvcc(source: str, exc: Any) -> CompileError:
    """tilinglib's `CompileError` for a ``pycuda.driver.CompileError`` `exc` (which has
    ``msg``, ``command_line``, ``stdout``, ``stderr``): nvcc's text, the first error's line
    and column in the student's source (shown with the line itself and a caret), and a hint
    where one is known. A notebook shows only the first error (the error's ``summary``);
    ``str(error)`` and the original pieces, ``.command_line``, ``.stdout``, ``.stderr``,
    keep all of nvcc's output."""
    stdout = (getattr(exc, "stdout", None) or "").strip()
    stderr = (getattr(exc, "stderr", None) or "").strip()
    nvcc_text = "\n".join(part for part in (stderr, stdout) if part) or str(exc)
    nvcc_lines = nvcc_text.splitlines()
    lines = source.splitlines()

    line = column = first = None
    for at, text in enumerate(nvcc_lines):
        match = _NVCC_LOCATION.search(text)
        if match:
            line = int(match.group(1))
            if 1 <= line <= len(lines):
                first = text.strip()
                column = _nvcc_column(nvcc_lines, at, lines[line - 1])
            else:
                line = None
            break
    where = f" (first error at line {line} of your source)" if line else ""
    message = f"nvcc could not compile the kernel{where}:\n{nvcc_text}"

    hint = ""
    shared = _TOO_MUCH_SHARED.search(nvcc_text)
    if shared:
        used, limit = int(shared.group(1), 16), int(shared.group(2), 16)
        hint = (f"\nThe kernel's __shared__ arrays take {used:,} bytes; a block may have "
                f"at most {limit:,} bytes ({limit / 1024:g} KiB) of static shared memory. "
                f"Make the arrays smaller (a smaller TILE).")
    summary = None
    if first is not None:
        count = _NVCC_ERROR_COUNT.search(nvcc_text)
        more = int(count.group(1)) - 1 if count else 0
        summary = f"nvcc could not compile the kernel:\n{first}" + hint
        if more > 0:
            summary += (f"\n(and {more} more error{'s' if more > 1 else ''}: "
                        f"import sys; print(sys.last_value) shows all of nvcc's output)")
    error = CompileError(message + hint, line=line, column=column,
                         source_line=lines[line - 1] if line else None, summary=summary)
    error.command_line = getattr(exc, "command_line", None)
    error.stdout = getattr(exc, "stdout", None)
    error.stderr = getattr(exc, "stderr", None)
    return error


class SourceModule:
    """``pycuda.compiler.SourceModule``: compile CUDA C with nvcc and load it on the GPU.

    Same arguments as PyCUDA's (``source, nvcc="nvcc", options=None, keep=False,
    no_extern_c=False, arch=None, code=None, cache_dir=None, include_dirs=[]``), and the same
    methods (`get_function`, ``get_global``, ``get_texref``; `module` is PyCUDA's module).
    Differences: a compile error is raised as `tilinglib.errors.CompileError` with the line
    numbers of `source` itself; `get_function` returns a `CheckedFunction`, which checks each
    launch before PyCUDA runs it.
    """

    def __init__(self, source: str, nvcc: str = "nvcc", options=None, keep: bool = False,
                 no_extern_c: bool = False, arch=None, code=None, cache_dir=None,
                 include_dirs=()):
        import pycuda.compiler
        import pycuda.driver as drv

        self._session = CudaSession.current()
        self.source = source
        from ..frontend.preprocess import check_options

        check_options(options)
        self.options = list(options) if options is not None else None
        self.no_extern_c = no_extern_c
        # PyCUDA's compile arguments, kept: an anonymous-namespace kernel's name is read back
        # from the cubin (`_anonymous_symbol`).
        self._compile_args = dict(nvcc=nvcc, options=self.options, keep=keep,
                                  no_extern_c=True, arch=arch, code=code, cache_dir=cache_dir,
                                  include_dirs=list(include_dirs))
        with self._session.guard("compiling the module"):
            try:
                self._pycuda_module = pycuda.compiler.SourceModule(
                    wrap_source(source, no_extern_c), **self._compile_args)
            except drv.CompileError as exc:
                raise compile_error_from_nvcc(source, exc) from None
            except OSError as exc:
                if "nvcc" not in str(exc):
                    raise
                raise CompileError(
                    f"PyCUDA could not run nvcc, the CUDA compiler ({exc}). Put the CUDA "
                    f"toolkit's bin folder on PATH (e.g. export PATH=/usr/local/cuda/bin:$PATH) "
                    f"or install it (conda install -c conda-forge cuda-nvcc), then restart "
                    f"the notebook kernel.") from None
        self.module = self._pycuda_module.module

    @functools.cached_property
    def _signatures(self) -> dict | None:
        """Parameter types of every kernel, read by the emulator's parser; None if it cannot."""
        from ..codegen.compiler import kernel_signatures

        try:
            return kernel_signatures(self.source, self.options)
        except Exception as exc:  # the GPU compiled it; only the pre-launch checks are lost
            warnings.warn(
                f"tilinglib could not read this module's parameter types ({exc}); its kernels "
                f"run, but their arguments are not checked before launch.", stacklevel=3)
            return None

    def get_function(self, name: str) -> "CheckedFunction":
        """The kernel `name`, as a PyCUDA Function wrapped in launch checks.

        Raises `KernelNotFoundError` when the module has no kernel of that name (note that
        ``no_extern_c=True`` leaves names C++-mangled)."""
        signatures = self._signatures
        symbol, canonical = self._symbol(name)
        try:
            with self._session.guard(f"looking up kernel {name!r}"):
                raw = self._pycuda_module.get_function(symbol)
        except ContextLostError:
            raise
        except Exception as exc:
            if "not found" not in str(exc).lower():
                raise
            found = self._anonymous_symbol(symbol) if "_GLOBAL__N_" in symbol else None
            if found is not None:
                return CheckedFunction(found, name, signatures.get(canonical) if signatures
                                       else None, self._session)
            if "_GLOBAL__N_" in symbol:
                raise KernelNotFoundError(
                    f"kernel {name!r} is inside an anonymous namespace: nvcc gives it a name "
                    f"private to this compile, and this module's cubin could not be read back "
                    f"to find it (cache_dir=False?). Move it out of the namespace {{ ... }}, "
                    f"or give the namespace a name.") from None
            known = ", ".join(sorted(signatures)) if signatures else "none found"
            raise KernelNotFoundError(
                f"this module has no kernel named {name!r} (kernels: {known}). Check the "
                f"spelling; the name is the one after __global__ void.") from None
        params = signatures.get(canonical) if signatures else None
        return CheckedFunction(raw, name, params, self._session)

    def _anonymous_symbol(self, symbol: str):
        """The PyCUDA Function of a kernel in an anonymous namespace, or None.

        clang names the namespace ``12_GLOBAL__N_1`` in `symbol`; nvcc puts a name of its own
        there (``45_GLOBAL__N__488c2b5e_9_kernel_cu_f9058338_507`` on the H200 with CUDA 13),
        different at every compile. So the name is read from the cubin this module loaded:
        PyCUDA's compiler cache hands back the same bytes for the same source and options.
        The candidate must be `symbol` with only that one component changed, and the driver
        must find it."""
        import pycuda.compiler

        at = symbol.find("12_GLOBAL__N_1")
        if at < 0:
            return None
        prefix, suffix = symbol[:at], symbol[at + len("12_GLOBAL__N_1"):]
        try:
            with self._session.guard("reading the module's kernel names"):
                cubin = pycuda.compiler.compile(wrap_source(self.source, self.no_extern_c),
                                                **self._compile_args)
        except ContextLostError:
            raise
        except Exception:
            return None
        for raw in set(re.findall(rb"_Z[\w$]+", bytes(cubin))):
            cand = raw.decode("ascii")
            m = re.match(r"(\d+)", cand[len(prefix):]) if cand.startswith(prefix) else None
            if not m:
                continue
            start = len(prefix) + len(m.group(1))
            part = cand[start:start + int(m.group(1))]
            if part.startswith("_GLOBAL__N_") and cand[start + len(part):] == suffix:
                try:
                    return self._pycuda_module.get_function(cand)
                except Exception:
                    continue
        return None

    def _symbol(self, name: str) -> tuple[str, str]:
        """(the name to look up in the cubin, the kernel's name as the front end spells it).
        With ``no_extern_c=True`` a kernel (a template's instantiation, ``'k<128, float>'``,
        or a plain one) has its C++-mangled name, which the front end reads from clang
        (the Itanium ABI, as nvcc mangles); a name that is already mangled is kept."""
        if not self.no_extern_c or not isinstance(name, str):
            return name, name
        try:
            from ..frontend.program import find_kernel

            found = find_kernel(self.source, self.options, name)
        except Exception:       # the front end cannot read it: PyCUDA's own lookup
            return name, name
        if found is None:
            return name, name
        known, mangled = found
        return mangled, known

    def __getattr__(self, attr: str):
        # get_global, get_texref, get_surfref: PyCUDA's own.
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self._pycuda_module, attr)


class CheckedFunction:
    """A PyCUDA ``Function`` that checks every launch first and survives a lost context.

    Call it as PyCUDA's: ``f(*args, block=(x, y, z), grid=(gx, gy), shared=0, stream=None)``.
    Before PyCUDA runs, `tilinglib.launch.check_launch` looks at the arguments (against the
    kernel's parameter types in `params`), block, grid and shared memory. PyCUDA's attributes
    (``num_regs``, ``shared_size_bytes``, ``local_size_bytes``, ``max_threads_per_block``,
    ``get_attribute``, ``prepare``...) pass through; prepared calls are not checked.
    """

    def __init__(self, raw, name: str, params, session: CudaSession):
        self._raw = raw
        self._session = session
        self.name = name
        self.params = params

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self._raw, attr)

    def __repr__(self) -> str:
        return f"<CheckedFunction {self.name} on {self._session.device_name} (PyCUDA)>"

    def _limits(self, static_shared: int) -> DeviceLimits:
        """The device's limits, with the shared-memory limit this kernel has opted in to."""
        limits = self._session.limits
        try:
            attribute = self._session.drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES
            allowed = static_shared + int(self._raw.get_attribute(attribute))
        except Exception:  # an older driver or PyCUDA: keep the default limit
            return limits
        if allowed > limits.max_shared_per_block:
            limits = replace(limits, max_shared_per_block=allowed)
        return limits

    def check(self, *args, block=None, grid=(1, 1), shared=0) -> None:
        """Run the pre-launch checks only (what every call does first)."""
        with self._session.guard(f"reading the attributes of {self.name}"):
            static = int(self._raw.shared_size_bytes)
            max_threads = int(self._raw.max_threads_per_block)
            limits = self._limits(static)
        check_launch(self.name, self.params, args, block=block, grid=grid,
                     shared=shared or 0, static_shared=static, limits=limits,
                     max_threads_per_block=max_threads)

    def __call__(self, *args, **kwargs):
        block = kwargs.get("block")
        grid = kwargs.get("grid", (1, 1))
        shared = kwargs.get("shared", 0)
        self.check(*args, block=block, grid=grid, shared=shared)
        return self._launch_unchecked(*args, **kwargs)

    def _launch_unchecked(self, *args, **kwargs):
        """PyCUDA's call, without the checks (timing loops check once, then use this)."""
        for key in ("block", "grid"):
            if isinstance(kwargs.get(key), (tuple, list)):
                kwargs[key] = tuple(int(v) for v in kwargs[key])
        with self._session.guard(f"running {self.name}"):
            try:
                return self._raw(*args, **kwargs)
            except Exception as exc:
                if is_sticky_error(exc) or "cuLaunchKernel failed" not in str(exc):
                    raise                     # the guard turns a sticky error into one message
                raise self._refused(exc, kwargs.get("block")) from None

    def _refused(self, exc: Exception, block) -> LaunchError:
        """tilinglib's `LaunchError` for a launch the driver refused after the checks passed
        (most often too many registers: threads per block x registers per thread)."""
        message = f"{self.name}: the GPU refused the launch ({exc})."
        if "too many resources" in str(exc).lower():
            try:
                regs = int(self._raw.num_regs)
                threads = 1
                for b in block or (1,):
                    threads *= int(b)
                per_block = self._session.limits.max_regs_per_block
                message += (f" A block of {threads:,} threads x {regs} registers per thread "
                            f"needs {threads * regs:,} registers; a block may have "
                            f"{per_block:,}. Launch fewer threads per block (a smaller TILE), "
                            f"or cap the registers with __launch_bounds__.")
            except Exception:  # attributes unreadable: the driver's own words must do
                message += " Launch fewer threads per block (a smaller TILE)."
        return LaunchError(message)
