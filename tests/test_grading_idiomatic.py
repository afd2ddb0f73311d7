"""Idiomatic code graded as what it is (issue 18, item 4), through the command's own path.

Each test takes a correct answer, writes it the way a fluent C++ or IPython user would, and
asserts the real score: every cast form of a 64-bit index product, TILE as ``constexpr`` /
``static const`` / ``enum`` / a template argument (100, not 90); ``%%time`` as the answer
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
