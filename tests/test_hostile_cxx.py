"""Hostile CUDA C++ aimed at the clang front end (tilinglib/frontend/): each case ends in a
tilinglib error at the student's line, never a host file's contents in a message, a Python
traceback or a wrong result.

clang preprocesses stage 1's output again, so anything clang reads as a directive and pcpp
does not was an #include of a host file: the digraph '%:', a macro expanding to '#' at the
start of a line, '%:' after '\\r' or a form feed, '%:' after a raw string or a comment.
Before the fix each case below printed the secret file's first line in the CompileError
("unknown type 'PINEAPPLE_SECRET_31337'").
"""

import pytest

from tilinglib.emulator import SourceModule
from tilinglib.errors import CompileError

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
])
def test_legal_hashes_still_compile(body):
    SourceModule("#include <cstdio>\n__global__ void k(int* a)\n{\n" + body + "}\n")
