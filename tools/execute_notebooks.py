"""Execute lesson notebooks on the CPU emulator and store them with their outputs.

    python tools/execute_notebooks.py                    # every notebooks/0*.ipynb
    python tools/execute_notebooks.py notebooks/03_tiled_kernel.ipynb
    python tools/execute_notebooks.py --check notebooks/assignments/*/*.ipynb

`--check` runs the notebooks on whatever backend the environment selects (the GPU where
there is one) and only reports; nothing is written back.

Committed notebooks carry the outputs of this run (TILINGLIB_BACKEND=emulator), so that a
reader sees them before running anything and nbval can compare the cells marked
"# NBVAL_CHECK_OUTPUT". Per-cell execution timestamps are dropped so that re-running an
unchanged notebook changes nothing but what really changed.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def execute(path: Path, write: bool = True) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.time()
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                raise SystemExit(f"{path}: a cell raised {out.get('ename')}: {out.get('evalue')}")
    if write:
        nbformat.write(nb, path)
    return time.time() - start


def main(argv: list[str]) -> int:
    check = "--check" in argv
    argv = [a for a in argv if a != "--check"]
    if not check:
        os.environ["TILINGLIB_BACKEND"] = "emulator"
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    paths = [Path(p) for p in argv] or sorted((ROOT / "notebooks").glob("0*.ipynb"))
    for path in paths:
        seconds = execute(path.resolve(), write=not check)
        print(f"{path}: {seconds:.1f} s{' (checked, not written)' if check else ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
