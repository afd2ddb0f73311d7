"""Idiomatic code graded as what it is (issue 18, item 4), through the command's own path.

Each test takes a correct answer, writes it the way a fluent C++ or IPython user would, and
asserts the real score: every cast form of a 64-bit index product, TILE as ``constexpr`` /
``static const`` / ``enum`` / a template argument, or a template parameter of the kernel
itself (100, not 90 or 0); ``%%time`` as the answer
cell's first line (100, as IPython and so nbgrader's autograde run it; was 0 and 10); whole
floats where the rule takes whole numbers (13.0, 32.0); and what was over-graded before: an
uninitialised ``float sum[1]`` accumulator and a 32-bit index product inside a struct method
(90, not 100). Duplicated answer cells are named in the feedback.
"""

import re
import warnings
from pathlib import Path

import nbformat
import pytest

from tilinglib.grading import check_sgemm
from tilinglib.grading.assignments import ASSIGNMENTS
from tilinglib.grading.cli import Submission, feedback_text, grade_submission

from test_grading_cli import A1, REFERENCE, kernel_cell, notebook, submit

ROOT = Path(__file__).resolve().parent.parent
A2, A3 = "a2_fix_the_kernel", "a3_choose_tile"
INDEX, ACCUMULATOR = "64-bit index arithmetic", "accumulator initialised"


def grade(source: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return check_sgemm(source, "sgemm", gpu=False)


def failed(report) -> dict:
    return {c.name: c.message for c in report.checks if not c.passed}


# --------------------------------------------------------------------------- C++
@pytest.mark.parametrize("cast", [r"static_cast<size_t>(\1)", r"size_t(\1)",
                                  r"static_cast<long long>(\1)", r"(unsigned long long)\1",
                                  r"int64_t(\1)", r"static_cast<std::size_t>(\1)"])
def test_every_cast_form_is_a_64_bit_product(cast):
    source = re.sub(r"\(size_t\)(\w+)", cast, REFERENCE)
    assert "(size_t)" not in source
    report = grade(source)
    assert (report.score, failed(report)) == (100.0, {})


TILES = {
    "constexpr": "constexpr int TILE = 16;",
    "static const": "static const int TILE = 16;",
    "enum": "enum { TILE = 16 };",
    "static constexpr member": "struct Config { static constexpr int TILE = 16; };\n"
                               "#define TILE Config::TILE",
}


@pytest.mark.parametrize("how", sorted(TILES))
def test_tile_declared_as_a_cxx_constant_is_the_tile(how):
    source = REFERENCE.replace("#ifndef TILE\n#define TILE 16\n#endif", TILES[how])
    assert "#define TILE 16" not in source
    report = grade(source)
    assert (report.score, report.tile, failed(report)) == (100.0, 16, {})


def test_tile_as_a_template_argument_of_a_device_function():
    step = ("template <int T>\n__device__ float dot(const float (*As)[T], const float (*Bs)[T], "
            "int ty, int tx)\n{\n    float s = 0.0f;\n    for (int k = 0; k < T; ++k)\n"
            "        s += As[ty][k] * Bs[k][tx];\n    return s;\n}\n")
    source = REFERENCE.replace("__global__", step + "__global__", 1).replace(
        "        for (int k = 0; k < TILE; ++k)\n            sum += As[ty][k] * Bs[k][tx];",
        "        sum += dot<TILE>(As, Bs, ty, tx);")
    assert "dot<TILE>" in source
    report = grade(source)
    assert (report.score, failed(report)) == (100.0, {})


def test_an_uninitialised_array_accumulator_loses_its_points():
    unset = (REFERENCE.replace("float sum = 0.0f;", "float sum[1];")
             .replace("sum +=", "sum[0] +=").replace("= sum;", "= sum[0];"))
    report = grade(unset)
    assert report.score == 90.0 and set(failed(report)) == {ACCUMULATOR}
    assert "'sum[0]' is read at line" in failed(report)[ACCUMULATOR]
    zeroed = unset.replace("float sum[1];", "float sum[1] = {};")
    assert grade(zeroed).score == 100.0


VIEW = ("struct View {\n    const float* p;\n    int ld;\n"
        "    __device__ float at(int r, int c) const { return p[%s + c]; }\n};\n")


def test_a_32_bit_index_product_inside_a_struct_method_is_found():
    def with_view(product):
        return (REFERENCE.replace("__global__", VIEW % product + "__global__", 1)
                .replace("A[(size_t)row * K + ka]", "View{A, K}.at(row, ka)"))
    report = grade(with_view("r * ld"))
    assert report.score == 90.0 and set(failed(report)) == {INDEX}
    assert "line 8: r * ld (in View::at())" in failed(report)[INDEX]
    assert grade(with_view("(size_t)r * ld")).score == 100.0


# --------------------------------------------------------------------------- notebooks
def _graded(tmp_path, assignment, cells):
    path = submit(tmp_path / "submitted", "s", assignment, cells)
    r = grade_submission(Submission("s", assignment, path))
    return r.outcome.status, r.outcome.score, r


def _solution_cells(assignment) -> list:
    """The (grade_id, source) of the source notebook's answer cells: the solution."""
    nb = nbformat.read(ROOT / "notebooks" / "assignments" / assignment / f"{assignment}.ipynb",
                       as_version=4)
    ids = {a.cell for a in ASSIGNMENTS[assignment].answers}
    return [(c.metadata["nbgrader"]["grade_id"], c.source) for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade_id") in ids]


@pytest.mark.parametrize("magic", ["%%time", "%%capture out", "\n%%time\n%%capture"])
def test_a_cell_magic_on_the_answer_cells_first_line_runs_its_body(tmp_path, magic):
    status, score, r = _graded(tmp_path, A1, [("a1-kernel", magic + "\n" + kernel_cell(REFERENCE))])
    assert (status, score) == ("graded", 100.0), r.read_notes
    line = magic.count("\n") + 2
    assert f"KERNEL: read from cell 'a1-kernel', line {line} " in " ".join(r.read_notes)


def test_a2_with_time_on_every_answer_cell_gets_what_autograde_gives(tmp_path):
    cells = [(gid, "%%time\n" + src) for gid, src in _solution_cells(A2)]
    assert (_graded(tmp_path, A2, cells)[:2]) == ("graded", 100.0)


def test_a_cell_magic_that_runs_no_python_of_the_notebook_sets_nothing(tmp_path):
    status, score, r = _graded(tmp_path, A1, [("a1-kernel", "%%timeit\n" + kernel_cell(REFERENCE))])
    assert (status, score) == ("no_kernel", 0.0)
    assert any("%%timeit runs it inside a function" in n for n in r.read_notes)


def test_whole_floats_are_whole_numbers(tmp_path):
    cells = [(gid, re.sub(r"BOUNDARY_BUG_LINE = (\d+)", r"BOUNDARY_BUG_LINE = \1.0", src))
             for gid, src in _solution_cells(A2)]
    assert any("BOUNDARY_BUG_LINE = 13.0" in src for _, src in cells)
    assert _graded(tmp_path / "a2", A2, cells)[:2] == ("graded", 100.0)
    cells = [(gid, re.sub(r"CHOSEN_TILE = (\d+)", r"CHOSEN_TILE = \1.0", src))
             for gid, src in _solution_cells(A3)]
    assert any(re.search(r"CHOSEN_TILE = \d+\.0", src) for _, src in cells)
    assert _graded(tmp_path / "a3", A3, cells)[:2] == ("graded", 70.0)
    # a float that is not whole reaches the rule, which says what is wrong
    cells = [(gid, re.sub(r"BOUNDARY_BUG_LINE = (\d+)", r"BOUNDARY_BUG_LINE = \1.5", src))
             for gid, src in _solution_cells(A2)]
    status, score, r = _graded(tmp_path / "a2half", A2, cells)
    assert (status, score) == ("graded", 95.0)
    assert "the answer is a whole number, not 13.5" in feedback_text(r)


def test_duplicated_answer_cells_are_named_in_the_feedback(tmp_path):
    cells = [("a1-kernel", kernel_cell("// an early draft")), (None, "x = 1"),
             ("a1-kernel", kernel_cell(REFERENCE))]
    nb = notebook(cells)
    folder = tmp_path / "submitted" / "s" / A1
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{A1}.ipynb")
    r = grade_submission(Submission("s", A1, folder / f"{A1}.ipynb"))
    assert (r.outcome.status, r.outcome.score) == ("graded", 100.0)
    text = feedback_text(r)
    assert "The cell 'a1-kernel' appears 2 times (cells 1, 3)" in text
    assert "Duplicate grade id" in text


# --------------------------------------------------------------------------- kernel templates
A4 = "a4_coarsen"
SGEMM_TYPES = "(int, int, int, const float*, const float*, float*)"


def templated(source: str, params: str = "int TILE", drop=("TILE",)) -> str:
    """`source` with its macros `drop` removed and its kernels made `template <params>` (an
    answer cell holds the starting code's KERNEL and the solution's)."""
    source = source.replace("#ifndef TILE\n#define TILE 16\n#endif\n", "")
    for macro in drop:
        source = re.sub(rf"#define {macro} \d+[^\n]*\n", "", source)
    out = re.sub(r"__global__ void (\w+)\(", rf"template <{params}>\n__global__ void \1(",
                 source)
    assert out != source and not any(re.search(rf"#define {m}\b", out) for m in drop)
    return out


def _answer_cells(assignment, change) -> list:
    """The solution's answer cells, the kernel's cell passed through `change`."""
    return [(gid, change(src) if gid in ("a1-kernel", "a2-fix-answer", "a4-kernel") else src)
            for gid, src in _solution_cells(assignment)]


@pytest.mark.parametrize("assignment", [A1, A2, A4])
def test_a_template_tile_kernel_scores_what_its_define_version_scores(tmp_path, assignment):
    # The solution as written (#define TILE), then with TILE a template parameter the
    # grader instantiates at the assignment's TILE (16 in a1 and a2, 32 in a4)
    define = _graded(tmp_path / "define", assignment, _solution_cells(assignment))
    cells = _answer_cells(assignment, templated)
    assert any("template <int TILE>" in src for _, src in cells)
    status, score, r = _graded(tmp_path / "template", assignment, cells)
    assert define[:2] == ("graded", 100.0)
    assert (status, score) == ("graded", 100.0), feedback_text(r)
    said = ("graded as sgemmCoarse<32> (TILE = 32, from the assignment's value, COARSE = 4, "
            "from the source's macro)" if assignment == A4 else
            "graded as sgemm<16> (TILE = 16, from the assignment's value)")
    assert said in feedback_text(r)


def test_a_wrong_template_kernel_loses_what_its_define_version_loses():
    # the B load without its col < N guard (a2's boundary bug), and the second barrier gone
    bugs = [("(kb < K && col < N)", "(kb < K)"),
            ("        __syncthreads();\n    }", "    }")]
    for old, new in bugs:
        wrong = REFERENCE.replace(old, new)
        assert wrong != REFERENCE
        define, template = grade(wrong), grade(templated(wrong))
        assert template.score == define.score < 30, (old, template.score)
        assert template.tile == 16 and set(failed(template)) == set(failed(define))
    assert grade(templated(REFERENCE.replace(*bugs[0]))).score == pytest.approx(13.33)


def test_an_explicit_instantiation_is_the_kernel_graded():
    base = templated(REFERENCE)
    for tile in (8, 16):
        source = base + f"\ntemplate __global__ void sgemm<{tile}>{SGEMM_TYPES};\n"
        report = grade(source)
        assert (report.score, report.tile, report.block, failed(report)) == \
            (100.0, tile, (tile, tile, 1), {})
        assert f"graded as sgemm<{tile}> (TILE = {tile}, from the source's own " \
               f"instantiation)" in report.checks[0].message
    # a parameter of another name takes the source's TILE macro
    other = "#define TILE 8\n" + templated(REFERENCE, "int T").replace(
        "[TILE]", "[T]").replace("* TILE", "* T").replace("TILE + ", "T + ").replace(
        "+ TILE - 1) / TILE", "+ T - 1) / T").replace("k < TILE", "k < T")
    assert "template <int T>" in other and "As[T][T]" in other
    report = grade(other)
    assert (report.score, report.tile) == (100.0, 8)
    # two instantiations and nothing to choose one: no grade, and what to change
    both = base + "".join(f"\ntemplate __global__ void sgemm<{t}>{SGEMM_TYPES};\n"
                          for t in (8, 16))
    report = grade(both)
    assert report.score == 0
    assert "instantiates the kernel template 'sgemm' several times (sgemm<8>, sgemm<16>)" \
        in report.checks[0].message
    assert "Keep only the instantiation to grade" in report.checks[0].message


def test_a_template_parameter_hidden_by_a_tile_macro_says_what_to_change():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = check_sgemm(templated(REFERENCE), "sgemm", gpu=False, options=["-DTILE=16"])
    assert report.score == 0
    message = report.checks[0].message
    assert "the source does not compile" in message
    assert "TILE is both a template parameter (template <int TILE>) and a macro " \
           "(-DTILE=... in the options)" in message and "Keep one" in message


def test_a4_templates_over_tile_and_coarse():
    from tilinglib.grading.coarse import check_coarsened

    good = (ROOT / "tests" / "submissions" / "a4" / "good_coarse4.cu").read_text()
    both = templated(good, "int TILE, int COARSE", drop=("TILE", "COARSE"))
    report = check_coarsened(both + f"\ntemplate __global__ void sgemmCoarse<32, 4>"
                                    f"{SGEMM_TYPES};\n")
    assert (report.score, report.tile, report.block) == (100.0, 32, (32, 8, 1))
    report = check_coarsened(both)          # COARSE has no assignment value: say what to do
    assert report.score == 0
    assert ("nothing gives its parameter COARSE a value: instantiate it after the kernel, "
            "e.g. template __global__ void sgemmCoarse<32, 4>") in report.checks[0].message
    coarse_only = templated(good, "int COARSE", drop=("COARSE",))     # #define TILE 32 kept
    report = check_coarsened(coarse_only + f"\ntemplate __global__ void sgemmCoarse<8>"
                                           f"{SGEMM_TYPES};\n")
    assert (report.score, report.block) == (100.0, (32, 4, 1))
