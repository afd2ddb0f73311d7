"""Every file the course names exists in this repository.

A student or instructor who reads a path in a lesson (its text or its committed output), in
README.md, in docs/ or in a message of tilinglib's must be able to open it. Checked here:
paths that start at one of the repository's top-level folders (`tilinglib/data/x.json`),
paths that climb out of it (`../x`: nothing outside the repository is ours to name), and bare
file names with a source or document ending (`preprocess.py`), which must exist somewhere in
the repository.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOP = sorted(p.name for p in ROOT.iterdir()
             if p.is_dir() and not p.name.startswith(".") or p.name == ".ci")
ENDINGS = ("py", "cu", "md", "ipynb", "json", "yml", "toml")

# Paths that climb out of a folder the README's commands make (course/), or that are examples
# of what the emulator refuses, each for a reason a reader can see.
NOT_REPOSITORY_PATHS = {
    "../x": "an #include the emulator refuses, in docs/emulator.md's limits",
    "../.venv/bin/": "the venv the README's install command makes, seen from course/",
}

# Names that are not files of this repository, each for a reason a reader can see.
NOT_REPOSITORY_FILES = {
    "kernel.cu": "the name PyCUDA and the emulator give the student's own source text",
    "FILE.py": "a placeholder, in `--setup FILE.py`, for the instructor's own file",
    "gradebook.db": "nbgrader's database, made by `nbgrader autograde`",
    "grades.csv": "written by `python -m tilinglib.grading`",
    "grades.json": "written by `python -m tilinglib.grading` (its results file)",
    "h200.json": "the file `python -m tilinglib.devtools.bench --out h200.json` writes",
    "run_gpu.py": "written by `bench/conformance_corpus.py --pycuda-script DIR` into DIR",
}


def _corpus_files() -> set[str]:
    """The names of other repositories' files that the conformance corpus lists
    (bench/conformance_corpus.json: each kernel's parts): docs/conformance.md names them."""
    listing = json.loads((ROOT / "bench" / "conformance_corpus.json").read_text())
    return {path.rsplit("/", 1)[-1] for k in listing["kernels"]
            for path, _, _ in k["parts"] + k.get("as_written", {}).get("parts", [])}

_PATH = re.compile(r"(?<![\w/.:-])((?:\.\./)+[\w./-]+|(?:%s)/[\w./-]*)" % "|".join(
    re.escape(t) for t in TOP))
_BARE = re.compile(r"(?<![\w/.:-])([\w-]+\.(?:%s))\b(?![\w/(-])" % "|".join(ENDINGS))


def _texts():
    for path in sorted(ROOT.glob("notebooks/**/*.ipynb")):
        nb = json.loads(path.read_text())
        parts = []
        for cell in nb["cells"]:
            parts.append("".join(cell["source"]))
            for out in cell.get("outputs", []):
                parts.append("".join(out.get("text", "")))
                parts.append("".join(out.get("data", {}).get("text/plain", "")))
        yield path, "\n".join(parts)
    for path in [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))]:
        yield path, path.read_text()
    for path in sorted(ROOT.glob("tilinglib/**/*.py")):
        yield path, path.read_text()


def _all_names() -> set[str]:
    skip = {".git", ".venv", ".gpu", ".zig", ".corpus", "artifacts", "build", "dist"}
    return {p.name for p in ROOT.rglob("*")
            if not skip.intersection(p.relative_to(ROOT).parts)}


def _is_pattern_prefix(p: str) -> bool:
    """`notebooks/0` of `notebooks/0*.ipynb`, `tilinglib/data/reference_` of
    `reference_<machine>.json`: the start of a pattern, which some real path continues."""
    parent, _, stem = p.rpartition("/")
    return bool(stem) and (ROOT / parent).is_dir() and any(
        c.name.startswith(stem) for c in (ROOT / parent).iterdir())


def _missing():
    names = _all_names() | _corpus_files()
    for path, text in _texts():
        rel = path.relative_to(ROOT)
        for m in _PATH.finditer(text):
            p = m.group(1).rstrip(".")
            if p in NOT_REPOSITORY_PATHS:
                continue
            if p.startswith("../"):
                # From a folder inside the repository (the README's course/), ../X is X.
                inner = p
                while inner.startswith("../"):
                    inner = inner[3:]
                if not (ROOT / inner).exists():
                    yield f"{rel}: {p} (outside the repository)"
            elif not (ROOT / p).exists() and not _is_pattern_prefix(p):
                yield f"{rel}: {p}"
        for m in _BARE.finditer(text):
            name = m.group(1)
            if name not in names and name not in NOT_REPOSITORY_FILES:
                yield f"{rel}: {name}"


def test_every_named_file_exists():
    missing = sorted(set(_missing()))
    assert not missing, "files named but not in the repository:\n" + "\n".join(missing)


def test_the_check_finds_a_missing_file(tmp_path):
    assert _PATH.search("see tilinglib/data/nowhere.json for")
    assert _BARE.search("open preprocess.py next").group(1) == "preprocess.py"
    assert not (ROOT / "tilinglib/data/nowhere.json").exists()


@pytest.mark.parametrize("name", [n for n, why in NOT_REPOSITORY_FILES.items() if why])
def test_exempt_names_are_really_not_files_here(name):
    assert name not in _all_names()


def test_the_corpus_names_other_repositories_files():
    files = _corpus_files()
    assert {"reduction_kernel.cu", "warpAggregatedAtomicsCG.cu", "flash.cu"} <= files
    assert "sgemm_tiled.cu" not in files
