"""Every measured figure the prose quotes is the data's figure (README: "For contributors").

The lessons' and assignments' markdown, README.md and docs/ are read sentence by sentence
(tests/prose_figures.py). Each figure quoted from a measurement is a claim in
tests/figure_claims.py: the words around it and the entry of tilinglib/data it must equal at
its printed precision. When the reference data are measured again, the first test names
every sentence that no longer holds (file, cell, the sentence, the figure quoted, the data's
figure); the second names every figure in a sentence about measurements that no claim
covers, so that a figure typed into the prose cannot escape the first.
"""

from __future__ import annotations

import functools

import pytest

import figure_claims
import prose_figures as pf


@functools.lru_cache(maxsize=None)
def _checked():
    """(units, failures): every claim looked up in the prose, its figures compared with the
    data, the spans it accounts for marked on the units."""
    units = [u for f in pf.prose_files() for u in pf.prose_of(f)]
    failures = []
    for claim in figure_claims.CLAIMS:
        found = pf.find_claim(claim, units)
        if not found:
            failures.append(f"{claim.file}: no sentence matches the claim «{claim.pattern}» "
                            f"any more: reword the claim with the sentence, or remove it")
            continue
        for unit, m in found:
            for i, (value_of, cmp) in enumerate(zip(claim.values, claim.comparisons())):
                quoted = m.group(i + 1)
                unit.used.append(m.span(i + 1))
                value = value_of()
                if not pf.holds(quoted, value, cmp):
                    rel = {"=": "where the data give", "<": "as an upper bound, but the data "
                           "give", ">": "as a lower bound, but the data give"}[cmp]
                    failures.append(f"{unit.where()}: «{unit.sentence_at(m.start(i + 1))}» "
                                    f"quotes {quoted} {rel} {pf.shown(value, quoted)}"
                                    + (f" ({claim.what})" if claim.what else ""))
    return units, failures


def test_every_quoted_figure_is_the_datas():
    _, failures = _checked()
    assert not failures, f"{len(failures)} quoted figures do not hold:\n" + "\n".join(failures)


def test_every_figure_in_a_sentence_about_measurements_is_claimed_or_exempt():
    units, _ = _checked()
    scanned = [u for u in units if u.file not in figure_claims.EXEMPT_FILES]
    problems = pf.unclaimed(scanned, figure_claims.EXEMPT)
    assert not problems, f"{len(problems)} figures unaccounted for:\n" + "\n".join(problems)


def test_every_exemption_still_matches_a_sentence_and_names_a_reason():
    units, _ = _checked()
    stale = [f"{x.file}: «{x.pattern}»" for x in figure_claims.EXEMPT
             if not any(u.file == x.file and pf.re.search(x.pattern, u.text) for u in units)]
    assert not stale, "exemptions that match no sentence any more:\n" + "\n".join(stale)
    assert all(x.reason for x in figure_claims.EXEMPT)
    for path, why in figure_claims.EXEMPT_FILES.items():
        assert (pf.ROOT / path).is_file() and why, path


def test_claims_name_files_that_exist_and_each_claim_figures_something():
    for claim in figure_claims.CLAIMS:
        assert (pf.ROOT / claim.file).is_file(), claim
        assert claim.pattern.count("{}") == len(claim.values) >= 1, claim
        assert len(claim.comparisons()) == len(claim.values), claim


@pytest.mark.parametrize("quoted, value, cmp, ok", [
    ("42.2", 42.19, "=", True), ("42.2", 42.26, "=", False), ("21,148", 21147.5, "=", True),
    ("21,741", 21147.5, "=", False), ("9.0", 8.9865, "=", True), ("2", 1.8, "<", True),
    ("2", 2.1, "<", False), ("80", 84.8, ">", True), ("+40", 45.0, "=", False),
])
def test_a_figure_holds_to_its_printed_precision(quoted, value, cmp, ok):
    assert pf.holds(quoted, value, cmp) is ok


def test_a_drifted_figure_is_named_with_its_sentence_and_the_datas_figure(tmp_path,
                                                                          monkeypatch):
    """The checker itself: a figure typed by hand that the data do not give is reported
    with the file, the sentence, the quoted figure and the data's."""
    doc = tmp_path / "doc.md"
    doc.write_text("The tiled kernel runs at 9,100 GFLOP/s on the H200.\n")
    monkeypatch.setattr(pf, "ROOT", tmp_path)
    claim = pf.Claim("doc.md", "runs at {} GFLOP/s", (lambda: 8986.5,), "=", "tiled, N=4096")
    units = pf.prose_of("doc.md")
    (unit, m), = pf.find_claim(claim, units)
    assert not pf.holds(m.group(1), 8986.5, "=")
    assert pf.shown(8986.5, m.group(1)) == "8,986" or pf.shown(8986.5, m.group(1)) == "8,987"
    doc.write_text("The tiled kernel runs at 9,100 GFLOP/s and 12,000 more on the H200.\n")
    units = pf.prose_of("doc.md")
    units[0].used.append(pf.find_claim(claim, units)[0][1].span(1))
    problems = pf.unclaimed(units, [])
    assert len(problems) == 1 and "12,000" in problems[0] and "doc.md" in problems[0]
