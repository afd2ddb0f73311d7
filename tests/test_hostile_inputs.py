"""Hostile source strings and launches: each ends in a tilinglib error that names the line
(or runs), never a Python exception, a hang, a host file's contents or an exhausted machine.

Each case gives the input, the error class expected and, for the time and memory ones, a
generous bound (tracemalloc's peak, wall time): the assertions are that a cap was hit and
which error came back, not how fast this machine is.
"""

import os
import signal
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from emulator_helpers import launch, run_body
from tilinglib.emulator import Out, SourceModule
from tilinglib.toolchain.runtime import execute as E
from tilinglib.toolchain.frontend.preprocess import MAX_SOURCE_CHARS
from tilinglib.toolchain.frontend.program import MAX_NESTING
from tilinglib.errors import CompileError, KernelRuntimeError, StepBudgetExceeded
from tilinglib.grading import GradeReport, check_sgemm
from tilinglib.grading import sgemm as grading_sgemm

SECRET = "PINEAPPLE_SECRET_31337"
GOOD = (Path(__file__).parent / "submissions" / "good_if_else.cu").read_text()
SGEMM = "__global__ void sgemm(int M, int N, int K, const float* A, const float* B, float* C)"
KERNEL = "__global__ void k(int* a)\n{\n    int x = threadIdx.x;\n"


def measured(fn, memory=False):
    """(result or raised exception, seconds, peak bytes) of fn(). The peak is tracemalloc's
    (NumPy reports its buffers to it) when `memory` is true, else None: tracing every
    allocation makes the preprocessor and the parser several times slower."""
    if memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    try:
        result = fn()
    except Exception as exc:    # the test asserts on the class
        result = exc
    seconds = time.perf_counter() - t0
    peak = None
    if memory:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return result, seconds, peak


def kernel(body):
    return KERNEL + body + "\n}\n"


# --------------------------------------------------------------------------- host files
@pytest.fixture
def secret_dir(tmp_path, monkeypatch):
    """A directory holding secret.h (a secret word, and a number array), as the cwd."""
    (tmp_path / "secret.h").write_text(f"{SECRET}\n")
    (tmp_path / "numbers.h").write_text("1, 2, 3, 4, 5, 6, 7, 8\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _include_forms(d: Path):
    up = os.path.relpath(d / "secret.h", d / "sub")          # ../secret.h from a subdir
    return {
        "absolute quoted": f'#include "{d}/secret.h"',
        "absolute angle": f"#include <{d}/secret.h>",
        "relative": '#include "secret.h"',
        "relative up": f'#include "sub/{up}"',
        "angle relative": "#include <secret.h>",
        "numbers into an initializer": '__constant__ int v[] = {\n#include "numbers.h"\n};',
        "/dev/zero": '#include "/dev/zero"',
        "/dev/stdin": "#include </dev/stdin>",
        "macro string": f'#define F "{d}/secret.h"\n#include F',
        "macro angle": f"#define F <{d}/secret.h>\n#include F",
        "stringised": f"#define S(x) #x\n#define Q(x) S(x)\n#include Q({d}/secret.h)",
        "__FILE__": "#include __FILE__",
        "#line then __FILE__": f'#line 1 "{d}/secret.h"\n#include __FILE__',
        "include_next": "#include_next <secret.h>",
        "import": '#import "secret.h"',
        "embed": '__constant__ char v[] = {\n#embed "secret.h"\n};',
        "embed absolute": f'__constant__ char v[] = {{\n#embed "{d}/secret.h"\n}};',
    }


FORMS = list(_include_forms(Path("/x")))


@pytest.mark.parametrize("form", FORMS)
def test_no_include_reads_a_host_file(secret_dir, form):
    line = _include_forms(secret_dir)[form]
    source = line + "\n__global__ void k(int* a) { a[0] = 1; }\n"
    with pytest.raises(CompileError) as info:
        SourceModule(source)
    text = str(info.value)
    assert SECRET not in text and "1, 2, 3" not in text.replace(line, "")
    assert "reads no files" in text
    where = [i for i, text in enumerate(line.split("\n"), 1)
             if text.startswith(("#include", "#import", "#embed"))]
    assert info.value.line == where[0]       # the #include's own line


def test_pragmas_that_name_files_never_reach_clang(secret_dir):
    # clang opens the file a "GCC dependency" pragma names; only unroll pragmas are passed on.
    from tilinglib.toolchain.frontend.preprocess import preprocess
    pre = preprocess(f'#pragma GCC dependency "{secret_dir}/secret.h"\n#pragma unroll 2\n'
                     "__global__ void k(int* a) { a[0] = 1; }\n")
    assert "dependency" not in pre.text and "#pragma unroll 2" in pre.text
    for text in (f'_Pragma("GCC dependency \\"{secret_dir}/secret.h\\"")',
                 f'#define P(x) _Pragma(#x)\nP(GCC dependency "{secret_dir}/secret.h")'):
        with pytest.raises(CompileError, match=r'accepts _Pragma\("unroll"\)') as info:
            SourceModule(text + "\n__global__ void k(int* a) { a[0] = 1; }\n")
        assert SECRET not in str(info.value)
    SourceModule('__global__ void k(int* a) { _Pragma("unroll") for (int i = 0; i < 4; i++) '
                 "a[i] = i; }")


def test_an_unknown_directive_is_named(secret_dir):
    with pytest.raises(CompileError, match="#ident is not a preprocessor directive") as info:
        SourceModule('#ident "x"\n__global__ void k(int* a) { a[0] = 1; }\n')
    assert info.value.line == 1


@pytest.mark.parametrize("form", ["absolute quoted", "relative", "numbers into an initializer"])
def test_the_grader_never_shows_a_host_file(secret_dir, form):
    line = _include_forms(secret_dir)[form]
    report = check_sgemm(line + "\n" + GOOD, "sgemm")
    assert isinstance(report, GradeReport) and report.score == 0
    assert SECRET not in str(report) and SECRET not in report._repr_html_()
    assert "reads no files" in report.failures[0]


@pytest.mark.parametrize("header", ["<cuda_runtime.h>", '"cuda_runtime.h"', "<cuda.h>",
                                    "<stdio.h>", "<stdint.h>", "<math.h>", "<cmath>",
                                    "<assert.h>", "<device_launch_parameters.h>",
                                    "<float.h>", "<cstdio>", "<curand.h>",
                                    "<cuda_profiler_api.h>", "<strings.h>"])
def test_known_headers_are_satisfied_inside(header):
    out = run_body("out[threadIdx.x * 8] = 7;", prelude=f"#include {header}")
    assert out[:, 0].tolist() == [7] * 32


@pytest.mark.parametrize("header", ["<cuda_fp16.h>", "<vector>", "<iostream>", "<algorithm>",
                                    "<cublas_v2.h>", "<mma.h>", "<cub/cub.cuh>",
                                    "<curand_kernel.h>", "<thrust/device_vector.h>"])
def test_cxx_headers_are_satisfied_inside_in_cxx_mode(header):
    out = run_body("out[threadIdx.x * 8] = 7;", prelude=f"#include {header}",
                   no_extern_c=True)
    assert out[:, 0].tolist() == [7] * 32


def test_a_library_the_emulator_lacks_is_named_where_it_is_used():
    SourceModule("#include <mma.h>\nusing namespace nvcuda;\n__global__ void k() {}",
                 no_extern_c=True)
    with pytest.raises(CompileError, match=r"does not support the warp matrix functions of "
                                           r"<mma.h> \('nvcuda::wmma::fragment'\)") as info:
        SourceModule("#include <mma.h>\n__global__ void k() {\n"
                     "  nvcuda::wmma::fragment<int> f;\n}", no_extern_c=True)
    assert info.value.line == 3


# --------------------------------------------------------------------------- preprocessor caps
DOUBLING = "#define A0 x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 21))


@pytest.mark.parametrize("name, source, match", [
    ("20 doubling #defines", DOUBLING + "int y = A20;\n", "macro expansion made more than"),
    ("doubling function-like macro", "#define F(x) x x\nint y = " + "F(" * 20 + "1"
     + ")" * 20 + ";\n", "macro expansion made more than"),
    ("2,000 chained #defines", "#define B0 x\n" + "".join(f"#define B{i} B{i - 1}\n"
                                                        for i in range(1, 2000))
     + "int y = B1999;\n", "macros nested more than"),
    ("300 KiB source", "int x;\n" * 40_000, "characters, over the emulator's"),
])
def test_preprocessor_caps(name, source, match):
    result, seconds, _ = measured(lambda: SourceModule(source))
    assert isinstance(result, CompileError), result
    assert match in str(result)
    assert seconds < 10, seconds            # ~0.2 s here (before the caps: over 120 s)


def test_a_macro_bomb_stops_with_little_memory():
    result, _, peak = measured(lambda: SourceModule(DOUBLING + "int y = A20;\n"), memory=True)
    assert isinstance(result, CompileError)
    assert peak < 200 << 20, peak           # before the caps: 3.5 GB


def test_the_doubling_bomb_names_the_line_that_uses_it():
    with pytest.raises(CompileError) as info:
        SourceModule(DOUBLING + "int y = A20;\n")
    assert info.value.line == 22


def test_a_huge_define_option_counts_as_source():
    with pytest.raises(CompileError, match="-D options"):
        SourceModule("__global__ void k() {}", options=["-DX=" + "1" * (MAX_SOURCE_CHARS + 1)])


# --------------------------------------------------------------------------- nesting depth
@pytest.mark.parametrize("name, body, expected", [
    ("150 nested parentheses", "a[x] = " + "(" * 150 + "x" + ")" * 150 + ";", 1),
    ("1,000 nested parentheses", "a[x] = " + "(" * 1000 + "x" + ")" * 1000 + ";", 1),
    ("600-term sum", "a[x] = " + "+".join(["x"] * 600) + ";", 600),
    ("300 nested blocks", "{" * 300 + "a[x] = 2 * x;" + "}" * 300, 2),
    ("300 nested ifs", "if (x >= 0) " * 300 + "a[x] = 3 * x;", 3),
])
def test_deep_but_legal_nesting_runs(name, body, expected):
    out = np.zeros(32, np.int32)
    launch(kernel(body), "k", out)
    assert out.tolist() == [expected * i for i in range(32)]


@pytest.mark.parametrize("name, body, match", [
    ("5,000-term sum", "a[x] = " + "+".join(["x"] * 5000) + ";", "nested more than"),
    ("3,000 unary minuses", "a[x] = " + "- " * 3000 + "x;", "nested"),
    ("5,000 nested parentheses", "a[x] = " + "(" * 5000 + "x" + ")" * 5000 + ";",
     "nested too deeply"),
    ("2,000 nested blocks", "{" * 2000 + "a[x] = x;" + "}" * 2000, "nested"),
])
def test_too_deep_nesting_is_a_compile_error(name, body, match):
    result, seconds, _ = measured(lambda: SourceModule(kernel(body)))
    assert isinstance(result, CompileError), repr(result)
    assert match in str(result) and seconds < 20


def test_nesting_error_names_the_line():
    with pytest.raises(CompileError) as info:
        SourceModule(kernel("a[x] = " + "+".join(["x"] * (MAX_NESTING + 10)) + ";"))
    assert info.value.line == 4


def test_a_chain_of_device_calls_is_a_kernel_error():
    chain = "__device__ int f0(int x) { return x; }\n" + "".join(
        f"__device__ int f{i}(int x) {{ return f{i - 1}(x) + 1; }}\n" for i in range(1, 100))
    f = SourceModule(chain + "__global__ void k(int* a) { a[0] = f99(0); }").get_function("k")
    with pytest.raises(KernelRuntimeError, match="more than 64 deep"):
        f(Out(np.zeros(1, np.int32)), block=(1, 1, 1), grid=(1, 1))


# --------------------------------------------------------------------------- literals
@pytest.mark.parametrize("literal, value", [
    (r"'\xff'", -1),                 # char is signed
    (r"'\377'", -1),
    (r"'\101'", 65),
    ("'ab'", 0x6162),
    ("'abcde'", 0x62636465),          # the last four characters, as gcc (and clang)
    (r"L'\u1234'", 0x1234),
    (r"U'\U0001F600'", 0x1F600),
    (r"'\e'", 27),
])
def test_character_constants_by_c_rules(literal, value):
    out = run_body(f"out[threadIdx.x * 8] = {literal};")
    assert out[0, 0] == value


@pytest.mark.parametrize("source, match", [
    (r"'\777'", "octal escape sequence"),
    (r"'\400'", "octal escape sequence"),
    (r"'\x100'", "hex escape sequence"),
    (r"'\u12'", "universal character name"),
    (r"'\UFFFFFFFF'", "invalid universal character"),
    (r"L'ab'", "may not contain multiple characters"),
    # C++ (clang): a character that needs more than one byte is no plain char constant
    (r"'\u1234'", "character too large for enclosing character literal type"),
    ("'é'", "character too large for enclosing character literal type"),
])
def test_bad_character_constants_are_compile_errors(source, match):
    with pytest.raises(CompileError, match=match) as info:
        SourceModule(kernel(f"a[0] = {source};"))
    assert info.value.line == 4


@pytest.mark.parametrize("fmt, match", [
    (r'"\x"', "no following hex digits"),
    (r'"\777"', "octal escape sequence"),
    (r'"%k"', "not a printf conversion"),
    (r'"100%"', "lone '%'"),
])
def test_bad_printf_formats_are_compile_errors(fmt, match):
    with pytest.raises(CompileError, match=match) as info:
        SourceModule(kernel(f"printf({fmt});"))
    assert info.value.line == 4


def test_printf_argument_count_is_checked():
    with pytest.raises(CompileError, match="takes 2 argument"):
        SourceModule(kernel('printf("%d %d", x);'))


def test_printf_conversions_by_c_rules(capfd):
    body = ('if (x == 0) printf("%c%c|%u|%x|%d|%5.1f|%s|%%|\\u00e9|%*d|%-3d|\\n", 0x110041, '
            '-191, -1, -1, -1, 2.25f, "s", 4, 7, 5);')
    launch(kernel(body), "k", np.zeros(32, np.int32))
    assert capfd.readouterr().out == "AA|4294967295|ffffffff|-1|  2.2|s|%|é|   7|5  |\n"


# --------------------------------------------------------------------------- printf volume
def test_printf_output_is_capped_at_a_gpu_buffer(capfd):
    body = 'for (int i = 0; i < 200; i++) printf("thread %4d line %4d of a long story\\n", x, i);'
    result, seconds, _ = measured(lambda: launch(kernel(body), "k", np.zeros(1024, np.int32),
                                                 block=(1024, 1, 1)))
    assert not isinstance(result, Exception), result
    out = capfd.readouterr().out
    # 1024 threads x 200 lines x 33 bytes = 6.7 MB asked for; 1 MB (whole lines) printed.
    body_bytes = out.split("\n[printf output")[0].encode()
    assert E.PRINTF_BUFFER_BYTES - 40 <= len(body_bytes) <= E.PRINTF_BUFFER_BYTES
    assert "cut at 1,048,576 bytes" in out and out.count("cut at") == 1
    assert out.startswith("thread    0 line    0 of a long story\n")
    assert seconds < 30


@pytest.mark.parametrize("fmt", [r'"%1000000000d\n"', r'"%.1000000000f\n"', r'"%*d\n"'])
def test_a_huge_printf_width_is_cut_not_built(capfd, fmt):
    args = "1000000000, 1" if "*" in fmt else ("1.0" if "f" in fmt else "1")
    result, seconds, peak = measured(
        lambda: launch(kernel(f"printf({fmt}, {args});"), "k", np.zeros(32, np.int32)),
        memory=True)
    assert not isinstance(result, Exception), result
    out = capfd.readouterr().out
    assert "cut at" in out and len(out) < 1000
    assert peak < 100 << 20 and seconds < 10, (seconds, peak)


# --------------------------------------------------------------------------- memory
def test_a_256_kib_local_array_over_65536_threads_runs():
    body = "float big[65536];\n    for (int i = 0; i < 65536; i += 8192) big[i] = i + x;\n" \
           "    a[blockIdx.x * 32 + x] = (int)big[16384];"
    out = np.zeros(65536, np.int32)
    result, seconds, peak = measured(lambda: launch(kernel(body), "k", out, grid=(2048, 1)),
                                     memory=True)
    assert not isinstance(result, Exception), result
    assert out.tolist() == [16384 + i % 32 for i in range(65536)]
    # 16 GiB of local memory in all; one batch of 256 MiB at a time (never touched whole).
    assert peak < 1 << 30 and seconds < 60, (seconds, peak)


def test_local_memory_over_the_cuda_limit_is_a_compile_error():
    with pytest.raises(CompileError, match="512 KiB"):
        SourceModule(kernel("float big[1 << 20];\n    a[0] = 1;"))


def test_batches_are_sized_by_memory():
    src = ("__global__ void k(int* a) { __shared__ float s[12288]; s[threadIdx.x] = 1;\n"
           "    __syncthreads(); a[blockIdx.x] = (int)s[0] + blockIdx.x; }")
    code = SourceModule(src).get_function("k")._code
    launch_ = E.Launch(code, (1, 1, 1), (65536, 1, 1), 0, E.LaunchOptions())
    per_batch = launch_.blocks_per_batch()
    assert per_batch * 48 * 1024 * 18 <= E.BATCH_BYTES < (per_batch + 1) * 48 * 1024 * 18
    out = np.zeros(2048, np.int32)     # a smaller grid of the same kernel runs, and is right
    launch(src, "k", out, block=(1, 1, 1), grid=(2048, 1))
    assert out.tolist() == [1 + i for i in range(2048)]


# --------------------------------------------------------------------------- time
def test_max_seconds_holds_in_a_heavy_loop():
    body = ("float s = 0.0f;\n    for (int i = 0; i < 1000000000; i++) s += a[x % 4] * 0.5f;\n"
            "    a[0] = (int)s;")
    f = SourceModule(kernel(body)).get_function("k")
    result, seconds, _ = measured(lambda: f(Out(np.zeros(4, np.int32)), block=(1024, 1, 1),
                                            grid=(64, 1), max_seconds=1, max_steps=10**12))
    assert isinstance(result, StepBudgetExceeded), result
    assert "ran for more than 1 s" in str(result) and result.line == 5
    assert seconds < 10


def test_a_loop_free_grid_of_2_to_the_31_blocks_stops_at_the_limit():
    f = SourceModule("__global__ void k(int* a) { if (blockIdx.x == 0) a[0] = 1; }"
                     ).get_function("k")
    with pytest.warns(E.EmulatorPerformanceWarning):
        result, seconds, _ = measured(lambda: f(Out(np.zeros(1, np.int32)), block=(1024, 1, 1),
                                                grid=(2**31 - 1, 1), max_seconds=1))
    assert isinstance(result, StepBudgetExceeded), result
    assert "of its 2,147,483,647 blocks had run" in str(result)
    assert seconds < 10


# --------------------------------------------------------------------------- the grader
HOSTILE = {
    "empty": "",
    "NUL bytes": "\0\0\0",
    "unbalanced #if": "#if 1\n" + GOOD,
    "macro bomb": DOUBLING + "int y = A20;\n" + GOOD,
    "octal escape": GOOD.replace("float acc = 0.0f;", "float acc = '\\777';"),
    "deep nesting": GOOD.replace("float acc = 0.0f;",
                                 "float acc = " + "+".join(["0.0f"] * 5000) + ";"),
    "parentheses": SGEMM + "{ float x = " + "(" * 5000 + "1" + ")" * 5000 + "; }",
    "endless loop": "#define TILE 16\n" + SGEMM + "{ __shared__ float s[TILE][TILE];\n"
                    " while (1) { s[0][0] = 1; } }",
    "endless TILE probe": "__device__ int spin() { int i = 0; while (1) i++; return i; }\n"
                          "#define TILE spin()\n" + SGEMM + " { }",
    "device call chain": "#define TILE 16\n__device__ float f0(float x) { return x; }\n" + "".join(
        f"__device__ float f{i}(float x) {{ return f{i - 1}(x); }}\n" for i in range(1, 80))
        + SGEMM + " { __shared__ float s[TILE][TILE]; s[0][0] = f79(1.0f); }",
    "huge local array": GOOD.replace("float acc = 0.0f;", "float acc = 0.0f; float b[1<<20];"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_check_sgemm_raises_nothing_and_ends_in_time(name):
    result, seconds, _ = measured(lambda: check_sgemm(HOSTILE[name], "sgemm", time_limit=10))
    assert isinstance(result, GradeReport), repr(result)
    assert not result.passed and result.score < 50
    assert seconds < 10 + 5


def test_a_printf_flood_is_graded_as_the_kernel_it_is(capfd):
    flood = GOOD.replace("acc += tileA", 'printf("%1000000d", 1); acc += tileA')
    result, seconds, _ = measured(lambda: check_sgemm(flood, "sgemm", time_limit=10))
    assert isinstance(result, GradeReport) and result.score == 100     # printf is no fault
    out = capfd.readouterr().out
    launches = out.count("cut at 1,048,576 bytes")
    assert launches >= 8 and len(out) <= launches * (E.PRINTF_BUFFER_BYTES + 300)
    assert seconds < 10 + 5


@pytest.mark.parametrize("error", [RecursionError, MemoryError, OverflowError, ValueError])
def test_whatever_escapes_grading_becomes_a_failing_report(monkeypatch, error):
    def boom(*args, **kwargs):
        raise error("from a hostile kernel")
    monkeypatch.setattr(grading_sgemm, "_correctness", boom)
    report = check_sgemm(GOOD, "sgemm")
    assert isinstance(report, GradeReport) and report.score == 0
    status = {MemoryError: "memory:"}.get(error, "error:")
    assert report.failures[0].startswith(f"compiles and launches: {status}")


def test_the_time_box_interrupts_anything(monkeypatch):
    def slow(*args, **kwargs):        # a compile or a launch that ignores every limit
        time.sleep(30)
    monkeypatch.setattr(grading_sgemm, "_correctness", slow)
    t0 = time.perf_counter()
    report = check_sgemm(GOOD, "sgemm", time_limit=1)
    seconds = time.perf_counter() - t0
    assert report.failures[0].startswith("compiles and launches: timeout:")
    assert seconds < 1 + grading_sgemm.GRACE_SECONDS + 3


def test_the_time_box_gives_back_an_outer_alarm():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        with grading_sgemm._time_box(5):
            pass
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < remaining <= 30 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_lone_surrogates_are_a_compile_error():
    with pytest.raises(CompileError, match="lone surrogate") as info:
        SourceModule(kernel("a[0] = '\ud800';"))
    assert info.value.line == 4


def test_compile_time_counts_against_the_time_limit():
    report = check_sgemm(GOOD, "sgemm", time_limit=0.05)
    assert not report.passed
    assert any("time limit" in f or "timeout" in f for f in report.failures)


def test_a_wrong_argument_type_still_raises():
    with pytest.raises(TypeError):
        check_sgemm(b"bytes", "sgemm")


def test_running_out_of_memory_in_a_launch_is_a_kernel_error(monkeypatch):
    def no_memory(self, launch, block_ids):
        raise MemoryError
    f = SourceModule(kernel("a[x] = x;")).get_function("k")
    monkeypatch.setattr(E.Context, "__init__", no_memory)
    with pytest.raises(KernelRuntimeError, match="ran out of memory"):
        f(Out(np.zeros(32, np.int32)), block=(32, 1, 1), grid=(1, 1))


def test_the_recursion_limit_is_given_back():
    import sys
    before = sys.getrecursionlimit()
    SourceModule(kernel("a[x] = " + "+".join(["x"] * 600) + ";"))
    launch(kernel("a[x] = " + "+".join(["x"] * 601) + ";"), "k", np.zeros(32, np.int32))
    assert sys.getrecursionlimit() == before


def test_an_internal_failure_while_compiling_is_a_compile_error(monkeypatch):
    # Whatever the translator or the compiler trips on reaches the student as a CompileError.
    from tilinglib.toolchain.runtime import module

    def broken(pre, ast):
        raise ValueError("a bug in the compiler")

    monkeypatch.setattr(module, "compile_program", broken)
    module._compile.cache_clear()
    with pytest.raises(CompileError, match="internal ValueError"):
        SourceModule("__global__ void k(int* a) { a[0] = 7; }")
    module._compile.cache_clear()
