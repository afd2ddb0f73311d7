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
        "template __global__ void scan<float, 128>(const float *__restrict__ in, float *out, "
        "int n, float *sums);")
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
