"""The project's own files agree: pyproject.toml and the conda files (environment.yml for
every laptop, environment-gpu.yml for a GPU machine) name the same packages, the README's test
command is what .ci/run runs, and the kernels ship as package data."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# In environment.yml only: the interpreter and pip itself.
CONDA_ONLY = {"python", "pip"}
# In environment-gpu.yml only: the CUDA compiler PyCUDA calls (a conda package with no pip
# counterpart).
CONDA_GPU_ONLY = {"cuda-nvcc"}
# On PyPI only (conda-forge has no `ziglang`): environment.yml's `pip: -e .` installs it with
# the course's package. It carries clang, the C++ front end (tilinglib/toolchain/frontend/clang.py).
PIP_ONLY = {"ziglang"}
# What conda-forge builds for Linux and Windows only: never in the file every laptop uses
# (on macOS, `conda env create -f environment.yml` would fail on it).
GPU_PACKAGES = {"pycuda", "cuda-nvcc"}


def _name(requirement: str) -> str:
    """'numpy>=1.24' -> 'numpy'; names compared in lower case with '_' as '-'."""
    return re.split(r"[<>=!~;\[ ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def pyproject_packages(*extras_named: str) -> set[str]:
    """The dependencies plus the named extras of pyproject.toml."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    requirements = list(project["dependencies"])
    for extra in extras_named:
        requirements += extras[extra]
    return {_name(r) for r in requirements}


def gpu_extra() -> set[str]:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {_name(r) for r in project["optional-dependencies"]["gpu"]}


def environment_packages(name: str = "environment.yml") -> tuple[set[str], list[str]]:
    """(conda packages, pip entries) of a conda file, read without a YAML library:
    the file keeps to '- name' items under 'dependencies:' and '- ...' under '- pip:'."""
    conda, pip, section = set(), [], None
    for line in (ROOT / name).read_text().splitlines():
        stripped = line.split("#", 1)[0].rstrip()
        if not stripped:
            continue
        if not line.startswith(" "):
            section = "deps" if stripped == "dependencies:" else None
            continue
        if section is None:
            continue
        item = stripped.strip()
        assert item.startswith("- "), f"unexpected line in environment.yml: {line!r}"
        item = item[2:].strip()
        if item == "pip:":
            section = "pip"
        elif section == "pip" and line.startswith("      "):
            pip.append(item)
        else:
            section = "deps"
            conda.add(_name(item))
    return conda, pip


def test_environment_and_pyproject_name_the_same_packages():
    conda, pip = environment_packages()
    assert conda - CONDA_ONLY == pyproject_packages("lab") - PIP_ONLY
    assert CONDA_ONLY <= conda
    assert pip == ["-e ."]


def test_the_gpu_environment_adds_the_gpu_extra():
    conda, pip = environment_packages("environment-gpu.yml")
    assert conda - CONDA_GPU_ONLY == gpu_extra()
    assert CONDA_GPU_ONLY <= conda
    assert pip == []
    # it is applied on top of environment.yml: nothing listed twice
    assert not conda & environment_packages()[0]
    # conda env update -n tiling -f environment-gpu.yml: the file names no environment
    assert not re.search(r"^name:", (ROOT / "environment-gpu.yml").read_text(), re.M)


def test_every_laptops_environment_has_no_gpu_package():
    conda, _ = environment_packages()
    assert not conda & GPU_PACKAGES
    assert environment_packages("environment-gpu.yml")[0] == GPU_PACKAGES


def test_pyproject_packages_are_the_documented_ones():
    assert pyproject_packages("lab") == {"numpy", "pycparser", "pcpp", "ziglang",
                                         "ipywidgets", "matplotlib", "jupyterlab",
                                         "ipykernel"}
    assert gpu_extra() == {"pycuda"}


def test_readme_says_which_environment_file_to_use():
    text = (ROOT / "README.md").read_text()
    assert "conda env create -f environment.yml" in text
    assert "conda env update -n tiling -f environment-gpu.yml" in text


def readme_test_command() -> str:
    text = (ROOT / "README.md").read_text()
    markers = [i for i, line in enumerate(text.splitlines()) if line.startswith("<!-- test-command")]
    assert len(markers) == 1, "README.md needs exactly one '<!-- test-command' line"
    after = text.splitlines()[markers[0] + 1:]
    assert after[0].startswith("```"), "the test command's fenced block must follow the marker"
    end = next(i for i, line in enumerate(after[1:], 1) if line.startswith("```"))
    return "\n".join(after[1:end])


def test_ci_runs_the_readme_test_command():
    result = subprocess.run(["bash", str(ROOT / ".ci" / "run"), "--print-command"],
                            capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL)
    assert result.stdout.strip() == readme_test_command()
    assert readme_test_command() == (
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" '
        '&& .venv/bin/python -m pytest')


def test_readme_start_command_opens_the_notebooks():
    text = (ROOT / "README.md").read_text()
    assert ('python3 -m venv .venv && .venv/bin/pip install -e ".[lab]" '
            '&& .venv/bin/jupyter lab notebooks/') in text


def test_kernels_ship_as_package_data():
    tomllib = pytest.importorskip("tomllib")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "kernels/*.cu" in data["package-data"]["tilinglib"]
    shipped = sorted(p.stem for p in (ROOT / "tilinglib" / "kernels").glob("*.cu"))
    assert {"saxpy", "sgemm_naive", "sgemm_tiled", "sgemm_tiled_db", "transpose"} <= set(shipped)
    from tilinglib import kernels
    assert kernels.names() == shipped
