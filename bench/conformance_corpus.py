"""The conformance corpus of issue 11: real CUDA kernels, run unchanged, checked against NumPy.

bench/conformance_corpus.json names each kernel by repository, path, commit and line ranges
(other people's code is never committed here) and gives the launch we wrote for it. This
script

1. materialises each kernel's device code from the fetched mirrors
   (``git --git-dir=MIRRORS/<owner>+<name>/repo show COMMIT:PATH``, MIRRORS given by
   ``--mirrors DIR``: bare clones of the repositories at the listed commits; the given lines
   concatenated in order, then, for a template, an explicit instantiation of the launched
   arguments) into the ignored folder ``.corpus/``;
2. runs each on the emulator (``tilinglib.emulator.SourceModule``; ``no_extern_c=True`` and
   ``get_function("name<args>")`` for templates) and checks every output against the NumPy
   reference named in the entry (the references are the ``ref_*`` functions below);
3. prints the table and writes bench/results/conformance_emulator.json.

With ``--pycuda-script DIR`` it also writes DIR: the materialised sources, the resolved list,
a copy of this file (its references and argument builder: numpy only) and ``run_gpu.py``,
which runs the same launches through PyCUDA (``no_extern_c=True``, each kernel looked up by
the mangled name nvcc gave its ``.entry`` in the PTX) and writes ``$OUT/conformance_h200.json``.

    .venv/bin/python bench/conformance_corpus.py                  # the emulator table
    .venv/bin/python bench/conformance_corpus.py -k sgemm         # the ids containing "sgemm"
    .venv/bin/python bench/conformance_corpus.py --pycuda-script /work/main/.gpu/corpus

Results: "ok" (every output matches), "wrong" (it ran; an output differs), "refused" (a
compile-time CompileError / UnsupportedFeatureError or a failed kernel lookup), "runtime
error" (a KernelRuntimeError during the launch), "crash" (any other exception: a tilinglib
bug, since bad input must never give a Python traceback from inside tilinglib).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LIST = HERE / "conformance_corpus.json"
# A folder of bare clones, one per repository, named <owner>+<name>/repo (the layout the
# team's fetch tool makes); --mirrors or TILINGLIB_CORPUS_MIRRORS points elsewhere.
MIRRORS = Path(os.environ.get("TILINGLIB_CORPUS_MIRRORS", "/work/.mirror"))
CORPUS_DIR = ROOT / ".corpus"
RESULTS = HERE / "results" / "conformance_emulator.json"          # --device-code
RESULTS_AS_WRITTEN = HERE / "results" / "conformance_emulator_as_written.json"

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u32": np.uint32,
          "i64": np.int64, "u64": np.uint64, "u8": np.uint8, "i8": np.int8,
          "i16": np.int16, "u16": np.uint16}

# What a kernel's source uses, found by pattern in its materialised text (for the table).
CONSTRUCTS = [
    ("template", r"\btemplate\s*<"),
    ("class template", r"template\s*<[^>]*>\s*(struct|class)\b"),
    ("namespace", r"\bnamespace\b"),
    ("cooperative groups", r"cooperative_groups"),
    ("cg tiled_partition", r"tiled_partition\s*<"),
    ("cg::reduce", r"cg::reduce\b"),
    ("uint", r"\buint\b"),
    ("NULL", r"\bNULL\b"),
    ("nullptr", r"\bnullptr\b"),
    ("default argument", r"\w\s*\([^();{}]*\w\s*=\s*[^=;(){}][^();{}]*\)\s*\{"),
    ("constexpr", r"\bconstexpr\b"),
    ("const int at file scope", r"(?m)^const\s+int\b"),
    ("reinterpret_cast", r"\breinterpret_cast\b"),
    ("float4/int4", r"\b(float4|int4|int2)\b"),
    ("__launch_bounds__", r"__launch_bounds__"),
    ("extern __shared__", r"extern\s+__shared__"),
    ("warp shuffle", r"__shfl\w*"),
    ("legacy __shfl_down", r"__shfl_down\s*\("),
    ("atomics", r"\batomic\w+\s*\("),
    ("assert", r"\bassert\s*\("),
    ("INFINITY", r"\bINFINITY\b"),
    ("__ldcs/__stcs", r"__(ld|st)cs\b"),
    ("cuda::barrier", r"cuda::barrier"),
    ("__CUDA_ARCH__", r"__CUDA_ARCH__"),
    ("static_cast", r"\bstatic_cast\b"),
    ("brace value-initialisation", r"=\s*\w+\s*\{\s*\}"),
    ("M_PI", r"\bM_PI\b"),
    ("device memcpy", r"\bmemcpy\s*\("),
    ("__constant__", r"__constant__"),
]


def cdiv(a, b):
    return -(-a // b)


# ----------------------------------------------------------------------------- materialising

def mirror_git_dir(repo: str) -> Path:
    """The git directory of `repo`'s clone: MIRRORS/<owner>+<name>/repo, a bare clone, or
    its .git folder where the clone has a work tree."""
    top = MIRRORS / repo.replace("/", "+") / "repo"
    return top / ".git" if (top / ".git").is_dir() else top


def read_repo_file(repo: str, commit: str, path: str) -> str:
    git_dir = mirror_git_dir(repo)
    if not git_dir.is_dir():
        sys.exit(f"no mirror of {repo} at {git_dir}: fetch github:{repo} first")
    done = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
                          capture_output=True)
    if done.returncode:
        sys.exit(f"git show {commit}:{path} in {git_dir} failed: "
                 f"{done.stderr.decode(errors='replace').strip()}")
    # Some files carry comments in another encoding (GBK); nvcc ignores comment bytes, and
    # a student's open(path).read() would stop on them before tilinglib sees anything: such
    # bytes become U+FFFD here. A UTF-8 byte-order mark is kept (see materialise_as_written).
    return done.stdout.decode("utf-8", errors="replace")


def _split_top(text: str) -> list[str]:
    """`text` split at the commas that are not inside (), <>, [] or {}."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def _balanced(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """Index just past the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced {open_ch}{close_ch} from offset {start}")


_TYPE_WORDS = {"int", "unsigned", "signed", "char", "short", "long", "float", "double",
               "bool", "void", "size_t", "const", "volatile"}


def explicit_instantiation(source: str, kernel: str, tmpl: str, namespace: str = "") -> str:
    """``template __global__ void kernel<args>(types);`` for the `__global__` template
    `kernel` of `source`, with the template's parameter names replaced by `tmpl`'s arguments
    in the parameter types, the parameters' own names and default arguments dropped (C++
    allows no default there; a name may be a macro of the file). A kernel
    declared inside ``namespace N { ... }`` is named ``N::kernel`` (the line comes after
    the namespace's closing brace)."""
    m = None
    for m in re.finditer(r"__global__[^;{]*?\b" + re.escape(kernel) + r"\s*\(", source):
        pass
    if m is None:
        raise ValueError(f"no __global__ {kernel}( in the source")
    head = source[:m.start()]
    t = head.rfind("template")
    lt = source.index("<", t)
    tparams = _split_top(source[lt + 1:_balanced(source, lt, "<", ">") - 1])
    targs = _split_top(tmpl.strip()[1:-1])
    names = [re.findall(r"\w+", p.split("=")[0])[-1] for p in tparams]
    if len(names) != len(targs):
        raise ValueError(f"{kernel}: {len(names)} template parameters, {len(targs)} arguments")
    popen = m.end() - 1
    params = source[popen + 1:_balanced(source, popen, "(", ")") - 1]
    out = []
    for p in _split_top(params):
        p = p.split("=")[0].strip()
        for name, arg in zip(names, targs):
            p = re.sub(rf"\b{re.escape(name)}\b", arg, p)
        # the parameter's type alone: its name may be a macro of the file as written
        # ('const int M' after '#define M 1024' in the file's host code)
        words = re.match(r"^(.*?)([A-Za-z_]\w*)\s*$", p)
        if words and words.group(1).strip() and words.group(2) not in _TYPE_WORDS:
            p = words.group(1)
        out.append(" ".join(p.split()))
    qual = f"{namespace}::{kernel}" if namespace else kernel
    return f"template __global__ void {qual}{tmpl}({', '.join(out)});"


def materialise(entry: dict, commits: dict) -> tuple[str, list]:
    """(source text, line map): the entry's parts in order, plus its instantiation. The
    line map holds (path, first original line) per part, to name the original line of a
    message."""
    repo = entry["repo"]
    chunks, line_map = [], []
    for path, first, last in entry["parts"]:
        lines = read_repo_file(repo, commits[repo], path).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        last = len(lines) if last == -1 else last
        line_map.append((path, first, sum(len(c) for c in chunks) + 1, last - first + 1))
        chunks.append(lines[first - 1:last])
    text = "\n".join("\n".join(c) for c in chunks) + "\n"
    if entry.get("tmpl") and not entry.get("instantiated_by_source"):
        # (a file that instantiates its templates itself gets no second, duplicate line)
        text += explicit_instantiation(text, entry["kernel"], entry["tmpl"],
                                       entry.get("namespace", "")) + "\n"
    return text, line_map


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]')


def _resolve_include(listing: dict, repo: str, commit: str, including: str, quoted: bool,
                     name: str, files: set) -> str | None:
    """The repository path an ``#include`` of `name` in file `including` reads, as the
    repository's own build finds it (nvcc -I): for ``"name"`` the including file's folder
    first, then the repository's include folders (listing["include_dirs"][repo], where
    ``{dir}`` is the including file's folder); for ``<name>`` those folders only. None
    when the repository has no such file (a toolkit, system or other library header)."""
    folder = str(Path(including).parent)
    candidates = [str(Path(folder) / name)] if quoted else []
    for d in listing.get("include_dirs", {}).get(repo, []):
        candidates.append(str(Path(d.replace("{dir}", folder)) / name))
    for c in candidates:
        norm = os.path.normpath(c)
        if norm in files:
            return norm
    return None


def repo_files(repo: str, commit: str) -> set:
    """The paths of every file of `repo` at `commit` (git ls-tree)."""
    done = subprocess.run(["git", f"--git-dir={mirror_git_dir(repo)}", "ls-tree", "-r",
                           "--name-only", commit], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"git ls-tree {commit} in {mirror_git_dir(repo)} failed: "
                 f"{done.stderr.strip()}")
    return set(done.stdout.splitlines())


def materialise_as_written(entry: dict, listing: dict) -> tuple[str, list, list]:
    """(source text, line map, inlined files): the files the entry's parts come from, each
    whole, in the order the parts name them, with every ``#include`` of a file of the same
    repository replaced by that file (at most once per source, as its include guard or
    ``#pragma once`` would have it), the way nvcc reads them with the repository's include
    folders; every other line (``#include <cuda_runtime.h>``, ``<iostream>``, host code,
    ``main``) stays as written. A template kernel that the files do not instantiate
    explicitly gets our instantiation line at the end, as in `materialise`. The line map
    has (path, first original line, first line here, count) per run of lines."""
    repo = entry["repo"]
    commit = listing["repositories"][repo]
    files = repo_files(repo, commit)
    lines: list = []
    line_map: list = []
    done: set = set()
    inlined: list = []

    def add(path: str, depth: int = 0) -> None:
        done.add(path)
        text = read_repo_file(repo, commit, path)
        if depth:       # the preprocessor skips a byte-order mark at the start of each file
            text = text.removeprefix("\ufeff")
        text = text.split("\n")
        if text and text[-1] == "":
            text.pop()
        start = 0
        for i, raw in enumerate(text):
            m = _INCLUDE.match(raw)
            if not m:
                continue
            found = _resolve_include(listing, repo, commit, path, m.group(1) == '"',
                                     m.group(2).strip(), files)
            if found is None:
                continue
            if i > start:
                line_map.append((path, start + 1, len(lines) + 1, i - start))
                lines.extend(text[start:i])
            # the #include line itself becomes a blank line (the file comes after it)
            line_map.append((path, i + 1, len(lines) + 1, 1))
            lines.append("")
            if found not in done and depth < 20:
                inlined.append(found)
                add(found, depth + 1)
            start = i + 1
        if start < len(text):
            line_map.append((path, start + 1, len(lines) + 1, len(text) - start))
            lines.extend(text[start:])

    for path, _, _ in entry["parts"]:
        if path not in done:
            add(path)
    text = "\n".join(lines) + "\n"
    if entry.get("tmpl") and not entry.get("instantiated_by_source"):
        text += explicit_instantiation(text, entry["kernel"], entry["tmpl"],
                                       entry.get("namespace", "")) + "\n"
    return text, line_map, inlined


def original_line(line_map: list, line: int | None) -> str | None:
    """'path:line' in the repository for line `line` of the materialised source."""
    if line is None:
        return None
    for path, first, at, count in line_map:
        if at <= line < at + count:
            return f"{path}:{first + line - at}"
    return "(the instantiation line we add)"


def constructs_of(text: str) -> list[str]:
    """The CONSTRUCTS names whose pattern occurs in `text` outside comments."""
    code = re.sub(r"/\*.*?\*/", " ", re.sub(r"//[^\n]*", " ", text), flags=re.S)
    return [name for name, pattern in CONSTRUCTS if re.search(pattern, code)]


# ----------------------------------------------------------------------------- launches

def _eval(expr, scope: dict):
    if isinstance(expr, (int, float)):
        return expr
    return eval(str(expr), {"__builtins__": {}, "cdiv": cdiv}, dict(scope))  # our own list


_ARRAY = re.compile(r"^(in|out|inout)\s+(\w+)\[(.*)\]\s+(\w+)$")
_SCALAR = re.compile(r"^(\w+)\s+(?:(\w+)=)?(.+)$")


def _draw(rng, spec: str | None, shape, dtype):
    if spec == "zeros":
        return np.zeros(shape, dtype)
    if spec is None:
        if np.dtype(dtype).kind == "f":
            return rng.standard_normal(shape).astype(dtype)
        if dtype == np.uint8:
            return rng.integers(0, 256, shape).astype(dtype)
        return rng.integers(-50, 50, shape).astype(dtype)
    m = re.fullmatch(r"full\((.+)\)", spec.replace(" ", ""))
    if m:
        return np.full(shape, float(m.group(1)), dtype)
    m = re.fullmatch(r"arange\((.+)\)", spec.replace(" ", ""))
    if m:       # 0, step, 2*step, ...: a CSR row pointer with `step` entries per row
        return (np.arange(int(np.prod(shape))) * int(m.group(1))).reshape(shape).astype(dtype)
    m = re.fullmatch(r"(randint|uniform)\((.+),(.+)\)", spec.replace(" ", ""))
    if not m:
        raise ValueError(f"unknown init {spec!r}")
    lo, hi = float(m.group(2)), float(m.group(3))
    if m.group(1) == "randint":
        return rng.integers(int(lo), int(hi), shape).astype(dtype)
    return rng.uniform(lo, hi, shape).astype(dtype)


def build_launch(entry: dict, seed: int = 1234) -> dict:
    """The launch of `entry`: ``args`` as (kind, name, value) triples (kind "scalar",
    "in", "out" or "inout"), ``block``, ``grid``, ``shared`` and ``scope`` (sizes, named
    scalars and a copy of every array as it was before the launch)."""
    rng = np.random.default_rng(seed)
    scope = dict(entry.get("sizes", {}))
    inits = entry.get("init", {})
    args = []
    for text in entry["args"]:
        m = _ARRAY.match(text)
        if m:
            kind, dt, dims, name = m.groups()
            shape = tuple(int(_eval(d, scope)) for d in _split_top(dims))
            dtype = DTYPES[dt]
            value = (np.zeros(shape, dtype) if kind == "out"
                     else _draw(rng, inits.get(name), shape, dtype))
            scope[name] = value.copy()
            args.append((kind, name, value))
            continue
        m = _SCALAR.match(text)
        if not m or m.group(1) not in DTYPES:
            raise ValueError(f"{entry['id']}: cannot read argument {text!r}")
        dt, name, expr = m.groups()
        value = DTYPES[dt](_eval(expr, scope))
        if name:
            scope[name] = value
        args.append(("scalar", name, value))
    block = tuple(int(_eval(b, scope)) for b in entry["block"])
    block += (1,) * (3 - len(block))
    grid = tuple(int(_eval(g, scope)) for g in entry["grid"])
    grid += (1,) * (2 - len(grid))
    shared = int(_eval(entry.get("shared", 0), scope))
    return {"args": args, "block": block, "grid": grid, "shared": shared, "scope": scope}


# ----------------------------------------------------------------------------- references
# Each takes the launch's scope (sizes, named scalars, arrays before the launch) and the
# entry's ref_args, and returns {argument name: expected array, or a check(got) callable}
# plus the tolerance (rtol, atol) for float outputs.

F = np.float64


def _chunk_sums(x, chunk: int, nblocks: int):
    """Sums of the `chunk`-element pieces of x, piece c added into block c % nblocks (a
    block-stride loop's partial sums; with one piece per block, plain block sums)."""
    pieces = cdiv(x.size, chunk)
    padded = np.zeros(pieces * chunk, F if x.dtype.kind == "f" else np.int64)
    padded[:x.size] = x.reshape(-1)
    sums = padded.reshape(pieces, chunk).sum(axis=1)
    out = np.zeros(nblocks, sums.dtype)
    np.add.at(out, np.arange(pieces) % nblocks, sums)
    return out


def ref_sgemm(s, a):
    want = s["alpha"] * (s["A"].astype(F) @ s["B"].astype(F)) + s["beta"] * s["C"].astype(F)
    return {"C": want}, (1e-4, 1e-4)


def ref_matmul(s, a):
    return {"C": s["A"].astype(F) @ s["B"].astype(F)}, (1e-4, 1e-4)


def ref_block_sums(s, a):
    x, out = s[a["x"]], s[a["out"]]
    chunk = int(_eval(a["chunk"], s))
    return {a["out"]: _chunk_sums(x, chunk, out.size)}, (1e-4, 1e-3)


def ref_copy(s, a):
    return {a["out"]: s[a["x"]].copy()}, (0, 0)


def ref_transpose(s, a):
    return {a["out"]: s[a["x"]].T.copy()}, (0, 0)


def ref_add(s, a):
    return {a["out"]: s[a["a"]] + s[a["b"]]}, (0, 0)


def ref_block_scan(s, a):
    chunk = int(_eval(a["chunk"], s))
    x = s[a["x"]].astype(np.int64).reshape(-1, chunk)
    scan = np.cumsum(x, axis=1)
    return {a["x"]: scan.reshape(-1), a["sums"]: scan[:, -1]}, (0, 0)


def ref_uniform_add(s, a):
    bs = s["bs"]
    return {"data": s["data"] + np.repeat(s["partial_sums"], bs)}, (0, 0)


def ref_scale_by_threads(s, a):
    return {"g_odata": s["g_idata"] * np.float32(s["n"])}, (0, 0)


def ref_filter_positive(s, a):
    src = s["src"]
    positive = np.sort(src[src > 0])

    def check_dst(got):
        count = positive.size
        np.testing.assert_array_equal(np.sort(got[:count]), positive,
                                      err_msg="dst[:count] is not the positive elements")
        assert not got[count:].any(), "dst written past the count of positive elements"

    return {"nres": np.array([positive.size]), "dst": check_dst}, (0, 0)


def ref_plus_one_offset(s, a):
    want = s["a"].copy()
    want[s["s"]:s["s"] + s["n"]] += 1
    return {"a": want}, (0, 0)


def ref_plus_one_stride(s, a):
    want = s["a"].copy()
    want[::s["s"]][:s["n"]] += 1
    return {"a": want}, (0, 0)


def ref_reverse(s, a):
    return {"d": s["d"][::-1].copy()}, (0, 0)


def ref_total(s, a):
    x, out = s[a["x"]], s[a["out"]]
    kind = F if x.dtype.kind == "f" else np.int64
    return {a["out"]: out.astype(kind) + x.astype(kind).sum()}, (1e-4, 1e-3)


def ref_grayscale(s, a):
    img = s["input"].astype(np.float32)
    gray = (np.float32(0.21) * img[..., 0] + np.float32(0.71) * img[..., 1]
            + np.float32(0.07) * img[..., 2])
    # (unsigned char) truncates; a contracted FMA on a GPU may land one ulp either side of
    # an integer, hence atol 1.
    return {"output": np.floor(gray)}, (0, 1)


def ref_mean_filter(s, a):
    x = s["input"].astype(np.int64)
    r, (C, H, W) = s["r"], x.shape
    total = np.zeros_like(x)
    count = np.zeros((H, W), np.int64)
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            ys, xs = slice(max(0, -dy), min(H, H - dy)), slice(max(0, -dx), min(W, W - dx))
            yt, xt = slice(max(0, dy), min(H, H + dy)), slice(max(0, dx), min(W, W + dx))
            total[:, ys, xs] += x[:, yt, xt]
            count[ys, xs] += 1
    return {"output": total // count}, (0, 0)


def ref_gather_2i(s, a):
    n = s["n"]
    return {"out": s["in"][(2 * np.arange(n)) % n]}, (0, 0)


def ref_window_sum_in_block(s, a):
    x, n, half, block = s["input"].astype(F), s["n"], s["w"] // 2, a["block"]
    out = np.zeros(n)
    for idx in range(n):
        t = idx % block
        for i in range(-half, half + 1):
            if 0 <= t + i < block and 0 <= idx + i < n:
                out[idx] += x[idx + i]
    return {"output": out}, (1e-5, 1e-5)


def _softmax(x):
    e = np.exp(x.astype(F) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ref_softmax(s, a):
    return {"out": _softmax(s["inp"])}, (1e-4, 1e-6)


def _layernorm(x, w, b):
    x = x.astype(F)
    m = x.mean(axis=1)
    rstd = 1 / np.sqrt(((x - m[:, None]) ** 2).mean(axis=1) + 1e-5)
    return (x - m[:, None]) * rstd[:, None] * w + b, m, rstd


def ref_layernorm(s, a):
    out, m, rstd = _layernorm(s["inp"], s["weight"], s["bias"])
    return {"out": out, "mean": m, "rstd": rstd}, (1e-4, 1e-4)


def ref_row_mean(s, a):
    return {"mean": s["inp"].astype(F).mean(axis=1)}, (1e-4, 1e-5)


def ref_row_rstd(s, a):
    d = s["inp"].astype(F) - s["mean"][:, None]
    return {"rstd": 1 / np.sqrt((d * d).mean(axis=1) + 1e-5)}, (1e-4, 1e-5)


def ref_normalize(s, a):
    x = s["inp"].astype(F)
    return {"out": (x - s["mean"][:, None]) * s["rstd"][:, None] * s["weight"] + s["bias"]}, \
        (1e-5, 1e-5)


def ref_dot_partials(s, a):
    prod = s["a"].astype(F) * s["b"].astype(F)
    return {"c": _chunk_sums(prod, 256, s["blocks"])}, (1e-4, 1e-3)


def ref_histogram(s, a):
    return {"histo": s["histo"] + np.bincount(s["buffer"], minlength=256)}, (0, 0)


def ref_inclusive_scan(s, a):
    return {"output": np.cumsum(s["input"].astype(np.int64))}, (0, 0)


def ref_histogram_mod16(s, a):
    return {"bins": s["bins"] + np.bincount(s["input"] % 16, minlength=16)}, (0, 0)


def ref_block_max(s, a):
    x, bs = s["input"], s["bs"]
    padded = np.full(cdiv(x.size, bs) * bs, -np.finfo(np.float32).max, np.float32)
    padded[:x.size] = x
    return {"partials": padded.reshape(-1, bs).max(axis=1)}, (0, 0)


def ref_bitonic_step(s, a):
    """One compare-exchange step (j, k) of a bitonic sort: element i and i ^ j swap when
    out of the order that bit k of i asks for."""
    d, j, k = s["data"].copy(), s["j"], s["k"]
    out = d.copy()
    for i in range(d.size):
        p = i ^ j
        if p > i:
            up = (i & k) == 0
            if (up and d[i] > d[p]) or (not up and d[i] < d[p]):
                out[i], out[p] = d[p], d[i]
    return {"data": out}, (0, 0)


# --- references of the held-out sample (entries marked "heldout": true)

def ref_row_sums(s, a):
    return {a["out"]: s[a["x"]].astype(F).sum(axis=1)}, (1e-5, 1e-4)


def ref_column_sums(s, a):
    return {a["out"]: s[a["x"]].astype(F).sum(axis=0)}, (1e-5, 1e-4)


def ref_grid_stride_max(s, a):
    """Per block, the max of the elements its threads visit in a grid-stride loop (element
    i to block (i % (blocks*bs)) // bs), each thread starting from 0.0f."""
    x, out = s[a["x"]], s[a["out"]]
    bs, nblocks = int(_eval(a["bs"], s)), out.size
    blk = (np.arange(x.size) % (nblocks * bs)) // bs
    want = np.zeros(nblocks, np.float32)
    np.maximum.at(want, blk, x)
    return {a["out"]: want}, (0, 0)


def ref_increment(s, a):
    return {a["x"]: s[a["x"]] + 1}, (0, 0)


def ref_double_in_place(s, a):
    return {a["x"]: 2 * s[a["x"]]}, (0, 0)


def ref_alternating_harmonic(s, a):
    """sum of (-1)^(n+1)/n for n = 1 .. length-1 (the kernel zeroes n = 0), added to sum."""
    n = np.arange(1, int(s["length"]), dtype=F)
    return {"sum": s["sum"].astype(F) + np.sum(np.where(n % 2 == 1, 1.0, -1.0) / n)}, \
        (1e-5, 1e-6)


def ref_attention(s, a):
    """softmax(Q K^T * scale) V per batch and head, and the running max m and sum l of
    the flash-attention recurrence: m = row max of the scaled scores, l = sum exp(S - m)."""
    q, k, v = (s[n].astype(F) for n in ("Q", "K", "V"))
    scores = np.einsum("bhnd,bhmd->bhnm", q, k) * F(s["softmax_scale"])
    m = scores.max(axis=-1)
    p = np.exp(scores - m[..., None])
    l = p.sum(axis=-1)
    return {"O": np.einsum("bhnm,bhmd->bhnd", p / l[..., None], v), "m": m, "l": l}, \
        (1e-4, 1e-5)


def ref_ell_spmv(s, a):
    """y += A v with A in ELL layout (column-major slots), the dot kept in a float as the
    kernel declares it: each double product is added to the float and rounded back."""
    rows, cols = s["num_rows"], s["num_cols"]
    data = s["m_data"].reshape(cols, rows)
    idx = s["m_col_index"].reshape(cols, rows)
    dot = np.zeros(rows, np.float32)
    for c in range(cols):
        dot = (dot.astype(F) + data[c] * s["v"][idx[c]]).astype(np.float32)
    return {"y": s["y"] + dot.astype(F)}, (1e-6, 1e-6)


def ref_csr_spmv(s, a):
    rows, ptr = s["num_rows"], s["m_row_ptr"]
    dot = np.zeros(rows, np.float32)
    for r in range(rows):
        for e in range(ptr[r], ptr[r + 1]):
            dot[r] = np.float32(F(dot[r]) + s["m_data"][e] * s["v"][s["m_col_index"][e]])
    return {"y": s["y"] + dot.astype(F)}, (1e-6, 1e-6)


def ref_conv1d_same(s, a):
    """res[i] = sum_f data[i - f + r] * filter[f] over the data that exists (a flipped
    filter, zero ghost cells): full convolution, centred."""
    data, filt, r = s[a["x"]].astype(F), s[a["filter"]].astype(F), int(s[a["radius"]])
    return {a["out"]: np.convolve(data, filt)[r:r + data.size]}, (1e-5, 1e-5)


def ref_sum_3point(s, a):
    x = s["ip"]
    want = x.copy()
    want[1:-1] = (x[:-2] + x[1:-1]) + x[2:]
    return {"op": want}, (1e-6, 1e-6)


def ref_forward_diff(s, a):
    x = s["ip"]
    return {"op": x[1:] - x[:-1]}, (0, 0)


def ref_binary_histogram(s, a):
    """hist[0] += count of zeros, hist[1] += count of the rest (satidev's two-bin
    histogram of booleans)."""
    d = s["data"]
    return {"hist": s["hist"] + np.array([(d == 0).sum(), (d != 0).sum()])}, (0, 0)


def ref_binary_histogram_copies(s, a):
    """One two-bin histogram per block (copy b at hist[2b:2b+2]); copy 0 then holds the
    whole grid's counts, the others their own block's."""
    d, bs = s["data"], int(_eval(a["bs"], s))
    blocks = cdiv(d.size, bs)
    want = s["hist"].astype(np.int64).copy().reshape(-1, 2)
    for b in range(blocks):
        part = d[b * bs:(b + 1) * bs]
        want[b] += [(part == 0).sum(), (part != 0).sum()]
    want[0] = s["hist"].reshape(-1, 2)[0] + [(d == 0).sum(), (d != 0).sum()]
    return {"hist": want.reshape(-1)}, (0, 0)


def ref_first_sum(s, a):
    """out[0] = the sum of x (a one-block tree reduction that writes *sum)."""
    return {a["out"]: np.array([s[a["x"]].astype(F).sum()])}, (1e-5, 1e-4)


def ref_coarse_pair_sums(s, a):
    """What satidev's sumParallelSimpleMinDivSharedMultBlockCoarse computes: block b adds
    data[2*cf*b*bs + j] for j < cf*bs (cf = 2) into *sum, so with its block stride of
    2*cf*bs it skips every other cf*bs elements: the repository's own bug, which the
    emulator and a GPU both reproduce (the plain sum would be the wrong reference)."""
    d, bs, g, cf = s[a["x"]].astype(F), int(_eval(a["bs"], s)), int(_eval(a["g"], s)), 2
    taken = sum(d[2 * cf * b * bs:2 * cf * b * bs + cf * bs].sum() for b in range(g))
    return {a["out"]: s[a["out"]].astype(F) + taken}, (1e-5, 1e-4)


def ref_softmax_rows(s, a):
    x = s[a["x"]]
    return {a["out"]: _softmax(x.reshape(-1, x.shape[-1])).reshape(x.shape)}, (1e-4, 1e-6)


def ref_layernorm_rows(s, a):
    """Layer norm over the last axis, eps 1e-5, of x reshaped to rows."""
    x = s[a["x"]]
    out, _, _ = _layernorm(x.reshape(-1, x.shape[-1]), s[a["w"]], s[a["b"]])
    return {a["out"]: out.reshape(x.shape)}, (1e-4, 1e-4)


def ref_gelu(s, a):
    x = s[a["x"]].astype(F)
    return {a["out"]: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))}, \
        (1e-5, 1e-6)


def ref_relu(s, a):
    return {a["out"]: np.maximum(s[a["x"]], 0)}, (0, 0)


def ref_elu(s, a):
    x = s[a["x"]].astype(F)
    return {a["out"]: np.where(x > 0, x, np.expm1(x))}, (1e-5, 1e-6)


def ref_gemm_plus_c(s, a):
    """D = A B + C."""
    return {"D": s["A"].astype(F) @ s["B"].astype(F) + s["C"]}, (1e-4, 1e-4)


def ref_softmax_cols(s, a):
    x = s[a["x"]]
    return {a["out"]: _softmax(x.T).T}, (1e-4, 1e-6)


def ref_running_max(s, a):
    return {a["out"]: np.maximum(s[a["out"]], s[a["x"]].max())}, (0, 0)


def ref_negative_flt_max(s, a):
    return {"d_value": np.array([-np.finfo(np.float32).max])}, (0, 0)


def ref_exp_sum(s, a):
    """sum += sum(exp(input - max_val)) (max_val a 1-element input)."""
    x, m = s["input"].astype(F), F(s["max_val"][0])
    return {"sum": s["sum"] + np.exp(x - m).sum()}, (1e-5, 1e-5)


def ref_exp_over_sum(s, a):
    x, m, t = s["input"].astype(F), F(s["max_val"][0]), F(s["sum"][0])
    return {"output": np.exp(x - m) / t}, (1e-5, 1e-8)


def ref_gemv(s, a):
    return {"y": s["A"].astype(F) @ s["x"].astype(F)}, (1e-4, 1e-4)


def ref_sigmoid(s, a):
    return {a["out"]: 1 / (1 + np.exp(-s[a["x"]].astype(F)))}, (1e-6, 1e-7)


def ref_attention_out(s, a):
    """out = softmax(Q K^T / sqrt(D)) V per batch and head."""
    q, k, v = (s[n].astype(F) for n in ("Q", "K", "V"))
    scores = np.einsum("bhnd,bhmd->bhnm", q, k) / np.sqrt(q.shape[-1])
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return {"out": np.einsum("bhnm,bhmd->bhnd", p / p.sum(axis=-1, keepdims=True), v)}, \
        (1e-4, 1e-5)


def ref_matmul_named(s, a):
    return {a["out"]: s[a["a"]].astype(F) @ s[a["b"]].astype(F)}, (1e-4, 1e-4)


# --- references of the held-out batch of 2026-12-02 (entries with "batch": "2026-12-02")

def ref_sgemm_col_major(s, a):
    """C = alpha A B + beta C with every matrix column-major (element (i, j) at i + j N, as
    cuBLAS stores it): in NumPy's row-major view of the same bytes that is B A."""
    want = s["alpha"] * (s["B"].astype(F) @ s["A"].astype(F)) + s["beta"] * s["C"].astype(F)
    return {"C": want}, (1e-4, 1e-4)


def ref_sgemv_col_major(s, a):
    """y = alpha A x + beta y, A an m x n column-major matrix (held as [n, m] row-major)."""
    want = s["alpha"] * (s["A"].astype(F).T @ s["x"].astype(F)) + s["beta"] * s["y"].astype(F)
    return {"y": want}, (1e-4, 1e-4)


def ref_laplace3d(s, a):
    """One Jacobi step of the 3-D Laplace equation: an interior point becomes the mean of its
    six neighbours; a point on a face is copied from the input (faces "copy") or left as the
    output held before (faces "keep")."""
    u = s[a["x"]].astype(F)
    out = (u.copy() if a["faces"] == "copy" else s[a["out"]].astype(F).copy())
    out[1:-1, 1:-1, 1:-1] = (u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:] + u[1:-1, :-2, 1:-1]
                             + u[1:-1, 2:, 1:-1] + u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1]) / 6
    return {a["out"]: out}, (1e-5, 1e-6)


def ref_csr_spmv_named(s, a):
    """y = A x, A in CSR (row_offset, col_index, A_vals)."""
    ptr, col, val, x = s["row_offset"], s["col_index"], s["A_vals"].astype(F), s["x"].astype(F)
    y = np.array([(val[ptr[r]:ptr[r + 1]] * x[col[ptr[r]:ptr[r + 1]]]).sum()
                  for r in range(ptr.size - 1)])
    return {"y": y}, (1e-5, 1e-5)


def ref_histogram_bins(s, a):
    """bins += the count of each value of x below the number of bins (others are dropped)."""
    x, out = s[a["x"]], s[a["out"]]
    x = x[x < out.size]
    return {a["out"]: out + np.bincount(x, minlength=out.size)}, (0, 0)


def ref_saturate_u8(s, a):
    return {a["out"]: np.minimum(s[a["x"]], 255)}, (0, 0)


def ref_chunk_exclusive_scan(s, a):
    """out = the exclusive prefix sum of `in` within each `chunk`-element piece, and
    sums[b] = piece b's total for every piece but the last (whose total the kernel takes
    from a partial tree when the input ends inside it)."""
    x, chunk = s["in"].astype(F), int(a["chunk"])
    pieces = cdiv(x.size, chunk)
    padded = np.zeros(pieces * chunk)
    padded[:x.size] = x
    incl = np.cumsum(padded.reshape(pieces, chunk), axis=1)
    excl = (incl - padded.reshape(pieces, chunk)).reshape(-1)[:x.size]
    totals = incl[:, -1]

    def check_sums(got):
        np.testing.assert_allclose(got[:-1].astype(F), totals[:-1], rtol=1e-6,
                                   err_msg="sums[b] is not piece b's total")

    return {"out": excl, "sums": check_sums}, (1e-6, 1e-6)


def ref_add_per_block(s, a):
    """out[i] = in[i] + incr[i // chunk]."""
    x, chunk = s["in"].astype(F), int(a["chunk"])
    return {"out": x + np.repeat(s["incr"].astype(F), chunk)[:x.size]}, (1e-6, 1e-6)


def ref_correlate_valid(s, a):
    """out[i] = sum_j x[i + j] filter[j] (no flip, no padding: n - f + 1 outputs)."""
    return {a["out"]: np.correlate(s[a["x"]].astype(F), s[a["filter"]].astype(F), "valid")}, \
        (1e-5, 1e-5)


def ref_gelu_as_written(s, a):
    """Nithish-Yadav-31's GeLU with its own constants: 0.5 x (1 + tanh(sqrt(2 / 3.14f)
    (x + 0.44715 x^3)))."""
    x = s["input"].astype(F)
    c = np.sqrt(2 / F(np.float32(3.14)))
    return {"output": 0.5 * x * (1 + np.tanh(c * (x + F(np.float32(0.44715)) * x ** 3)))}, \
        (1e-5, 1e-6)


def ref_softmax_tree_as_written(s, a):
    """What Nithish-Yadav-31's Softmax computes: per block of bs threads, e = exp(x) (0 past
    n), the in-place tree sum for stride bs/2, bs/4, ..., 1 (e[t] += e[t + stride] for
    t < stride), then output[i] = e[t] / e[0]: thread t's partial sum over its block's total."""
    x, bs = s["input"].astype(F), int(a["bs"])
    blocks = cdiv(x.size, bs)
    e = np.zeros(blocks * bs)
    e[:x.size] = np.exp(x)
    e = e.reshape(blocks, bs)
    stride = bs // 2
    while stride > 0:
        e[:, :stride] += e[:, stride:2 * stride]
        stride //= 2
    return {"output": (e / e[:, :1]).reshape(-1)[:x.size]}, (1e-5, 1e-7)


def ref_batchnorm(s, a):
    """output = gamma (x - mean) / sqrt(variance + eps) + beta, per feature (columns)."""
    x = s["input"].astype(F)
    want = s["gamma"] * (x - s["mean"]) / np.sqrt(s["variance"].astype(F) + F(s["eps"])) + s["beta"]
    return {"output": want}, (1e-5, 1e-6)


def ref_layernorm_scalar_affine(s, a):
    """Per row: mean, (biased) variance, output = gamma (x - mean) / sqrt(variance + eps) +
    beta, gamma and beta scalars."""
    x = s["input"].astype(F)
    m = x.mean(axis=1)
    v = ((x - m[:, None]) ** 2).mean(axis=1)
    out = s["gamma"] * (x - m[:, None]) / np.sqrt(v[:, None] + F(s["eps"])) + s["beta"]
    return {"output": out, "mean": m, "variance": v}, (1e-4, 1e-5)


def ref_values(s, a):
    """The output the entry gives by hand (`values`, read off the kernel: junstar92's
    bank-conflict kernels write smem[idx] = idx for their own idx of each thread)."""
    return {a["out"]: np.array(a["values"], dtype=F)}, (0, 0)


def ref_xavier_lcg(s, a):
    """Nithish-Yadav-31's Xavier init: thread (row, col) draws one LCG step from seed + tid
    (uint32 arithmetic), scales it to [-1, 1] by UINT_MAX and by sqrtf(6 / (rows + cols)),
    in float32 as the kernel does."""
    rows, cols, seed = int(s["rows"]), int(s["cols"]), int(s["seed"])
    tid = np.arange(rows * cols, dtype=np.uint64)
    lcg = ((np.uint64(1664525) * ((seed + tid) % 2**32) + np.uint64(1013904223)) % 2**32)
    r = lcg.astype(np.float32) / np.float32(2**32 - 1) * np.float32(2) - np.float32(1)
    bound = np.sqrt(np.float32(6) / np.float32(rows + cols), dtype=np.float32)
    return {"weights": (r * bound).reshape(rows, cols)}, (1e-6, 1e-7)


REFERENCES = {name[4:]: f for name, f in globals().items() if name.startswith("ref_")}


def expected_of(entry: dict, launch: dict):
    return REFERENCES[entry["ref"]](launch["scope"], entry.get("ref_args", {}))


def compare(entry: dict, launch: dict, outputs: dict) -> str | None:
    """None if every output matches the reference, else what differs."""
    expected, (rtol, atol) = expected_of(entry, launch)
    for name, want in expected.items():
        got = outputs[name]
        try:
            if callable(want):
                want(got)
            else:
                np.testing.assert_allclose(got.astype(F).reshape(np.shape(want)), want,
                                           rtol=rtol, atol=atol)
        except AssertionError as exc:
            lines = [ln for ln in str(exc).splitlines() if ln.strip()]
            detail = next((ln.strip() for ln in lines if "Mismatched" in ln), lines[0]
                          if lines else "")
            return f"{name}: {detail}"
    return None


# ----------------------------------------------------------------------------- the emulator

# The LaunchReport counters recorded per kernel (Nsight Compute's names), for a later
# comparison with ncu on the H200.
COUNTERS = ("global_load_requests", "global_load_sectors", "global_store_requests",
            "global_store_sectors", "shared_load_instructions", "shared_load_wavefronts",
            "shared_store_instructions", "shared_store_wavefronts", "shared_bank_conflicts",
            "global_atomic_requests", "shared_atomic_instructions", "flops")


def lookup_name(entry: dict) -> str:
    return entry["kernel"] + (entry.get("tmpl") or "")


def run_on_emulator(entry: dict, source: str, line_map: list) -> dict:
    """Compile `source` on the emulator, launch the entry's kernel and compare its outputs.
    Every source is compiled as run_gpu.py compiles it on the GPU, with ``no_extern_c=True``
    (PyCUDA's C++ mode: C++ headers such as <cooperative_groups.h>, and templates, need it
    there, and the emulator now refuses a C++ header inside the default wrapping as nvcc
    does)."""
    from tilinglib import emulator
    from tilinglib.errors import (CompileError, KernelNotFoundError, KernelRuntimeError,
                                  TilingLibError)

    result = {"id": entry["id"]}
    t0 = time.perf_counter()
    try:
        mod = emulator.SourceModule(source, options=entry.get("options"), no_extern_c=True)
    except CompileError as exc:
        first = str(exc).splitlines()[0]
        return result | {"result": "refused", "by": type(exc).__name__, "message": first,
                         "at": original_line(line_map, exc.line)}
    except Exception as exc:                      # noqa: BLE001 (recorded: a bug to report)
        return result | {"result": "crash", "by": type(exc).__name__,
                         "message": str(exc).splitlines()[0] if str(exc) else ""}
    try:
        f = mod.get_function(lookup_name(entry))
    except KernelNotFoundError as exc:
        return result | {"result": "refused", "by": "KernelNotFoundError",
                         "message": str(exc).splitlines()[0]}
    except CompileError as exc:     # this kernel uses what the emulator lacks; others run
        return result | {"result": "refused", "by": type(exc).__name__,
                         "message": str(exc).splitlines()[0],
                         "at": original_line(line_map, exc.line)}
    launch = build_launch(entry)
    wrap = {"in": emulator.In, "out": emulator.Out, "inout": emulator.InOut}
    call_args = [v if k == "scalar" else wrap[k](v) for k, _, v in launch["args"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            f(*call_args, block=launch["block"], grid=launch["grid"], shared=launch["shared"],
              hazards="warn")
        except KernelRuntimeError as exc:
            return result | {"result": "runtime error", "by": type(exc).__name__,
                             "message": str(exc).splitlines()[0],
                             "at": original_line(line_map, getattr(exc, "line", None))}
        except TilingLibError as exc:
            return result | {"result": "refused", "by": type(exc).__name__,
                             "message": str(exc).splitlines()[0]}
        except Exception as exc:                  # noqa: BLE001
            return result | {"result": "crash", "by": type(exc).__name__,
                             "message": str(exc).splitlines()[0] if str(exc) else ""}
    outputs = {name: v for k, name, v in launch["args"] if k != "scalar"}
    diff = compare(entry, launch, outputs)
    report = f.last_report
    result |= {"result": "ok" if diff is None else "wrong", "seconds": round(
        time.perf_counter() - t0, 2), "warnings": sorted({type(w.message).__name__
                                                          for w in caught})}
    if diff:
        result["message"] = diff
    if report is not None:
        result["hazards"] = len(report.hazards)
        result["counters"] = {k: getattr(report, k) for k in COUNTERS}
    return result


# ----------------------------------------------------------------------------- the GPU folder

RUN_GPU = r'''"""Run the conformance corpus through PyCUDA (numpy + pycuda only; no tilinglib).

Written by bench/conformance_corpus.py --pycuda-script. Every source is compiled as PyCUDA's
SourceModule(source, no_extern_c=True, arch=<this GPU>, options=<the entry's -D options>)
would compile it (its cubin lands in PyCUDA's cache first, 16 nvcc at once), and the kernel
is looked up by the mangled name of the one `.entry` of the same source compiled to PTX
(cu++filt's demangling shown beside it; in an anonymous namespace, as the cubin spells it).
Writes $OUT/conformance_h200.json (or
./conformance_h200.json) and prints the table.
"""
import json, os, re, subprocess, sys, time, traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as cuda
from pycuda.compiler import SourceModule, compile as nvcc_compile

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpus_lib as lib  # the references and the argument builder (numpy only)

entries = json.loads((HERE / "corpus.json").read_text())
only = sys.argv[1:]
if only:
    entries = [e for e in entries if any(o in e["id"] for o in only)]
# A kernel that faults (an illegal address) leaves this process's CUDA context unusable:
# the entries after it are then run by a fresh copy of this script, given their ids here.
CHILD_IDS = os.environ.get("RUN_GPU_IDS")
if CHILD_IDS:
    wanted = json.loads(CHILD_IDS)
    entries = [e for e in entries if e["id"] in wanted]
dev = cuda.Context.get_device()
arch = "sm_%d%d" % dev.compute_capability()
print("device:", dev.name(), arch, "| CUDA driver", cuda.get_driver_version(), flush=True)


def source_of(e):
    return (HERE / "sources" / (e["id"] + ".cu")).read_text()


def build(e):
    src, opts = source_of(e), (list(e["options"]) if e.get("options") else None)
    out = {}
    for target in ("ptx", "cubin"):
        try:
            out[target] = nvcc_compile(src, options=opts, no_extern_c=True, arch=arch,
                                       target=target)
        except Exception as exc:
            out[target + "_error"] = str(exc)
    return out


t0 = time.time()
with ThreadPoolExecutor(16) as pool:
    built = list(pool.map(build, entries))
print("compiled %d sources in %.1f s" % (len(entries), time.time() - t0), flush=True)


def demangle(names):
    for tool in ("cu++filt", "/usr/local/cuda/bin/cu++filt"):
        try:
            done = subprocess.run([tool], input="\n".join(names), capture_output=True,
                                  text=True, timeout=30)
            return done.stdout.splitlines()
        except Exception:
            continue
    return ["?"] * len(names)


def pick_entry(e, ptx):
    names = re.findall(r"\.entry\s+([\w$]+)\s*\(", ptx)
    shown = demangle(names)
    if len(names) == 1:
        return names[0], shown[0]
    # several entries (a file that instantiates a template more than once): the one the
    # front end mangled, else the one cu++filt spells as kernel<args>(
    if e.get("clang_mangled") in names:
        return e["clang_mangled"], shown[names.index(e["clang_mangled"])]
    full = (e["kernel"] + (e.get("tmpl") or "")).replace(" ", "")
    for n, d in zip(names, shown):
        if full + "(" in d.replace(" ", ""):
            return n, d
    want = e["kernel"]
    for n, d in zip(names, shown):
        if re.search(r"\b%s\b" % re.escape(want), d) or n == want:
            return n, d
    raise LookupError("no .entry for %s among %s" % (want, names))


def as_loaded(name, cubin):
    """`name` as the loaded cubin spells it. nvcc names an anonymous namespace
    (<len>_GLOBAL__N__<hash>_...) differently at every compile, so the PTX's name is not the
    cubin's: the cubin's is the one that differs only in that component. (The cubin bytes are
    the module's own: PyCUDA's cache hands SourceModule the same ones.)"""
    m = re.search(r"(\d+)_GLOBAL__N_", name)
    if not m:
        return name
    pre, post = name[:m.start()], name[m.start(1) + len(m.group(1)) + int(m.group(1)):]
    for raw in sorted(set(re.findall(rb"_Z[\w$]+", bytes(cubin)))):
        c = raw.decode("ascii")
        d = re.match(r"\d+", c[len(pre):]) if c.startswith(pre) else None
        if d:
            at = len(pre) + len(d.group())
            part = c[at:at + int(d.group())]
            if part.startswith("_GLOBAL__N_") and c[at + len(part):] == post:
                return c
    return name


def rest_in_a_fresh_process(rest):
    """The results of `rest` (entries), from a child process with a context of its own."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, RUN_GPU_IDS=json.dumps([e["id"] for e in rest]), OUT=tmp)
        subprocess.run([sys.executable, str(Path(__file__).resolve())], env=env, timeout=1800)
        files = list(Path(tmp).glob("*.json"))
        if not files:
            return [{"id": e["id"], "result": "error", "message": "not run (the child failed)"}
                    for e in rest]
        return json.loads(files[0].read_text())["results"]


CONTEXT_LOST = ("illegal memory access", "misaligned address", "illegal instruction",
                "unspecified launch failure", "an illegal", "launch timed out")

results = []
for i, (e, b) in enumerate(zip(entries, built)):
    r = {"id": e["id"]}
    results.append(r)
    if "cubin" not in b:
        err = b.get("cubin_error", "")
        lines = [ln for ln in err.splitlines() if "error" in ln.lower()]
        r.update(result="refused by nvcc", message=(lines or [err[:300]])[0][:300])
        continue
    try:
        mod = SourceModule(source_of(e), options=list(e["options"]) if e.get("options") else None,
                           no_extern_c=True, arch=arch)
        mangled, readable = pick_entry(e, b["ptx"].decode() if isinstance(b["ptx"], bytes)
                                       else b["ptx"])
        r.update(mangled=mangled, demangled=readable)
        if e.get("clang_mangled"):
            r["clang_mangled_agrees"] = e["clang_mangled"] == mangled
        f = mod.get_function(as_loaded(mangled, b["cubin"]))
        launch = lib.build_launch(e)
        wrap = {"in": cuda.In, "out": cuda.Out, "inout": cuda.InOut}
        args = [v if k == "scalar" else wrap[k](v) for k, _, v in launch["args"]]
        f(*args, block=launch["block"], grid=launch["grid"], shared=launch["shared"])
        cuda.Context.synchronize()
        outputs = {name: v for k, name, v in launch["args"] if k != "scalar"}
        diff = lib.compare(e, launch, outputs)
        r["result"] = "ok" if diff is None else "wrong"
        if diff:
            r["message"] = diff
    except Exception as exc:
        r.update(result="error", by=type(exc).__name__, message=str(exc).splitlines()[0][:300]
                 if str(exc) else "", where=traceback.format_exc().splitlines()[-3:])
    print("%-40s %-16s %s" % (e["id"], r["result"], r.get("message", r.get("demangled", ""))),
          flush=True)
    if r["result"] == "error" and any(m in r.get("message", "") for m in CONTEXT_LOST):
        rest = entries[i + 1:]
        if rest:
            print("(the CUDA context is lost: the %d entries after this one run in a fresh "
                  "process)" % len(rest), flush=True)
            results.extend(rest_in_a_fresh_process(rest))
        break

# Our own construct kernels (tests/kernels/conformance/cxx_*.cu): compiled only, to check
# that nvcc takes what the emulator's tests take; their results are the tests' business.
own = []
for path in ([] if CHILD_IDS else sorted((HERE / "own").glob("*.cu"))):
    r = {"file": path.name}
    try:
        ptx = nvcc_compile(path.read_text(), no_extern_c=True, arch=arch, target="ptx")
        names = re.findall(r"\.entry\s+([\w$]+)\s*\(", ptx.decode())
        r.update(result="compiles", entries=demangle(names) if names else [])
    except Exception as exc:
        lines = [ln for ln in str(exc).splitlines() if "error" in ln.lower()]
        r.update(result="refused by nvcc", message=(lines or [str(exc)[:300]])[0][:300])
    own.append(r)
    print("%-40s %-16s %s" % (r["file"], r["result"], r.get("message", r.get("entries", ""))),
          flush=True)

counts = {}
for r in results:
    counts[r["result"]] = counts.get(r["result"], 0) + 1
agree = [r["clang_mangled_agrees"] for r in results if "clang_mangled_agrees" in r]
print("totals:", counts, "| clang's mangled name = nvcc's .entry for %d of %d kernels"
      % (sum(agree), len(agree)))
mode = HERE / "mode"
dest = Path(os.environ.get("OUT") or ".") / (mode.read_text().split()[0] if mode.exists()
                                             else "conformance_h200.json")
dest.write_text(json.dumps({"device": dev.name(), "arch": arch, "counts": counts,
                            "clang_mangled_agrees": [sum(agree), len(agree)],
                            "results": results, "own_kernels": own}, indent=1))
print("wrote", dest)
'''


def clang_mangled_name(entry: dict, source: str) -> str | None:
    """The mangled name tilinglib's front end (clang) gives the entry's kernel, or None
    where the front end cannot say (not merged yet, or it refuses the source)."""
    try:
        from tilinglib.toolchain.frontend.program import mangled_names
        names = mangled_names(source, entry.get("options"))
        want = lookup_name(entry)
        # a kernel of an anonymous namespace is listed as '::k', one of namespace N as 'N::k'
        if want in names or "::" + want in names:
            return names.get(want, names.get("::" + want))
        tail = [v for k, v in names.items() if k.endswith("::" + want)]
        return tail[0] if len(tail) == 1 else None
    except Exception:                             # noqa: BLE001 (recorded as unknown)
        return None


def write_gpu_folder(folder: Path, entries: list, sources: dict,
                     as_written: bool = False, results_name: str | None = None) -> None:
    """The standalone GPU folder: sources/, corpus.json, corpus_lib.py, own/, run_gpu.py,
    and ``mode`` (its first line names the results file run_gpu.py writes: `results_name`
    if given (a held-out batch's, `batch_h200_name`), else
    conformance_h200_as_written.json for files as written, conformance_h200.json for the
    device code alone)."""
    entries = [e | {"clang_mangled": clang_mangled_name(e, sources[e["id"]])} for e in entries]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mode").write_text((results_name or ("conformance_h200_as_written.json"
                                                   if as_written else "conformance_h200.json"))
                                 + "\n")
    (folder / "sources").mkdir(exist_ok=True)
    for e in entries:
        (folder / "sources" / f"{e['id']}.cu").write_text(sources[e["id"]])
    (folder / "corpus.json").write_text(json.dumps(entries, indent=1))
    shutil.copyfile(__file__, folder / "corpus_lib.py")
    (folder / "own").mkdir(exist_ok=True)
    for path in sorted((ROOT / "tests" / "kernels" / "conformance").glob("cxx_*.cu")):
        shutil.copyfile(path, folder / "own" / path.name)
    (folder / "run_gpu.py").write_text(RUN_GPU)


# ----------------------------------------------------------------------------- the doc table

DOC = ROOT / "docs" / "conformance.md"
H200_RESULTS = HERE / "results" / "conformance_h200.json"
H200_RESULTS_AS_WRITTEN = HERE / "results" / "conformance_h200_as_written.json"
BEGIN, END = "<!-- corpus table: bench/conformance_corpus.py --doc -->", "<!-- end of table -->"


def _short(r: dict | None) -> str:
    if r is None:
        return "not run"
    text = r["result"]
    if r.get("message") and r["result"] != "ok":
        msg = r["message"].replace("|", "\\|")
        msg = re.sub(r"^kernel\.cu:\d+(:\d+)?: ", "", msg)
        text += ": " + (msg[:90] + "..." if len(msg) > 90 else msg)
        if r.get("at"):
            text += f" (at {r['at'].rsplit('/', 1)[-1]})"
    return text


def _tally(ids: list, by: dict) -> str:
    """'38 ok, 2 refused, 1 not run' over the results `by` id of the kernels `ids`."""
    c: dict = {}
    for i in ids:
        res = by[i]["result"] if i in by else "not run"
        c[res] = c.get(res, 0) + 1
    return ", ".join(f"{v} {k}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]))


def render_table(listing: dict, emu: dict, h200: dict | None, as_written: dict | None = None,
                 h200_as_written: dict | None = None) -> str:
    """The markdown table of docs/conformance.md from the list and the results files: the
    device code alone (`emu`, `h200`) and, where given, the files as written."""
    emu_by = {r["id"]: r for r in emu["results"]}
    gpu_by = {r["id"]: r for r in (h200 or {}).get("results", [])}
    aw_by = {r["id"]: r for r in (as_written or {}).get("results", [])}
    gaw_by = {r["id"]: r for r in (h200_as_written or {}).get("results", [])}
    extra = as_written is not None
    rows = ["| kernel | repository | path: lines | constructs | launch | emulator "
            "| H200 (PyCUDA) |" + (" emulator, file as written | H200, file as written |"
                                   if extra else ""),
            "|---|---|---|---|---|---|---|" + ("---|---|" if extra else "")]
    for e in listing["kernels"]:
        paths: dict = {}
        for path, first, last in e["parts"]:
            paths.setdefault(path, []).append(f"{first}-{'end' if last == -1 else last}")
        where = "; ".join(f"`{p}`: {', '.join(r)}" for p, r in paths.items())
        r = emu_by.get(e["id"], {})
        lau = build_launch(e)
        launch = (f"grid {lau['grid']}, block {lau['block']}"
                  + (f", shared {lau['shared']} B" if lau["shared"] else "")
                  + "; " + ", ".join(f"{k}={v}" for k, v in e.get("sizes", {}).items()))
        owner, name = e["repo"].split("/")
        commit = listing["repositories"][e["repo"]][:10]
        mark = " (held out)" if e.get("heldout") else ""
        rows.append(f"| `{lookup_name(e)}`{mark} | {owner}/{name[:20]} @`{commit}`"
                    f" | {where} | {', '.join(r.get('constructs', []))} | {launch} | "
                    f"{_short(r or None)} | "
                    f"{_short(gpu_by.get(e['id'])) if h200 else 'not run yet'} |"
                    + (f" {_short(aw_by.get(e['id']))} | "
                       f"{_short(gaw_by.get(e['id'])) if h200_as_written else 'not run yet'} |"
                       if extra else ""))
    lines = []
    for label, held in (("the corpus", False), ("the held-out sample", True)):
        ids = [e["id"] for e in listing["kernels"] if bool(e.get("heldout")) == held]
        if not ids:
            continue
        if extra:
            lines.append(f"Files as written, {label}: emulator {_tally(ids, aw_by)} of "
                         f"{len(ids)}" + (f"; H200 {_tally(ids, gaw_by)}" if h200_as_written
                                          else "") + ".")
        lines.append(f"Device code alone, {label}: emulator {_tally(ids, emu_by)} of "
                     f"{len(ids)}." + (f" H200: {_tally(ids, gpu_by)}." if h200 else ""))
    lines.append("")
    lines.append("| repository (commit) | emulator |" + (" H200 |" if h200 else "")
                 + (" emulator, as written |" if extra else ""))
    lines.append("|---|---|" + ("---|" if h200 else "") + ("---|" if extra else ""))

    def tally(repo, by):
        c: dict = {}
        for e in listing["kernels"]:
            if e["repo"] == repo and e["id"] in by:
                c[by[e["id"]]["result"]] = c.get(by[e["id"]]["result"], 0) + 1
        return ", ".join(f"{v} {k}" for k, v in sorted(c.items())) or "not run"

    held_repos = {e["repo"] for e in listing["kernels"] if e.get("heldout")}
    for repo, commit in listing["repositories"].items():
        mark = " (held out)" if repo in held_repos else ""
        lines.append(f"| {repo} (`{commit[:10]}`){mark} | {tally(repo, emu_by)} |"
                     + (f" {tally(repo, gpu_by)} |" if h200 else "")
                     + (f" {tally(repo, aw_by)} |" if extra else ""))
    return "\n".join(lines + [""] + rows) + "\n"


def render_summary(listing: dict, before: dict | None, as_written: dict | None,
                   emu: dict | None, h200: dict | None,
                   h200_as_written: dict | None = None) -> str:
    """The summary block of docs/conformance.md: per part of the list, the files as written
    (the emulator before issue 24's work and now, the H200), the device code alone (the
    emulator, the H200); then each kernel whose file as written does not run on the
    emulator, with the reason and the H200's result for the same file."""
    def by(res):
        return {r["id"]: r for r in (res or {}).get("results", [])}

    sets = [by(before), by(as_written), by(h200_as_written), by(emu), by(h200)]
    lines = ["| | kernels | file as written, emulator before issue 24 | file as written, "
             "emulator now | file as written, H200 | device code alone, emulator | "
             "device code alone, H200 |",
             "|---|---|---|---|---|---|---|"]
    parts = [("the corpus (7 repositories)", [e["id"] for e in listing["kernels"]
                                              if not e.get("heldout")]),
             ("the held-out sample (6 more repositories)", [e["id"] for e in listing["kernels"]
                                                            if e.get("heldout")]),
             ("all", [e["id"] for e in listing["kernels"]])]
    for label, ids in parts:
        cells = [_tally(ids, s) if s else "not run" for s in sets]
        lines.append(f"| {label} | {len(ids)} | " + " | ".join(cells) + " |")
    now = sets[1]
    gpu_ok = [e["id"] for e in listing["kernels"]
              if sets[2].get(e["id"], {}).get("result") == "ok"]
    if gpu_ok and now:
        c: dict = {}
        for i in gpu_ok:
            c[now.get(i, {}).get("result", "not run")] = \
                c.get(now.get(i, {}).get("result", "not run"), 0) + 1
        lines += ["", f"Of the {len(gpu_ok)} files as written that the H200 runs correctly, the "
                      f"emulator runs {c.get('ok', 0)} with every output correct"
                  + "".join(f"; {v} {k}" for k, v in sorted(c.items()) if k != "ok")
                  + " (each listed below)."]
    stops = [(e, now[e["id"]]) for e in listing["kernels"]
             if e["id"] in now and now[e["id"]]["result"] != "ok"]
    if stops:
        lines += ["", "What does not run as written now on the emulator, and what the H200 "
                      "did with the same file:", ""]
        for e, r in stops:
            gpu = sets[2].get(e["id"], {}).get("result", "not run")
            lines.append(f"- `{lookup_name(e)}` ({e['repo']}): {_short(r)}; H200, file as "
                         f"written: {gpu}")
    wrong_way = [e for e in listing["kernels"] if sets[2].get(e["id"], {}).get("result")
                 not in (None, "ok") and now.get(e["id"], {}).get("result") == "ok"]
    if wrong_way:
        lines += ["", "Files as written that the emulator runs and nvcc refused:", ""]
        for e in wrong_way:
            lines.append(f"- `{lookup_name(e)}` ({e['repo']}): "
                         f"{_short(sets[2][e['id']])}")
    return "\n".join(lines) + "\n"


def batch_results(batch: str, as_written: bool = True, before: bool = False) -> Path:
    """The results file of held-out batch `batch`: conformance_batch_<batch>[_before]
    [_device_code].json in bench/results."""
    return HERE / "results" / (f"conformance_batch_{batch}" + ("_before" if before else "")
                               + ("" if as_written else "_device_code") + ".json")


def render_batches(listing: dict, read) -> str:
    """The block of docs/conformance.md for the held-out batches (entries with a "batch"):
    per batch and repository, the files as written on the emulator at the batch's first
    run (`batch_results(..., before=True)`: before any change for it) and now; then each
    kernel that changed between the two, grouped by the first run's message; then each
    kernel that does not run now, with its result and the entry's "finding" (why: the
    repository's own bug, or what the emulator lacks). `read(path)` gives a results file's
    JSON or None."""
    batches = sorted({e["batch"] for e in listing["kernels"] if e.get("batch")})
    out = []
    for batch in batches:
        entries = [e for e in listing["kernels"] if e.get("batch") == batch]
        first = {r["id"]: r for r in (read(batch_results(batch, before=True)) or {}).get(
            "results", [])}
        now = {r["id"]: r for r in (read(batch_results(batch)) or {}).get("results", [])}
        gpu = {r["id"]: r for r in (read(HERE / "results" / batch_h200_name(batch)) or {}).get(
            "results", [])}
        repos = list(dict.fromkeys(e["repo"] for e in entries))
        out += [f"Batch {batch}: {len(entries)} kernels of {len(repos)} repositories, files "
                f"as written (bench/results/conformance_batch_{batch}_before.json, "
                f"conformance_batch_{batch}.json and, for the H200, "
                f"{batch_h200_name(batch)}).", "",
                "| repository (commit) | kernels | emulator, first run | emulator now | H200 |",
                "|---|---|---|---|---|"]

        def cells(ids):
            return " | ".join(_tally(ids, res) if res else "not run yet" if res is gpu
                              else "not run" for res in (first, now, gpu))
        for repo in repos:
            ids = [e["id"] for e in entries if e["repo"] == repo]
            out.append(f"| {repo} (`{listing['repositories'][repo][:10]}`) | {len(ids)} | "
                       f"{cells(ids)} |")
        ids = [e["id"] for e in entries]
        out.append(f"| all | {len(ids)} | {cells(ids)} |")
        def msg_of(r):
            m = re.sub(r"^kernel\.cu:\d+(:\d+)?: ", "", r.get("message", ""))
            return m[:110] + ("..." if len(m) > 110 else "")

        changed: dict = {}
        for e in entries:
            a, b = first.get(e["id"]), now.get(e["id"])
            if a and b and (a["result"] != b["result"] or (
                    a["result"] != "ok" and msg_of(a) != msg_of(b))):
                key = (a["result"], msg_of(a), b["result"],
                       msg_of(b) if b["result"] != "ok" else "")
                changed.setdefault(key, []).append(e)
        if changed:
            out += ["", "Changed since the first run, by the first run's message:", ""]
            for (was, msg, is_now, msg_now), es in sorted(changed.items(),
                                                          key=lambda kv: -len(kv[1])):
                names = ", ".join(f"`{lookup_name(e)}`" for e in es[:4]) + (
                    f" and {len(es) - 4} more" if len(es) > 4 else "")
                out.append(f"- {len(es)} {was} -> {is_now}: \"{msg}\" ({names})"
                           + (f"; now \"{msg_now}\"" if msg_now else ""))
        raced = [e for e in entries if now.get(e["id"], {}).get("result") == "ok"
                 and now[e["id"]].get("hazards")]
        if raced:
            out += ["", "Correct here, with shared-memory races the emulator reports (warnings; "
                        "`hazards=\"raise\"` makes them errors):", ""]
            for e in raced:
                out.append(f"- `{lookup_name(e)}` ({e['repo']}): {now[e['id']]['hazards']} "
                           f"hazards. " + e.get("finding", "not looked into yet"))
        stops = [e for e in entries if e["id"] in now and now[e["id"]]["result"] != "ok"]
        if stops:
            out += ["", "What does not run correctly now:", ""]
            for e in stops:
                r = now[e["id"]]
                out.append(f"- `{lookup_name(e)}` ({e['repo']}): {_short(r)}"
                           + (f"; H200: {_short(gpu[e['id']])}" if e["id"] in gpu else "")
                           + ". " + e.get("finding", "not looked into yet"))
        out.append("")
    return "\n".join(out)


def batch_h200_name(batch: str, as_written: bool = True) -> str:
    """The name of the results file run_gpu.py writes for held-out batch `batch` (copied to
    bench/results/ beside the emulator's)."""
    return f"conformance_batch_{batch}_h200" + ("" if as_written else "_device_code") + ".json"


BATCHES_BEGIN = "<!-- held-out batches: bench/conformance_corpus.py --doc -->"
BATCHES_END = "<!-- end of batches -->"
SUMMARY_BEGIN = "<!-- as-written summary: bench/conformance_corpus.py --doc -->"
SUMMARY_END = "<!-- end of summary -->"
RESULTS_AS_WRITTEN_BEFORE = HERE / "results" / "conformance_emulator_as_written_before.json"


def write_doc(listing: dict) -> None:
    """Rewrite the table of docs/conformance.md from the results files (device code alone,
    and files as written where those results exist)."""
    def read(path):
        return json.loads(path.read_text()) if path.exists() else None

    emu = read(RESULTS)
    h200 = read(H200_RESULTS)
    text = DOC.read_text()
    if BATCHES_BEGIN in text:
        head, rest = text.split(BATCHES_BEGIN, 1)
        _, tail = rest.split(BATCHES_END, 1)
        text = head + BATCHES_BEGIN + "\n" + render_batches(listing, read) + BATCHES_END + tail
    # the issue 11 and issue 24 sets below; each held-out batch has its own block above
    core = [e for e in listing["kernels"] if not e.get("batch")]
    listing = {**listing, "kernels": core, "repositories": {
        r: c for r, c in listing["repositories"].items() if any(e["repo"] == r for e in core)}}
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    table = render_table(listing, emu, h200, read(RESULTS_AS_WRITTEN),
                         read(H200_RESULTS_AS_WRITTEN))
    text = head + BEGIN + "\n" + table + END + tail
    if SUMMARY_BEGIN in text:
        head, rest = text.split(SUMMARY_BEGIN, 1)
        _, tail = rest.split(SUMMARY_END, 1)
        text = (head + SUMMARY_BEGIN + "\n" + render_summary(
            listing, read(RESULTS_AS_WRITTEN_BEFORE), read(RESULTS_AS_WRITTEN), emu, h200,
            read(H200_RESULTS_AS_WRITTEN))
            + SUMMARY_END + tail)
    DOC.write_text(text)
    print("wrote the table of", DOC)


# ----------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="only", action="append", default=[],
                    help="run only the ids containing this text (repeatable)")
    ap.add_argument("--pycuda-script", type=Path, metavar="DIR",
                    help="also write the standalone PyCUDA runner folder DIR")
    ap.add_argument("--no-emulator", action="store_true", help="only materialise")
    ap.add_argument("--mirrors", type=Path, default=None, metavar="DIR",
                    help="folder of bare clones named <owner>+<name>/repo (default: "
                         "$TILINGLIB_CORPUS_MIRRORS or /work/.mirror)")
    ap.add_argument("--device-code", action="store_true",
                    help="take only the entries' line ranges (their device code, as issue 11 "
                         "measured it) instead of their files as written")
    ap.add_argument("--results", type=Path, default=None,
                    help="results file (default bench/results/conformance_emulator"
                         "_as_written.json, or conformance_emulator.json with --device-code)")
    ap.add_argument("--batch", default=None, metavar="NAME",
                    help="run only the held-out batch NAME (the entries whose \"batch\" is NAME) "
                         "and write its results to bench/results/conformance_batch_NAME"
                         "[_device_code].json")
    ap.add_argument("--doc", action="store_true",
                    help="only rewrite the table of docs/conformance.md from the results files "
                         "(bench/results/conformance_{emulator,h200}[_as_written].json)")
    opts = ap.parse_args(argv)
    if opts.mirrors is not None:
        global MIRRORS
        MIRRORS = opts.mirrors

    listing = json.loads(LIST.read_text())
    as_written = not opts.device_code
    if opts.results is None and opts.batch:
        opts.results = batch_results(opts.batch, as_written)
    if opts.results is None:
        opts.results = RESULTS_AS_WRITTEN if as_written else RESULTS
    if opts.doc:
        write_doc(listing)
        return 0
    commits = listing["repositories"]
    entries = [e for e in listing["kernels"]
               if (not opts.only or any(o in e["id"] for o in opts.only))
               and (opts.batch is None or e.get("batch") == opts.batch)]
    if not entries:
        sys.exit("no entry matches" + (f" batch {opts.batch!r}" if opts.batch else "")
                 + (f" and -k {opts.only}" if opts.only else ""))
    if as_written:      # the launch of the file as written, where it differs
        entries = [e | e.get("as_written", {}) for e in entries]
    folder = CORPUS_DIR / ("as_written" if as_written else "device_code")
    folder.mkdir(parents=True, exist_ok=True)
    sources, maps, inlined = {}, {}, {}
    for e in entries:
        if as_written:
            sources[e["id"]], maps[e["id"]], inlined[e["id"]] = \
                materialise_as_written(e, listing)
        else:
            sources[e["id"]], maps[e["id"]] = materialise(e, commits)
        (folder / f"{e['id']}.cu").write_text(sources[e["id"]])
    if opts.pycuda_script:
        write_gpu_folder(opts.pycuda_script, entries, sources, as_written,
                         batch_h200_name(opts.batch, as_written) if opts.batch else None)
        print(f"wrote {len(entries)} kernels and run_gpu.py to {opts.pycuda_script}")
    if opts.no_emulator:
        return 0

    rows = []
    for e in entries:
        r = run_on_emulator(e, sources[e["id"]], maps[e["id"]])
        r |= {"repo": e["repo"], "kernel": lookup_name(e),
              "constructs": constructs_of(sources[e["id"]])}
        if as_written:
            r |= {"lines": sources[e["id"]].count("\n"), "inlined": inlined[e["id"]],
                  "includes": sorted(set(re.findall(r'(?m)^[ \t]*#[ \t]*include[ \t]*'
                                                    r'(<[^>\n]+>|"[^"\n]+")',
                                                    sources[e["id"]])))}
        rows.append(r)
        print(f"{e['id']:40s} {r['result']:14s} {r.get('message', '')[:110]}", flush=True)
    counts: dict = {}
    for r in rows:
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    per_repo: dict = {}
    for r in rows:
        per_repo.setdefault(r["repo"], {}).setdefault(r["result"], 0)
        per_repo[r["repo"]][r["result"]] += 1
    print("totals:", counts)
    for repo, c in per_repo.items():
        print(f"  {repo}: {c}")
    if not opts.only:
        opts.results.parent.mkdir(parents=True, exist_ok=True)
        opts.results.write_text(json.dumps({"mode": "as written" if as_written else
                                            "device code", "counts": counts,
                                            "per_repository": per_repo,
                                            "results": rows}, indent=1) + "\n")
        print("wrote", opts.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
