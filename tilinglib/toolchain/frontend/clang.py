"""Stage 2 of the front end: clang on the preprocessed text -> its JSON AST.

clang comes from the `ziglang` wheel (``zig clang``); the environment variable
``TILINGLIB_CLANG`` may name another clang or zig binary. It is run as a syntax-only CUDA
device compile for sm_90, on our prelude then the
student's preprocessed source (its line L on line L after the prelude), with:

- ``-nostdinc -nobuiltininc -nocudainc -nocudalib``: no header is ever searched for (our
  preprocessor has already refused every ``#include`` it does not satisfy itself, so clang
  sees none);
- the source on stdin and an empty temporary directory as working directory;
- a time limit (`CLANG_SECONDS`), a cap on what it may write (`MAX_OUTPUT_BYTES`), and
  limits on its memory and CPU set before it reads any input: a submission is untrusted.

clang's own start-up (about 9 ms) is kept off a compile's path: while one compile's clang
parses, the next one is started and left waiting for its input (`_Clang`, `_take`), so a
recompile (a lesson's slider) finds one ready. A forked child never uses, nor keeps open,
its parent's.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time

from ...errors import CompileError
from .prelude import identifiers, prelude_text

SOURCE_NAME = "kernel.cu"
CLANG_SECONDS = 30.0
MAX_OUTPUT_BYTES = 256 * 1024 * 1024
MAX_ERRORS = 10                # errors listed in a CompileError
CLANG_ERROR_LIMIT = 500        # errors clang reports before it stops: host code the prelude
#                                declares only in part can give many, all set aside (program.py)

FLAGS = ["-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
         "--cuda-gpu-arch=sm_90", "-nostdinc", "-nobuiltininc", "-std=c++17", "-w",
         "-fno-color-diagnostics", "-fno-caret-diagnostics", "-fno-diagnostics-show-option",
         f"-ferror-limit={CLANG_ERROR_LIMIT}", "-fbracket-depth=1024", "-fno-crash-diagnostics", "-fsyntax-only", "-Xclang", "-ast-dump=json", "-"]

NO_CLANG = ("the CUDA C++ front end needs clang, which the 'ziglang' package provides: run "
            "pip install ziglang (or set TILINGLIB_CLANG to a clang or zig binary)")


def clang_command() -> list[str]:
    """The command that runs clang: ``[zig, 'clang']`` or ``[clang]``. Raises
    `CompileError` saying ``pip install ziglang`` when there is none."""
    env = os.environ.get("TILINGLIB_CLANG")
    if env:
        path = shutil.which(env) or (env if os.path.isfile(env) else None)
        if path is None:
            raise CompileError(f"TILINGLIB_CLANG={env!r} is not a file: {NO_CLANG}")
        return [path, "clang"] if os.path.basename(path).startswith("zig") else [path]
    try:
        import ziglang
    except ImportError:
        raise CompileError(NO_CLANG) from None
    path = os.path.join(os.path.dirname(ziglang.__file__), "zig")
    if not os.path.isfile(path):
        raise CompileError(NO_CLANG)
    return [path, "clang"]


_LINE = re.compile(r'^\s*#\s*line\s+(\d+)')


def flatten_lines(text: str) -> str:
    """Stage 1's text with its ``#line`` directives replaced by blank lines, so that the
    student's line L is line L of the result (clang's JSON writes a #line-adjusted line only
    where it changes, which cannot be read back unambiguously). A directive that goes back
    (a macro call over several lines) is kept as it is."""
    out = []
    for raw in text.split("\n"):
        m = _LINE.match(raw)
        if m:
            target = int(m.group(1))
            if target - 1 >= len(out):
                out.extend([""] * (target - 1 - len(out)))
                continue
            out.append(f'#line {target} "{SOURCE_NAME}"')
            continue
        out.append(raw)
    return "\n".join(out)


def clang_input(text: str, cooperative_groups: bool = False,
                included=()) -> tuple[str, int]:
    """What clang reads, and the number of prelude lines before the student's line 1: the
    prelude (for the headers `included`), then stage 1's text with the student's line L on
    line L after it."""
    prelude = prelude_text(cooperative_groups, identifiers(text), included)
    return prelude + flatten_lines(text), prelude.count("\n")


def _read_capped(stream, cap, out):
    total = 0
    chunks = []
    while True:
        b = stream.read(1 << 20)
        if not b:
            break
        total += len(b)
        if total > cap:
            out["over"] = True
            break
        chunks.append(b)
    out["data"] = b"".join(chunks)


CLANG_MEMORY_BYTES = 2 << 30       # address space for one clang run (a compile needs < 512 MiB)


def _clang_limits() -> list[tuple[int, tuple[int, int]]]:
    """The limits of one clang run: at most `CLANG_MEMORY_BYTES` of address space and
    `CLANG_SECONDS` (+5) of CPU, whoever started it (the grader's clang server runs outside
    the worker's own limits), or this process's own where they are lower. Empty where the
    `resource` module is missing (Windows: clang then runs under its deadline and output cap
    only; `tilinglib.toolchain.platform_support`)."""
    from ..platform_support import resource_module
    resource = resource_module()
    if resource is None:
        return []
    out = []
    for which, want in ((resource.RLIMIT_AS, CLANG_MEMORY_BYTES),
                        (resource.RLIMIT_CPU, int(CLANG_SECONDS) + 5)):
        hard = resource.getrlimit(which)[1]     # lower already (a grader's worker): keep it
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        out.append((which, (want, want)))
    return out


def _has_prlimit() -> bool:
    from ..platform_support import has_prlimit
    return has_prlimit()


def _limit_clang() -> None:
    """`_clang_limits` set in the clang child before it starts (where prlimit is missing)."""
    from ..platform_support import resource_module
    resource = resource_module()
    for which, value in _clang_limits():
        try:
            resource.setrlimit(which, value)
        except (ValueError, OSError):
            pass


class _Clang:
    """One clang process, started and waiting for its source on stdin.

    It is started without a ``preexec_fn`` where the OS has ``prlimit`` (Linux): Python
    then starts it with vfork, about 0.4 ms, where a fork of a notebook's process took 20 ms
    or more; its limits are set with prlimit before it is given any input, so it runs nothing
    of the student's without them. One spare is kept started (`_take`) so that a compile
    finds clang past its own start-up (about 9 ms), as the lesson sliders' recompiles do."""

    def __init__(self, cmd: list[str]):
        self.cmd = cmd
        self.owner = os.getpid()
        self._dir = tempfile.TemporaryDirectory(prefix="tilinglib-clang-")
        cwd = self._dir.name
        limits = _clang_limits()                 # empty where there is no `resource`
        late = bool(limits) and _has_prlimit()
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=cwd, preexec_fn=None if late or not limits else _limit_clang,
                env={"PATH": os.environ.get("PATH", ""), "HOME": cwd, "TMPDIR": cwd,
                     "ZIG_GLOBAL_CACHE_DIR": cwd, "ZIG_LOCAL_CACHE_DIR": cwd})
        except BaseException:
            self._dir.cleanup()
            raise
        if late:
            from ..platform_support import resource_module
            resource = resource_module()
            try:
                for which, value in limits:
                    resource.prlimit(self.proc.pid, which, value)
            except (ValueError, OSError):
                self.close()             # never run clang without its limits
                raise OSError("could not set clang's memory and CPU limits") from None

    def usable(self, cmd: list[str]) -> bool:
        return self.cmd == cmd and self.owner == os.getpid() and self.proc.poll() is None

    def run(self, data: bytes, while_it_works=None) -> tuple[str, int, bytes, bytes]:
        """Give clang `data` and collect what it writes, within one `CLANG_SECONDS` deadline
        and `MAX_OUTPUT_BYTES`; `while_it_works()` is called once the input is written.
        Interrupted (a notebook's KeyboardInterrupt), it stops
        clang before it lets the exception go: a clang blocked writing to a pipe no one
        reads uses no CPU, so its CPU limit would never end it."""
        try:
            if os.name == "posix":
                return self._run_select(data, while_it_works)
            return self._run_threads(data, while_it_works)
        except BaseException:
            self.close()
            raise

    def _write_input(self, data: bytes) -> None:
        # clang reads all of its input before it writes anything but a driver error (a few
        # bytes), so writing it all first cannot fill both pipes.
        try:
            self.proc.stdin.write(data)
        except BrokenPipeError:
            pass
        finally:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass

    def _run_select(self, data: bytes, while_it_works=None) -> tuple[str, int, bytes, bytes]:
        """POSIX: both pipes read in this thread. The JSON AST is complete when it ends with
        its top-level closing brace, the only '}' clang's writer puts at the start of a line;
        if nothing came on stderr by then (clang writes every diagnostic before the AST, and
        -w silences warnings) the compile is done, and clang's exit (about 3 ms of freeing
        its memory) is waited for in the background."""
        import selectors

        proc = self.proc
        self._write_input(data)
        if while_it_works is not None:
            while_it_works()
        out, err = bytearray(), bytearray()
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        deadline = time.monotonic() + CLANG_SECONDS
        status = "ok"
        try:
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    status = "limit"
                    break
                for key, _ in sel.select(left):
                    chunk = os.read(key.fd, 1 << 20)
                    if not chunk:
                        sel.unregister(key.fileobj)
                    else:
                        key.data.extend(chunk)
                if len(out) > MAX_OUTPUT_BYTES or len(err) > 1 << 20:
                    status = "limit"
                    break
                if out.endswith(b"\n}") and not err and proc.stdout in _registered(sel):
                    if not sel.select(0) or _only_stdout_eof(sel, proc):
                        _finish_in_background(self)
                        return "ok", 0, bytes(out), b""
        finally:
            sel.close()
        if status == "limit":
            proc.kill()
        rc = proc.wait()
        self.close()
        return status, rc, bytes(out), bytes(err)

    def _run_threads(self, data: bytes, while_it_works=None) -> tuple[str, int, bytes, bytes]:
        """Elsewhere (Windows): a reader thread per pipe, then clang's exit."""
        proc = self.proc
        out, err = {}, {}
        readers = [threading.Thread(target=_read_capped,
                                    args=(proc.stdout, MAX_OUTPUT_BYTES, out)),
                   threading.Thread(target=_read_capped, args=(proc.stderr, 1 << 20, err))]
        for r in readers:
            r.start()
        self._write_input(data)
        if while_it_works is not None:
            while_it_works()
        deadline = time.monotonic() + CLANG_SECONDS     # one deadline for both readers:
        for r in readers:                                # joined one after the other, 30 s
            r.join(max(0.0, deadline - time.monotonic()))  # each ran to 46 s
        status = "ok"
        if any(r.is_alive() for r in readers) or out.get("over"):
            proc.kill()
            for r in readers:
                r.join()
            status = "limit"
        rc = proc.wait()
        self.close()
        return status, rc, out.get("data", b""), err.get("data", b"")

    def close(self) -> None:
        """Stop the process (if it still runs) and remove its directory."""
        if self.owner != os.getpid():
            return                       # a forked child's copy: the parent's process
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
        self._dir.cleanup()


def _registered(sel) -> set:
    return {key.fileobj for key in sel.get_map().values()}


def _only_stdout_eof(sel, proc) -> bool:
    """After the AST's last brace: True if stderr has nothing to read (stdout may show its
    end of file, which is not a diagnostic)."""
    return all(key.fileobj is proc.stdout for key, _ in sel.select(0))


def _finish_in_background(clang: "_Clang") -> None:
    """Wait for `clang` to exit and clean up after it, in a thread (at once where none can
    be started)."""
    def finish():
        clang.proc.wait()
        clang.close()

    try:
        threading.Thread(target=finish, name="tilinglib-clang-exit", daemon=True).start()
    except RuntimeError:
        finish()


_SPARE: _Clang | None = None
_SPARE_LOCK = threading.Lock()
def _take(cmd: list[str]) -> _Clang:
    """The spare clang if it is this process's and runs `cmd`, else a new one."""
    global _SPARE
    with _SPARE_LOCK:
        spare, _SPARE = _SPARE, None
    if spare is not None and spare.usable(cmd):
        return spare
    if spare is not None:
        spare.close()
    return _Clang(cmd)


def _start_spare(cmd: list[str]) -> None:
    """Start the next compile's clang (kept in `_SPARE`); none if it cannot start."""
    global _SPARE
    try:
        spare = _Clang(cmd)
    except OSError:
        return
    with _SPARE_LOCK:
        old, _SPARE = _SPARE, spare
    if old is not None:
        old.close()


def _forget_spare_after_fork() -> None:
    """In a forked child: close its copies of the parent's spare pipes (a copy of the write
    end left open would keep the parent's clang from ever seeing the end of its input)."""
    global _SPARE
    spare, _SPARE = _SPARE, None
    if spare is not None:
        for stream in (spare.proc.stdin, spare.proc.stdout, spare.proc.stderr):
            try:
                os.close(stream.fileno())
            except (OSError, ValueError):
                pass


def stop_spare() -> None:
    """Stop the spare clang process (at exit; tests)."""
    global _SPARE
    with _SPARE_LOCK:
        spare, _SPARE = _SPARE, None
    if spare is not None:
        spare.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spare_after_fork)
atexit.register(stop_spare)


def _clang_bytes(data: bytes) -> tuple[str, int, bytes, bytes]:
    """Run clang on `data`: (status, exit code, stdout, stderr); status is "ok", "limit" (it
    ran past `CLANG_SECONDS` or wrote more than `MAX_OUTPUT_BYTES`) or "nostart: why"."""
    try:
        cmd = clang_command() + FLAGS
    except CompileError as exc:
        return f"nostart: {exc}", -1, b"", b""
    try:
        clang = _take(cmd)
    except OSError as exc:
        return f"nostart: clang could not start ({exc}): {NO_CLANG}", -1, b"", b""
    # the next compile's clang is started while this one parses (vfork: under 1 ms
    # of this process's time, the new clang's own start-up on another core)
    return clang.run(data, while_it_works=lambda: _start_spare(cmd))


def read_ast(data: bytes) -> dict:
    """clang's JSON AST with every source location written in full.

    clang writes a location's ``file`` and ``line`` only where they change from the location
    written before it; they are filled in here, in writing order, as the JSON is read (a
    location object is complete when the reader calls the hook, and the hook sees the
    locations in the order they were written). A ``presumedLine`` (after a ``#line`` stage 1
    kept) replaces the line. Raises ValueError for text that is not JSON."""
    last = {"file": None, "line": None}

    def whole(node: dict) -> dict:
        if "offset" in node and "col" in node:
            for key in ("file", "line"):
                if key in node:
                    last[key] = node[key]
                else:
                    node[key] = last[key]
            if "presumedLine" in node:
                node["line"] = node["presumedLine"]
        return node

    return json.loads(data, object_hook=whole)


def run_clang(text: str, cooperative_groups: bool = False,
              included=()) -> tuple[dict | None, str, int]:
    """Run clang on `text` (stage 1's output), through the clang server when this process
    started one (`start_server`). Returns (JSON AST or None, diagnostics, prelude lines:
    clang's line L is the student's line L - prelude lines). With errors (`has_errors`)
    the AST clang wrote after them is returned too (None if it wrote none): errors in host
    code only are set aside (program.py)."""
    data, offset = clang_input(text, cooperative_groups, included)
    data = data.encode("utf-8")
    if _SERVER is not None:
        status, rc, stdout, stderr = _SERVER.request(data)
    else:
        status, rc, stdout, stderr = _clang_bytes(data)
    if status.startswith("nostart: "):
        raise CompileError(status[len("nostart: "):])
    if status == "limit":
        raise CompileError(f"{SOURCE_NAME}: the C++ front end (clang) took more than "
                           f"{CLANG_SECONDS:g} s or wrote too much on this source: "
                           f"simplify it (templates instantiated thousands of times?)")
    diagnostics = stderr.decode("utf-8", "replace")
    if rc != 0:
        ast = None
        if stdout.rstrip().endswith(b"}") and "too many errors emitted" not in diagnostics:
            try:
                ast = read_ast(stdout)
            except ValueError:
                ast = None
        return ast, diagnostics, offset
    try:
        return read_ast(stdout or b"{}"), diagnostics, offset
    except ValueError:
        raise CompileError(f"{SOURCE_NAME}: the C++ front end gave no readable AST "
                           f"(clang exit status {rc})") from None


# ---------------------------------------------------------------------------- clang server
# The grader's worker (grading/_worker.py) lowers its own limits before it reads a
# submission, RLIMIT_NPROC 0 among them: a non-root process then cannot start clang (nor a
# thread). It calls start_server() first: a child forked before the limits runs clang for
# it, one request at a time, over two pipes; the child ends when the worker does.
_SERVER = None


def _write_frames(fd: int, *parts: bytes) -> None:
    buf = b"".join(struct.pack(">Q", len(p)) + p for p in parts)
    view = memoryview(buf)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def _read_frames(fd: int, count: int) -> list[bytes] | None:
    out = []
    for _ in range(count):
        head = _read_exact(fd, 8)
        if head is None:
            return None
        body = _read_exact(fd, struct.unpack(">Q", head)[0])
        if body is None:
            return None
        out.append(body)
    return out


class _Server:
    def __init__(self):
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        pid = os.fork()
        if pid == 0:                                    # the child: serve until EOF
            code = 0
            try:
                os.close(req_w)
                os.close(rep_r)
                while True:
                    frames = _read_frames(req_r, 1)
                    if frames is None:
                        break
                    status, rc, out, err = _clang_bytes(frames[0])
                    _write_frames(rep_w, status.encode(), str(rc).encode(), out, err)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(rep_w)
        self.pid, self.w, self.r = pid, req_w, rep_r

    def request(self, data: bytes) -> tuple[str, int, bytes, bytes]:
        try:
            _write_frames(self.w, data)
            frames = _read_frames(self.r, 4)
        except OSError:
            frames = None
        if frames is None:
            return "nostart: the clang server of this process has stopped", -1, b"", b""
        return frames[0].decode(), int(frames[1]), frames[2], frames[3]


def start_server() -> None:
    """Fork a child that runs clang for this process from now on (call it before lowering
    RLIMIT_NPROC: the grader's worker does). Once per process; POSIX only."""
    from ..platform_support import can_fork
    global _SERVER
    if _SERVER is None and can_fork():
        _SERVER = _Server()


_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|fatal error"
                   r"|note|warning): (?P<msg>.*)$")

# clang's wording -> the course's, where they differ.
_WORDING = [
    (re.compile(r"^use of undeclared identifier '(__shfl(?:_up|_down|_xor)?|__ballot|__any|"
                r"__all)'$"),
     r"'\1' is not declared: CUDA 9 replaced it with \1_sync(mask, ...) (sm_70 and later, "
     r"the H200 among them, have only the _sync form), e.g. \1_sync(0xffffffff, ...)"),
    (re.compile(r"^(?:use of undeclared identifier|unknown type name) '(curand\w*)'$"),
     r"the CPU emulator does not support cuRAND's device API ('\1', <curand_kernel.h>): "
     r"draw the random numbers on the host (NumPy) and pass them in an array"),
    # (clang adds "; did you mean 'X'?" where the source has a name like it)
    (re.compile(r"^no (?:member|template) named '(\w+)' in namespace '(cub|thrust)'"
                r"(?:; did you mean .*)?$"),
     r"the CPU emulator does not support \2 in device code ('\2::\1'): write the "
     r"reduction or scan with __shfl_*_sync and shared memory"),
    (re.compile(r"^no (?:member|template) named '(\w+)' in namespace '(nvcuda(?:::wmma)?|wmma)'"
                r"(?:; did you mean .*)?$"),
     r"the CPU emulator does not support the warp matrix functions of <mma.h> ('\2::\1'): "
     r"tensor cores are beyond its float32 model"),
    (re.compile(r"^use of undeclared identifier '(.*)'$"), r"'\1' is not declared"),
    (re.compile(r"^reference to __host__ variable '(.*)' in (__\w+__) function$"),
     r'identifier "\1" is undefined in device code' + " (nvcc's words): " +
     r"\1 is a host variable; declare it __device__ or __constant__ (or const, for a "
     r"constant), or pass it as a kernel argument"),
    (re.compile(r"^unknown type name '(.*)'$"), r"unknown type '\1'"),
    (re.compile(r"^expected ';' (after (expression|declaration|statement)|at end of "
                r"declaration)$"), "syntax error (is a ';' missing at the end of line {line}?)"),
    (re.compile(r"^expected '(.)'$"), r"syntax error: a '\1' is missing here"),
    (re.compile(r"^expected (statement|expression)$"), r"syntax error: expected a \1 here"),
    (re.compile(r"^expected unqualified-id$"), r"syntax error: expected a name here"),
    (re.compile(r"^bracket nesting level exceeded maximum of (\d+)$"),
     r"parentheses, brackets or braces nested too deeply (more than \1 levels): split the "
     r"expression or the blocks"),
    (re.compile(r"^static assertion failed(.*)$"), r"static_assert failed\1"),
]


def error_locations(diagnostics: str, offset: int = 0) -> list:
    """(line, column, message) of each error clang reported, lines in the student's
    numbering (None for an error outside the student's source: the prelude)."""
    out = []
    for raw in diagnostics.splitlines():
        m = _DIAG.match(raw)
        if not m or m.group("sev") not in ("error", "fatal error"):
            continue
        line = int(m.group("line")) - offset
        ours = m.group("file") in ("<stdin>", SOURCE_NAME) and line > 0
        out.append((line if ours else None, int(m.group("col")) if ours else None,
                    m.group("msg")))
    return out


def has_errors(diagnostics: str) -> bool:
    """Whether clang's `diagnostics` hold an error (not only notes or warnings)."""
    return any(_DIAG.match(raw) and _DIAG.match(raw).group("sev") in ("error", "fatal error")
               for raw in diagnostics.splitlines()) or "error:" in diagnostics


def _course_words(msg: str, line) -> str:
    for pattern, repl in _WORDING:
        if pattern.match(msg):
            return pattern.sub(repl.replace("{line}", str(line)), msg)
    return msg


# Host functions of the headers (prelude.HOST_DECLARATIONS) that libstdc++ declares
# constexpr: nvcc's message for a device call of one names the flag that allows it.
CONSTEXPR_HOST = frozenset({"min", "max", "numeric_limits", "lowest", "epsilon", "infinity",
                            "quiet_NaN", "denorm_min", "clamp"})


def host_call_message(callee: str, caller: str | None, space: str) -> str:
    """nvcc's error for a call of host function `callee` from `caller`, a function of
    execution space `space` ("__global__", "__device__"), with what to write instead."""
    caller_text = f'("{caller}")' if caller else ""
    if callee in CONSTEXPR_HOST:
        return (f'calling a constexpr __host__ function("{callee}") from a {space} '
                f'function{caller_text} is not allowed. The experimental flag '
                f"'--expt-relaxed-constexpr' can be used to allow this (nvcc's words; in "
                f"device code write CUDA's own {callee}(a, b), fminf, fmaxf, or FLT_MAX, "
                f"INT_MAX, ... for numeric_limits)")
    return (f'calling a __host__ function("{callee}") from a {space} function{caller_text} '
            f"is not allowed (nvcc's words): device code can only call functions marked "
            f"__device__. Write '__device__' before its return type (or '__host__ "
            f"__device__' to call it from both sides)")


def compile_error(diagnostics: str, source_lines, offset: int = 0, skip=None,
                  function_at=None) -> CompileError:
    """clang's diagnostics as one `CompileError`: at the first error in the student's source,
    every error listed (with 'in instantiation of' notes: which template arguments).
    `skip(line, column)`: errors to leave out (in host code, program.py); `function_at(line)`:
    the name of the function around a line, for nvcc's wording of a host call."""
    errors = []          # (line, col, message)
    skipping = False
    for raw in diagnostics.splitlines():
        m = _DIAG.match(raw)
        if not m:
            continue
        sev, msg = m.group("sev"), m.group("msg")
        line = int(m.group("line")) - offset
        ours = m.group("file") in ("<stdin>", SOURCE_NAME) and line > 0
        line, col = (line, int(m.group("col"))) if ours else (None, None)
        if sev in ("error", "fatal error"):
            skipping = skip is not None and line is not None and skip(line, col)
            if skipping:
                continue
            msg = re.sub(r" when compiling for sm_\d+", "", msg)
            msg = re.sub(r"^'[^']*' is unavailable: ", "", msg)     # the prelude's reasons
            ref = re.match(r"^reference to __host__ function '(.*)' in (__\w+__) function$", msg)
            if ref:                     # clang's words for std::numeric_limits<T>::max()
                caller = function_at(line) if function_at and line else None
                msg = host_call_message(ref.group(1), caller, ref.group(2))
                errors.append([line, col, msg])
                continue
            errors.append([line, col, _course_words(msg, line)])
        elif skipping:
            continue
        elif sev == "note" and errors and "in instantiation of" in msg and ours:
            errors[-1][2] += f" ({msg.replace(' requested here', '')} on line {line})"
            if errors[-1][0] is None:
                errors[-1][0], errors[-1][1] = line, col
        elif sev == "note" and errors and msg.startswith("to match this") and ours:
            errors[-1][2] += f" (to match the {msg[len('to match this '):]} on line {line})"
        elif sev == "note" and errors and (errors[-1][2].startswith("no matching function")
                                           or errors[-1][2].startswith("no viable")) \
                and "not viable" in msg and "(" not in errors[-1][2]:
            reason = msg.split("not viable: ", 1)[-1]
            name = errors[-1][2].split("'")[1] if "'" in errors[-1][2] else "it"
            host = re.match(r"call to __host__ function from (__\w+__(?: __\w+__)?) function",
                            reason)
            if host:
                caller = function_at(errors[-1][0]) if function_at and errors[-1][0] else None
                errors[-1][2] = host_call_message(name.split("::")[-1], caller, host.group(1))
            else:
                errors[-1][2] += f" ({reason})"
    if not errors:
        text = diagnostics.strip().splitlines()
        if not text or any(w in diagnostics for w in ("Stack dump", "PLEASE submit",
                                                      "diagnostic msg", "Killed", "std::bad_alloc",
                                                      "frontend command failed")):
            return CompileError(f"{SOURCE_NAME}: the C++ front end (clang) stopped on this "
                                f"source without an error message (out of its "
                                f"{CLANG_MEMORY_BYTES >> 30} GiB of memory, or it crashed): "
                                f"simplify it (a template instantiated millions of times, a "
                                f"huge pack or array?)")
        return CompileError(f"{SOURCE_NAME}: the C++ front end failed: "
                            f"{text[-1] if text else 'no message'}")
    first = next((e for e in errors if e[0] is not None), errors[0])
    line, col = first[0], first[1]
    src = source_lines[line - 1] if line and 0 < line <= len(source_lines) else None
    where = f"{SOURCE_NAME}:{line}:{col}" if line else SOURCE_NAME
    if len(errors) == 1:
        return CompileError(f"{where}: {first[2]}", line=line, column=col, source_line=src)
    listed = "\n".join(f"  {SOURCE_NAME}:{e[0]}:{e[1]}: {e[2]}" if e[0] else f"  {e[2]}"
                       for e in errors[:MAX_ERRORS])
    return CompileError(f"{where}: {first[2]}\n{len(errors)} errors in all:\n{listed}",
                        line=line, column=col, source_line=src,
                        summary=f"{where}: {first[2]} (and {len(errors) - 1} more error"
                                f"{'s' if len(errors) > 2 else ''}: print(sys.last_value))")
