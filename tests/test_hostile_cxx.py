"""Hostile CUDA C++ aimed at the clang front end (tilinglib/toolchain/frontend/): each case ends in a
tilinglib error at the student's line, never a host file's contents in a message, a Python
traceback or a wrong result.

clang preprocesses stage 1's output again, so anything clang reads as a directive and pcpp
does not was an #include of a host file: the digraph '%:', a macro expanding to '#' at the
start of a line, '%:' or '#' after '\\r', a form feed, a NUL or a Unicode blank (clang skips
them as whitespace), '%:' after a raw string or a comment.
Before the fix each case below printed the secret file's first line in the CompileError
("unknown type 'PINEAPPLE_SECRET_31337'").
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tilinglib.emulator import SourceModule
from tilinglib.errors import CompileError, UnsupportedFeatureError

SECRET = "PINEAPPLE_SECRET_31337"
KERNEL = "__global__ void k(int* a)\n{\n    a[0] = 1;\n}\n"


@pytest.fixture
def secret(tmp_path, monkeypatch):
    path = tmp_path / "secret.h"
    path.write_text(f"{SECRET}\n")
    monkeypatch.chdir(tmp_path)
    return path


# name -> (text before the kernel, given the secret's path; the line the error names)
DIRECTIVES = {
    "digraph %:include": (lambda s: f'%:include "{s}"\n', 1),
    "digraph, spaces": (lambda s: f'%:   include "{s}"\n', 1),
    "digraph %:include_next": (lambda s: f'%:include_next "{s}"\n', 1),
    "digraph %:import": (lambda s: f'%:import "{s}"\n', 1),
    "digraph %:embed": (lambda s: f'__constant__ char d[] = {{\n%:embed "{s}"\n}};\n', 2),
    "digraph %:pragma": (lambda s: f'%:pragma GCC dependency "{s}"\n', 1),
    "macro expanding to #": (lambda s: f'#define H #\nH include "{s}"\n', 2),
    "function macro giving #": (lambda s: f'#define H(x) x\nH(#) include "{s}"\n', 2),
    "macro expanding to %:": (lambda s: f'#define H %:\nH include "{s}"\n', 2),
    "macro holding the directive": (lambda s: f'#define INC %:include "{s}"\nINC\n', 2),
    "after a block comment": (lambda s: f'/*\n*/%:include "{s}"\n', 1),
    "after a raw string": (lambda s: f'const char* r = R"(\n)";\n%:include "{s}"\n', 3),
    "after a digit separator": (lambda s: f"__device__ int q = 1'0;\n%:include \"{s}\"\n", 2),
    "after a carriage return": (lambda s: f'__device__ int z;\r%:include "{s}"\n', 2),
    "after a NUL": (lambda s: f'\x00%:include "{s}"\n', 1),
    "# after a NUL": (lambda s: f'\x00#include "{s}"\n', 1),       # pcpp sees no directive
    "after a no-break space": (lambda s: f'\u00a0%:include "{s}"\n', 1),
    "# after an em space": (lambda s: f'\u2003#include "{s}"\n', 1),
    "macro after a no-break space": (lambda s: f'#define H #\n\u00a0H include "{s}"\n', 2),
    "after a form feed": (lambda s: f'\f%:include "{s}"\n', None),   # pcpp counts \f
}


@pytest.mark.parametrize("name", list(DIRECTIVES))
def test_clang_runs_no_directive_pcpp_did_not(secret, name):
    before, line = DIRECTIVES[name]
    with pytest.raises(CompileError) as info:
        SourceModule(before(secret) + KERNEL)
    assert SECRET not in str(info.value)
    assert "directive that clang would run" in str(info.value)
    if line is not None:
        assert info.value.line == line


def test_has_include_tells_nothing_about_host_files(secret):
    """pcpp answers __has_include itself, 0 for any name: an existing file and a missing one
    give the same module (no one-bit oracle on the grader's disk)."""
    for path in (secret, secret.parent / "missing.h"):
        SourceModule(f'#if __has_include("{path}")\n#error found\n#endif\n' + KERNEL)


@pytest.mark.parametrize("body", [
    '    printf("#%d %%: # \\n", a[0]);\n',                  # '#' and '%:' inside a string
    '#pragma unroll 4\n    for (int i = 0; i < 8; i++) a[i] = i;\n',
    '#pragma unroll\n    for (int i = 0; i < 8; i++) a[i] = i;\n',
    '#pragma unroll (8 % 3 + 1)\n    for (int i = 0; i < 8; i++) a[i] = i;\n',
])
def test_legal_hashes_still_compile(body):
    SourceModule("#include <cstdio>\n__global__ void k(int* a)\n{\n" + body + "}\n")


# --------------------------------------------------------------------------- odd C++
H = "__global__ void k(int* a)\n{\n"


def run_k(src, n=4):
    """a[] after k(a) on one thread, a starting at zeros (int32)."""
    from tilinglib.emulator import InOut
    a = np.zeros(n, dtype=np.int32)
    SourceModule(src).get_function("k")(InOut(a), block=(1, 1, 1), grid=(1, 1))
    return a


# Before: a union was a struct (u.f = 1.0f; u.i read 0, not 0x3f800000 = 1065353216) and a
# bit-field held its whole type ('int x : 3' = 7 read 7, not -1): wrong results, silently.
@pytest.mark.parametrize("src, line, what", [
    ("union U { int i; float f; };\n" + H + "    U u; u.f = 1.0f;\n    a[0] = u.i;\n}\n",
     1, "unions ('U')"),
    ("struct S { union { int i; float f; }; };\n" + H + "    S s; s.f = 1.0f;\n"
     "    a[0] = s.i;\n}\n", 1, "does not support the type 'S::(anonymous"),
    ("struct S { int x : 3; int y : 5; };\n" + H + "    S s; s.x = 7; s.y = 1;\n"
     "    a[0] = s.x;\n}\n", 1, "bit-fields ('x' in 'S')"),
])
def test_union_and_bitfield_are_refused_not_miscomputed(src, line, what):
    with pytest.raises(UnsupportedFeatureError, match=re.escape(what)) as info:
        SourceModule(src)
    assert info.value.line == line


# Before: every enum was an internal TypeError (pycparser 3's c_ast.Enum takes an
# underlying type); a static method was given an object ("'S::f' takes 1 arguments, 0 given").
@pytest.mark.parametrize("src, expected", [
    ("enum class E : int { A = 3, B };\n" + H + "    a[0] = (int)E::B;\n}\n", 4),
    ("enum E { A = 1, B = 4 };\n" + H + "    a[0] = A | B;\n}\n", 5),
    ("enum { N = 7 };\n" + H + "    int t[N];\n    t[N - 1] = N;\n    a[0] = t[6];\n}\n", 7),
    ("struct S { __device__ static int f() { return 6; } };\n" + H + "    a[0] = S::f();\n}\n", 6),
    ("struct S { int n; __device__ static int f(int x) { return 6 + x; } };\n" + H
     + "    S s{1};\n    a[0] = s.f(2) + s.n;\n}\n", 9),
    ("template<typename T> struct O { template<int N> __device__ static T f() { return N; } };\n"
     + H + "    a[0] = O<int>::f<7>();\n}\n", 7),
])
def test_enums_and_static_methods_run(src, expected):
    assert run_k(src)[0] == expected


# --------------------------------------------------------------------------- the grader's checks
SUBMISSIONS = Path(__file__).parent / "submissions"


def _in_namespace(src: str) -> str:
    out = re.sub(r"(__global__ void sgemm\(.*?\n\{.*?\n\})", r"namespace hide {\n\1\n}", src,
                 flags=re.S)
    assert "namespace hide {" in out
    return out


# Before: get_function('sgemm') ran 'hide::sgemm' (a kernel in a namespace, by its own name)
# but the source checks looked for a kernel spelled 'sgemm', found none and passed: 100/100
# for submissions that earn 90.
@pytest.mark.parametrize("name, failing", [
    ("bad_int32_index.cu", "64-bit index arithmetic"),
    ("bad_uninitialised_accumulator.cu", "accumulator initialised"),
])
def test_a_namespace_does_not_hide_the_kernel_from_the_source_checks(name, failing):
    from tilinglib.grading import check_sgemm
    src = (SUBMISSIONS / name).read_text()
    plain = check_sgemm(src, "sgemm")
    hidden = check_sgemm(_in_namespace(src), "sgemm")
    assert [c.name for c in plain.checks if not c.passed] == [failing]
    assert [c.name for c in hidden.checks if not c.passed] == [failing]
    assert hidden.score == plain.score == 90


def test_source_checks_find_the_kernel_get_function_runs():
    from tilinglib.grading.source_checks import int_overflow_risks, uninitialized_locals
    src = ("namespace ns {\n__global__ void k(int n, int w, float* a)\n{\n    float s;\n"
           "    a[n * w] = s;\n}\n}\n")
    assert [(f.line, f.text) for f in int_overflow_risks(src, kernel="k")] == [(5, "n * w")]
    assert [(f.line, f.text) for f in uninitialized_locals(src, kernel="k")] == [(5, "s")]
    assert uninitialized_locals(src, kernel="other") == []


def test_the_graders_worker_shows_no_host_file_through_a_digraph(tmp_path):
    """End to end: `python -m tilinglib.grading`'s sandboxed worker on a notebook whose kernel
    starts '%:include "<secret>"' (before the fix its feedback held the secret's first line)."""
    from tilinglib.grading.cli import Submission, grade_submission
    from test_grading_cli import A1, REFERENCE, kernel_cell, submit
    secret = tmp_path / "secret.h"
    secret.write_text(f"{SECRET}\n")
    path = submit(tmp_path / "submitted", "mallory", A1,
                  [("a1-kernel", kernel_cell(f'%:include "{secret}"\n' + REFERENCE))])
    result = grade_submission(Submission("mallory", A1, path))
    text = json.dumps(result.outcome.__dict__)
    assert SECRET not in text
    assert result.outcome.status == "compile_error" and result.outcome.score == 0
    assert "directive that clang would run" in text


# --------------------------------------------------------------------------- clang's limits
def _never_ending_clang(tmp_path, monkeypatch):
    from tilinglib.toolchain.frontend import clang
    fake = tmp_path / "fakeclang"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TILINGLIB_CLANG", str(fake))
    monkeypatch.setattr(clang, "CLANG_SECONDS", 0.5)
    return clang


def test_clang_gets_one_deadline_not_one_per_pipe(tmp_path, monkeypatch):
    """A clang that never ends is stopped after CLANG_SECONDS in all, whichever pipe it
    keeps open (before, each pipe's reader was given CLANG_SECONDS in turn: a 30 s limit let a
    template explosion run 46 s). Checked by the waits asked for, not by a clock."""
    import selectors
    clang = _never_ending_clang(tmp_path, monkeypatch)
    asked = []
    real_select = selectors.DefaultSelector.select

    def select(self, timeout=None):
        asked.append(timeout)
        return real_select(self, timeout)

    monkeypatch.setattr(selectors.DefaultSelector, "select", select)
    status, rc, out, err = clang._clang_bytes(b"int x;\n")
    clang.stop_spare()
    assert status == "limit"
    assert asked and None not in asked and max(asked) <= 0.5


def test_clang_gets_one_deadline_where_pipes_are_read_by_threads(tmp_path, monkeypatch):
    """The same limit on the thread readers used where select() cannot wait on pipes
    (Windows): the two joins share the one deadline."""
    clang = _never_ending_clang(tmp_path, monkeypatch)
    asked = []
    real_join = clang.threading.Thread.join

    def join(self, timeout=None):
        if timeout is not None:
            asked.append(timeout)
        return real_join(self, timeout)

    monkeypatch.setattr(clang.threading.Thread, "join", join)
    status, rc, out, err = clang._Clang(clang.clang_command() + clang.FLAGS)._run_threads(
        b"int x;\n")
    assert status == "limit"
    assert len(asked) == 2 and sum(asked) <= 0.5


def test_clang_is_told_to_write_no_crash_reproducer():
    """A crash (clang out of its 2 GiB on '__make_integer_seq<S, int, 100000000>') would write
    the preprocessed source and a script to TMPDIR: -fno-crash-diagnostics, and TMPDIR is the
    empty directory clang runs in."""
    from tilinglib.toolchain.frontend import clang
    assert "-fno-crash-diagnostics" in clang.FLAGS


def test_a_clang_crash_is_named_as_such():
    from tilinglib.toolchain.frontend.clang import compile_error
    err = compile_error("zig: error: clang frontend command failed with exit code 134 (use -v "
                        "to see invocation)\n", ("int x;",))
    assert "stopped on this source without an error message" in str(err)
    assert "exit code 134" not in str(err)


# Before: the unset accumulator moved into a __device__ helper ('T s; return s;' in a
# template, or 'auto sum = zero();') passed the check: 100 instead of 90.
@pytest.mark.parametrize("helper, decl, name, line", [
    ("template<typename T> __device__ T acc() { T s; return s; }\n",
     "    float sum = acc<float>();\n", "s", 1),
    ("__device__ float zero() { float q; return q; }\n", "    auto sum = zero();\n", "q", 1),
])
def test_an_unset_accumulator_in_a_device_helper_is_found(helper, decl, name, line):
    from tilinglib.grading import check_sgemm
    src = (SUBMISSIONS / "bad_uninitialised_accumulator.cu").read_text()
    hidden = helper + src.replace("    float sum;\n", decl)
    report = check_sgemm(hidden, "sgemm")
    failed = [c for c in report.checks if not c.passed]
    assert [c.name for c in failed] == ["accumulator initialised"]
    assert f"'{name}' is read at line {line} " in failed[0].message
    assert report.score == 90


def test_cplusplus_selects_the_branch_nvcc_selects():
    """nvcc defines __cplusplus (C++17: 201703L); pcpp did not, so '#if __cplusplus' chose
    the other branch than the GPU build: a kernel graded on code the GPU never runs."""
    src = ("#if __cplusplus >= 201703L\n#define V 17\n#else\n#define V 0\n#endif\n" + H
           + "    a[0] = V;\n    a[1] = (int)(__cplusplus / 100);\n}\n")
    assert run_k(src)[:2].tolist() == [17, 2017]


# A method that writes to its object gets it by address (docs/frontend.md): every way of
# writing to it reaches the caller's object. (Before, each was refused: the object was a
# copy, and a write to it would have been lost.)
MUTATING_METHODS = {
    "this->n = 5": "{ this->n = 5; }",
    "n through a call": "{ inc(); } __device__ void inc() { n = 5; }",
    "(*this).n = 5": "{ (*this).n = 5; }",
    "*this = C{5}": "{ *this = C{5}; }",
    "int& r = n": "{ int& r = n; r = 5; }",
    "&n": "{ int* q = &n; *q = 5; }",
    "atomicAdd(&n, 4)": "{ atomicAdd(&n, 4); }",
}


@pytest.mark.parametrize("name", list(MUTATING_METHODS))
def test_a_write_to_a_methods_object_reaches_the_callers_object(name):
    src = ("struct C { int n; __device__ void set() " + MUTATING_METHODS[name] + " };\n" + H
           + "    C c{1};\n    c.set();\n    a[0] = c.n;\n}\n")
    assert run_k(src)[0] == 5          # 5 written, or 1 + 4 added


def test_the_kernel_named_so_wins_over_an_extern_c_mangled_name():
    """Before: get_function('sgemm') ran hide::sgemm (extern "C": its mangled name is
    'sgemm'), not the kernel named sgemm, because it came first in the source."""
    src = ('namespace hide { extern "C" __global__ void k(int* a) { a[0] = 2; } }\n'
           '__global__ void k(int* a) { a[0] = 1; }\n')
    assert run_k(src)[0] == 1
    from tilinglib.toolchain.frontend.program import parse
    from tilinglib.toolchain.frontend.preprocess import preprocess
    tu = parse(preprocess(src))
    assert tu.kernel_names == {"hide::k": "k", "k": "_Z1kPi"}
    assert tu.kernel_name("k") == "k" and tu.kernel_name("_Z1kPi") == "k"


# --------------------------------------------------------------------------- #line
def test_a_students_line_directive_is_dropped():
    """Before: '#line N' reached clang.flatten_lines, which wrote N blank lines for clang
    ('#line 2000000000': a list of 2e9 strings, 16 GB), and every message after it named line
    N + k, which the source does not have (no line quoted)."""
    from tilinglib.toolchain.frontend.clang import clang_input
    from tilinglib.toolchain.frontend.preprocess import preprocess
    src = "#line 3000000\n" + H + "    a[0] = b;\n}\n"
    pre = preprocess(src)
    assert "3000000" not in pre.text
    text, offset = clang_input(pre.text)
    assert text.count("\n") - offset < 10              # not 3,000,000 blank lines
    with pytest.raises(CompileError, match=r"kernel\.cu:4:12: 'b' is not declared") as info:
        SourceModule(src)
    assert info.value.line == 4 and info.value.source_line == "    a[0] = b;"


# Before: a 32-bit index product in a constructor's member initializer ('I(r, K, k).v')
# passed the 64-bit index check: 100 instead of 90 (a template, a static method, a
# namespace, a functor or an overload were already followed).
HELPER = "__device__ int idx(int r, int cols, int c)\n{\n    return r * cols + c;\n}\n"
CALL = r"idx\((\w+), (\w+), (\w+)\)"


@pytest.mark.parametrize("name, helper, call, text", [
    ("constructor", "struct I { int v; __device__ I(int r, int cols, int c) : v(r * cols + c) "
                    "{} };\n", r"I(\1, \2, \3).v", "r * cols (in I::I())"),
    ("template", "template<typename T> __device__ T idx(T r, T cols, T c) "
                 "{ return r * cols + c; }\n", r"idx(\1, \2, \3)", "r * cols (in idx<int>())"),
])
def test_an_index_product_hidden_in_cxx_is_found(name, helper, call, text):
    from tilinglib.grading import check_sgemm
    src = (SUBMISSIONS / "bad_int32_in_device_helper.cu").read_text()
    assert HELPER in src
    hidden = re.sub(CALL, call, src.replace(HELPER, helper))
    report = check_sgemm(hidden, "sgemm")
    failed = [c for c in report.checks if not c.passed]
    assert [c.name for c in failed] == ["64-bit index arithmetic"]
    assert f"line 8: {text}" in failed[0].message
    assert report.score == 90


def test_a_struct_field_holding_an_index_product_is_found():
    from tilinglib.grading.source_checks import int_overflow_risks
    src = ("struct P { int off; };\n__global__ void k(int n, int w, float* a)\n{\n    P p;\n"
           "    p.off = n * w;\n    a[p.off] = 1.0f;\n}\n")
    assert [(f.line, f.text) for f in int_overflow_risks(src, kernel="k")] == [(5, "n * w")]


def test_constant_memory_over_64_kib_is_a_compile_error():
    """Before: '__constant__ int c[1 << 30]' compiled, and the launch allocated 4 GB (a raw
    MemoryError under the grader's 2 GiB). 64 KiB exactly still runs."""
    with pytest.raises(CompileError, match=r"take 4,294,967,296 bytes; a GPU has 65,536"):
        SourceModule("__constant__ int c[1 << 30];\n" + H + "    a[0] = c[0];\n}\n")
    with pytest.raises(CompileError, match=r"\(c, d\) take 65,540 bytes"):
        SourceModule("__constant__ int c[1 << 14];\n__constant__ int d[1];\n" + H
                     + "    a[0] = c[0] + d[0];\n}\n")
    assert run_k("__constant__ int c[1 << 14] = {4, 5};\n" + H + "    a[0] = c[1];\n}\n")[0] == 5


# Before: an array initialised in part read all zeros (clang's JSON puts the elements under
# 'array_filler'): 'int l[4] = {4, 5}; l[1]' was 0, silently, in local and __constant__ arrays.
@pytest.mark.parametrize("src, expected", [
    (H + "    int l[4] = {4, 5};\n    a[0] = l[1];\n    a[1] = l[3];\n}\n", [5, 0]),
    ("__constant__ int c[4] = {4, 5};\n" + H + "    a[0] = c[1];\n    a[1] = c[2];\n}\n", [5, 0]),
    (H + "    int m[2][3] = {{1}, {4, 5}};\n    a[0] = m[1][1];\n    a[1] = m[0][2];\n}\n",
     [5, 0]),
    (H + "    float f[3] = {1.5f};\n    a[0] = (int)(f[0] * 2);\n    a[1] = (int)f[2];\n}\n",
     [3, 0]),
])
def test_a_partly_initialised_array_keeps_its_values(src, expected):
    assert run_k(src)[:2].tolist() == expected
