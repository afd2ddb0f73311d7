"""Correct kernels never change: every race-free kernel of the tests (the conformance suite)
and of the lessons (the course's kernels, the ladder's steps) gives bit-identical outputs
under schedule="adversarial" and in lockstep, for a few seeds each (1 and 2: every warp
barrier to barrier, ascending and descending; one more picked from the kernel's name, but
for the ladder's big kernels).
An output the conformance case itself checks with a function (a GPU may legally give
several answers: which thread wins an atomicCAS) is checked with it instead.
bench/race_adversary.py runs more seeds, and the corpus, and prints the figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "race_adversary.py"
_spec = importlib.util.spec_from_file_location("race_adversary", BENCH)
bench = importlib.util.module_from_spec(_spec)
sys.modules["race_adversary"] = bench        # (its dataclass looks its module up there)
_spec.loader.exec_module(bench)

CASES = bench.race_free_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_race_free_kernel_is_bit_identical_under_adversarial_schedules(case):
    # the ladder's kernels are the biggest: seeds 1 and 2 only (both extremes of a warp
    # running alone), bench/race_adversary.py runs them under more
    count = 2 if case.name.startswith("ladder/") else 3
    result = bench.compare_schedules(case, bench.property_seeds(case.name, count))
    assert "refused" not in result, result
    assert result["runs"] == count and result["differ"] == [], result


def test_the_seeds_differ_between_kernels_and_stay_fixed():
    a, b = bench.property_seeds("conformance/a"), bench.property_seeds("conformance/b")
    assert a[:2] == b[:2] == [1, 2] and a[2] != b[2]
    assert bench.property_seeds("conformance/a") == a


def test_the_lists_hold_the_kernels_they_claim():
    names = {c.name for c in CASES}
    assert len([n for n in names if n.startswith("conformance/")]) >= 35
    assert {"ladder/tiled", "ladder/regtile2d", "lesson06/sgemm_tiled_db",
            "lesson06/saxpy"} <= names
    racy = {c.name for c in bench.racy_cases()}
    assert "lesson03/tiled minus first barrier" in racy and not racy & names
