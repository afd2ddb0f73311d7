"""bench/conformance_corpus.py's own logic: the list parses, launches build, references and
the explicit instantiation it writes are right. (Running the corpus needs the fetched
mirrors of other people's repositories: that is the bench script's job, not a test's.)"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def corpus():
    spec = importlib.util.spec_from_file_location("conformance_corpus",
                                                  BENCH / "conformance_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_list_is_large_and_every_entry_builds(corpus):
    listing = json.loads((BENCH / "conformance_corpus.json").read_text())
    kernels = listing["kernels"]
    assert len(kernels) >= 45
    assert len({k["repo"] for k in kernels}) >= 6
    assert len({k["id"] for k in kernels}) == len(kernels)
    for k in kernels:
        assert k["repo"] in listing["repositories"]
        assert len(listing["repositories"][k["repo"]]) == 40
        assert k["ref"] in corpus.REFERENCES, k["id"]
        launch = corpus.build_launch(k)
        expected, _ = corpus.expected_of(k, launch)
        names = {name for kind, name, _ in launch["args"] if kind != "scalar"}
        assert set(expected) <= names, k["id"]
        assert all(b >= 1 for b in launch["block"]) and all(g >= 1 for g in launch["grid"])


def test_explicit_instantiation_substitutes_parameters_and_drops_defaults(corpus):
    src = ("template <class T, unsigned int blockSize>\n"
           "__global__ void __launch_bounds__(blockSize)\n"
           "    scan(const T *__restrict__ in, T *out, int n, T *sums = NULL) { }\n")
    assert corpus.explicit_instantiation(src, "scan", "<float, 128>") == (
        "template __global__ void scan<float, 128>(const float *__restrict__, float *, int, "
        "float *);")
    with pytest.raises(ValueError, match="2 template parameters, 1 arguments"):
        corpus.explicit_instantiation(src, "scan", "<float>")


def test_build_launch_reads_scalars_arrays_and_expressions(corpus):
    entry = {"id": "t", "sizes": {"M": 40, "K": 3}, "block": [32, 1], "grid": ["cdiv(M, 32)"],
             "shared": "M * 4", "args": ["i32 M", "f32 alpha=1.5", "in f32[M,K] A",
                                          "out u32[M] B"], "init": {"A": "randint(0, 2)"}}
    launch = corpus.build_launch(entry)
    kinds = [(k, n) for k, n, _ in launch["args"]]
    assert kinds == [("scalar", None), ("scalar", "alpha"), ("in", "A"), ("out", "B")]
    assert launch["args"][0][2] == np.int32(40) and launch["args"][0][2].dtype == np.int32
    assert launch["scope"]["alpha"] == np.float32(1.5)
    a = launch["args"][2][2]
    assert a.shape == (40, 3) and a.dtype == np.float32 and set(np.unique(a)) <= {0.0, 1.0}
    assert not launch["args"][3][2].any()
    assert launch["block"] == (32, 1, 1) and launch["grid"] == (2, 1)
    assert launch["shared"] == 160


def test_chunk_sums_fold_pieces_onto_blocks(corpus):
    x = np.arange(10, dtype=np.int32)
    # pieces of 3: [0,1,2] [3,4,5] [6,7,8] [9]; onto 2 blocks: pieces 0, 2 and 1, 3
    np.testing.assert_array_equal(corpus._chunk_sums(x, 3, 2), [3 + 21, 12 + 9])
    np.testing.assert_array_equal(corpus._chunk_sums(x, 5, 2), [10, 35])


def test_compare_names_the_output_that_differs(corpus):
    entry = {"id": "t", "ref": "add", "ref_args": {"a": "a", "b": "b", "out": "c"},
             "sizes": {"n": 4}, "block": [4], "grid": [1],
             "args": ["in i32[n] a", "in i32[n] b", "out i32[n] c"]}
    launch = corpus.build_launch(entry)
    got = {"c": launch["scope"]["a"] + launch["scope"]["b"]}
    assert corpus.compare(entry, launch, got) is None
    got["c"][2] += 1
    assert corpus.compare(entry, launch, got).startswith("c: Mismatched elements: 1 / 4")


def test_constructs_ignore_comments(corpus):
    text = "// template <int N> uses uint\n__global__ void k(uint *p, int n = 3) { }\n"
    assert corpus.constructs_of(text) == ["uint", "default argument"]


# --- the held-out sample's additions to the script


def test_explicit_instantiation_names_the_namespace(corpus):
    src = ("namespace PMPP\n{\n    template <typename T>\n"
           "    __global__ void vecAdd(T const *a, T *res, unsigned n) { }\n}\n")
    assert corpus.explicit_instantiation(src, "vecAdd", "<float>", "PMPP") == (
        "template __global__ void PMPP::vecAdd<float>(float const *, float *, unsigned);")


def test_init_full_and_arange(corpus):
    entry = {"id": "t", "sizes": {"r": 3}, "block": [1], "grid": [1],
             "args": ["inout f32[2,2] m", "in i32[r+1] ptr"],
             "init": {"m": "full(-inf)", "ptr": "arange(4)"}}
    launch = corpus.build_launch(entry)
    assert np.isneginf(launch["scope"]["m"]).all() and launch["scope"]["m"].dtype == np.float32
    np.testing.assert_array_equal(launch["scope"]["ptr"], [0, 4, 8, 12])
    assert launch["scope"]["ptr"].dtype == np.int32


def test_heldout_references_by_hand(corpus):
    # block b of the coarse kernel adds data[8b : 8b+4] (bs 2, cf 2): 0+1+2+3 and 8+9+10+11
    s = {"data": np.arange(16, dtype=np.float32), "sum": np.array([1.0], np.float32),
         "bs": 2, "g": 2}
    want, _ = corpus.ref_coarse_pair_sums(s, {"x": "data", "out": "sum", "bs": "bs", "g": "g"})
    np.testing.assert_array_equal(want["sum"], [1 + 6 + 38])
    # two-bin histograms per block of 4: block 0 sees 0,1,2,0 and block 1 sees 0,0,5
    s = {"data": np.array([0, 1, 2, 0, 0, 0, 5], np.uint16), "hist": np.zeros(4, np.uint32)}
    want, _ = corpus.ref_binary_histogram_copies(s, {"bs": 4})
    np.testing.assert_array_equal(want["hist"], [4, 3, 2, 1])
    # a grid-stride max over 2 blocks of 1 thread, each thread starting from 0.0f
    s = {"x": np.array([-1, -2, 3, -4, 5, -6], np.float32), "o": np.zeros(2, np.float32)}
    want, _ = corpus.ref_grid_stride_max(s, {"x": "x", "out": "o", "bs": 1})
    np.testing.assert_array_equal(want["o"], [5, 0])
    # ELL y += A v: row 0 = 1*v[0] + 3*v[1], row 1 = 2*v[1] + 4*v[0]
    s = {"num_rows": 2, "num_cols": 2, "m_data": np.array([1.0, 2, 3, 4]),
         "m_col_index": np.array([0, 1, 1, 0], np.int32), "v": np.array([10.0, 20]),
         "y": np.array([1.0, 1])}
    want, _ = corpus.ref_ell_spmv(s, {})
    np.testing.assert_array_equal(want["y"], [71, 81])


def test_doc_table_counts_the_heldout_sample_apart(corpus):
    entry = {"id": "h", "repo": "o/r", "parts": [["k.cu", 1, 3]], "kernel": "k", "sizes": {},
             "block": [1], "grid": [1], "args": ["inout f32[1] x"], "ref": "increment",
             "ref_args": {"x": "x"}, "heldout": True}
    listing = {"repositories": {"o/r": "0" * 40}, "kernels": [entry]}
    emu = {"results": [{"id": "h", "result": "refused", "message": "m"}]}
    text = corpus.render_table(listing, emu, None)
    assert "Device code alone, the held-out sample: emulator 1 refused of 1." in text
    assert "the corpus:" not in text
    assert "| `k` (held out) |" in text and "| o/r (`0000000000`) (held out) |" in text


def test_mirror_with_a_work_tree_is_read_from_its_git_folder(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "MIRRORS", tmp_path)
    (tmp_path / "a+b" / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "c+d" / "repo").mkdir(parents=True)
    assert corpus.mirror_git_dir("a/b") == tmp_path / "a+b" / "repo" / ".git"
    assert corpus.mirror_git_dir("c/d") == tmp_path / "c+d" / "repo"


def test_a_file_as_written_inlines_the_repositorys_own_headers_once(corpus, monkeypatch):
    files = {"src/k.cu": '#include <cstdio>\n#include "util.h"\n#include "../inc/common.h"\n'
                         '#include "util.h"\n__global__ void k(float *o) { o[0] = ONE; }\n'
                         "int main() { return 0; }\n",
             "src/util.h": "#pragma once\n#define ONE 1.0f\n",
             "inc/common.h": '#include "cuda_runtime.h"\n#include <helper.h>\n',
             "lib/helper.h": "#define HELPED 1\n"}
    monkeypatch.setattr(corpus, "read_repo_file", lambda repo, commit, path: files[path])
    monkeypatch.setattr(corpus, "repo_files", lambda repo, commit: set(files))
    listing = {"repositories": {"o/r": "0" * 40}, "include_dirs": {"o/r": ["lib"]}}
    entry = {"id": "k", "repo": "o/r", "parts": [["src/k.cu", 5, 5]], "kernel": "k"}
    text, line_map, inlined = corpus.materialise_as_written(entry, listing)
    assert inlined == ["src/util.h", "inc/common.h", "lib/helper.h"]
    assert text.splitlines() == [
        "#include <cstdio>", "", "#pragma once", "#define ONE 1.0f", "",
        '#include "cuda_runtime.h"', "", "#define HELPED 1", "",
        "__global__ void k(float *o) { o[0] = ONE; }", "int main() { return 0; }"]
    # every line maps back to its file and line
    assert corpus.original_line(line_map, 4) == "src/util.h:2"
    assert corpus.original_line(line_map, 8) == "lib/helper.h:1"
    assert corpus.original_line(line_map, 11) == "src/k.cu:6"


def test_a_held_out_batch_is_rendered_from_its_two_results_files(corpus, monkeypatch):
    # two kernels of one repository: one refused at first and ok now, one a repository
    # bug that stops both times; the block counts each run and names the changes
    def entry(i, **kw):
        return {"id": i, "repo": "o/r", "parts": [["k.cu", 1, -1]], "kernel": i, "sizes": {},
                "block": [1], "grid": [1], "args": ["inout f32[1] x"], "ref": "increment",
                "ref_args": {"x": "x"}, "heldout": True, "batch": "b1", **kw}
    listing = {"repositories": {"o/r": "1" * 40},
               "kernels": [entry("a"), entry("b", finding="The repository's bug: k.")]}
    files = {corpus.batch_results("b1", before=True): {"results": [
                 {"id": "a", "result": "refused", "message": "kernel.cu:1:1: unexpected x"},
                 {"id": "b", "result": "runtime error", "message": "Invalid read"}]},
             corpus.batch_results("b1"): {"results": [
                 {"id": "a", "result": "ok"},
                 {"id": "b", "result": "runtime error", "message": "Invalid read"}]}}
    text = corpus.render_batches(listing, files.get)
    assert "Batch b1: 2 kernels of 1 repositories" in text
    assert ("| o/r (`1111111111`) | 2 | 1 refused, 1 runtime error | 1 ok, 1 runtime error | "
            "not run yet |") in text
    assert '- 1 refused -> ok: "unexpected x" (`a`)' in text
    assert "- `b` (o/r): runtime error: Invalid read. The repository's bug: k." in text
    # with the H200's results file: its column, and its result beside each stop
    files[corpus.HERE / "results" / corpus.batch_h200_name("b1")] = {"results": [
        {"id": "a", "result": "ok"}, {"id": "b", "result": "error", "message": "misaligned"}]}
    text = corpus.render_batches(listing, files.get)
    assert "| 1 ok, 1 runtime error | 1 ok, 1 error |" in text
    assert "runtime error: Invalid read; H200: error: misaligned. The repository's" in text
    assert corpus.batch_results("b1").name == "conformance_batch_b1.json"
