"""The adversarial warp schedule against every kernel we have: racy ones go wrong, correct
ones never change.

For each race-carrying kernel of the tests, the lessons, the grader's submissions and the
conformance corpus (the corpus entries whose lockstep run detects a read/write race on
shared memory), it runs ``tilinglib.find_race_failure`` and prints: found wrong (yes/no),
seeds tried, the time to find, and the evidence. For every race-free kernel (the conformance
suite of tests/test_conformance.py, the course's kernels and the ladder's steps, the corpus
entries with no hazard) it runs ``schedule="adversarial"`` under several seeds and counts the
outputs that are not bit-identical to the lockstep run's: kernels x seeds, differences. A
corpus kernel whose answer depends on the order of its atomics (a float atomicAdd total, slots
reserved with atomicAdd) may give other bits and still pass its reference check: those runs are
counted apart, as "atomic-order runs".

    .venv/bin/python bench/race_adversary.py                 # everything (minutes)
    .venv/bin/python bench/race_adversary.py --no-corpus     # without the corpus
    .venv/bin/python bench/race_adversary.py --seeds 8 --racy-seeds 32 -k tiled

The corpus needs the fetched mirrors of its repositories (bench/conformance_corpus.py,
TILINGLIB_CORPUS_MIRRORS); entries whose mirror is missing are listed as skipped.
tests/test_schedule_property.py runs the race-free part over a few seeds in CI, from the
case lists below.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tilinglib import kernels  # noqa: E402
from tilinglib.emulator import In, InOut, Out, SourceModule  # noqa: E402
from tilinglib.errors import UnsupportedFeatureError  # noqa: E402

WRAP = {"in": In, "out": Out, "inout": InOut}


@dataclass
class Launchable:
    """One kernel launch: `make()` returns (Function, fresh argument list, block, grid,
    shared); `group`: where the kernel comes from (tests, lessons, grader, corpus)."""

    name: str
    group: str
    make: Callable
    # output number -> a check(array) for an output a GPU may legally give in several ways
    # (which thread wins an atomicCAS): checked instead of compared bit for bit
    checks: dict = None
    # accept(outputs) -> True when outputs that differ from lockstep are still a right
    # answer of a kernel whose answer depends on the order of its atomics (the corpus: its
    # own reference check, for a source that uses atomics)
    accept: Callable = None


def property_seeds(name: str, count: int = 3) -> list:
    """The seeds the property test runs `name` under: 1 and 2 (every warp barrier to
    barrier, ascending and descending), then random ones picked from the name (a fixed
    choice per kernel, different between kernels)."""
    base = 3 + zlib.crc32(name.encode()) % 100_000
    return [1, 2] + [base + i for i in range(max(0, count - 2))]


def outputs_of(args) -> list:
    return [a.array for a in args if isinstance(a, (Out, InOut))]


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.itemsize in (1, 2, 4, 8) and a.dtype.kind != "c":
        u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
        return np.array_equal(a.view(u), b.view(u))
    return np.array_equal(a, b)


def compare_schedules(item: Launchable, seeds) -> dict:
    """Run `item` in lockstep, then under each seed; {"refused": message} when the
    adversarial schedule refuses it, else {"runs": n, "differ": [seeds whose output is not
    bit-identical, or failing the item's own check where it has one], "atomic_order":
    [seeds whose output differs but `item.accept` takes it], "seconds": s}."""
    t0 = time.perf_counter()
    f, args, block, grid, shared = item.make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(*args, block=block, grid=grid, shared=shared)
        ref = [o.copy() for o in outputs_of(args)]
        differ, atomic_order = [], []
        for seed in seeds:
            f, args, block, grid, shared = item.make()
            try:
                f(*args, block=block, grid=grid, shared=shared, schedule="adversarial",
                  seed=seed, hazards="ignore")
            except UnsupportedFeatureError as exc:
                return {"refused": str(exc).splitlines()[0]}
            checks = item.checks or {}
            for k, (r, o) in enumerate(zip(ref, outputs_of(args))):
                if k in checks:
                    try:
                        checks[k](o)
                    except AssertionError:
                        differ.append(seed)
                        break
                elif not bits_equal(r, o):
                    if item.accept is not None and item.accept(outputs_of(args)):
                        atomic_order.append(seed)
                    else:
                        differ.append(seed)
                    break
    return {"runs": len(list(seeds)), "differ": differ, "atomic_order": atomic_order,
            "seconds": time.perf_counter() - t0}


# ----------------------------------------------------------------------------- race-free

def _conformance_cases() -> list:
    import test_conformance as tc

    out = []
    for case in tc.CASES:
        def make(case=case):
            run = case.setup(np.random.default_rng(1234))
            args = [WRAP[a[0]](a[1].copy()) if isinstance(a, tuple) else a for a in run.args]
            f = SourceModule(case.text(), options=list(case.options)).get_function(case.kernel)
            return f, args, run.block, run.grid, run.shared
        run = case.setup(np.random.default_rng(1234))
        positions = [i for i, a in enumerate(run.args)
                     if isinstance(a, tuple) and a[0] in ("out", "inout")]
        checks = {positions.index(i): want for i, want in run.expected.items()
                  if callable(want)}
        out.append(Launchable(f"conformance/{case.name}", "tests", make, checks or None))
    return out


def _matrices(M, N, K, seed=5):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K), dtype=np.float32),
            rng.standard_normal((K, N), dtype=np.float32))


def _course_cases() -> list:
    from tilinglib import ladder

    out = []
    for step in ladder.STEPS:
        p = step.resolve()
        if step.square_only:
            M = N = K = 2 * p["TILE"] if p["TILE"] <= 16 else p["TILE"]
            p = step.resolve({"TILE": 16})
            M = N = K = 32
        else:
            M, N, K = p["BM"], p["BN"], 2 * p.get("BK", 8)      # one block, two K tiles
        def make(step=step, p=p, M=M, N=N, K=K):
            A, B = _matrices(M, N, K)
            f = SourceModule(kernels.load(step.kernel), options=step.defines(p)).get_function(
                step.function)
            C = Out(np.zeros((M, N), np.float32))
            args = ([np.int32(N), In(A), In(B), C] if step.square_only else
                    [np.int32(M), np.int32(N), np.int32(K), In(A), In(B), C])
            return f, args, step.block(p), step.grid(M, N, p), 0
        out.append(Launchable(f"ladder/{step.name}", "lessons", make))

    def db(tile=16, N=64):
        def make():
            A, B = _matrices(N, N, N)
            f = SourceModule(kernels.load("sgemm_tiled_db"), options=[f"-DTILE={tile}"]
                             ).get_function("sgemmTiledDB")
            return (f, [np.int32(N), In(A), In(B), Out(np.zeros((N, N), np.float32))],
                    (tile, tile, 1), (N // tile, N // tile), 0)
        return make
    out.append(Launchable("lesson06/sgemm_tiled_db", "lessons", db()))

    def transpose(name, pad):
        def make():
            n = 64
            A = np.random.default_rng(3).standard_normal((n, n), dtype=np.float32)
            f = SourceModule(kernels.load("transpose"), options=[f"-DPAD={pad}"]).get_function(
                name)
            return f, [np.int32(n), In(A), Out(np.zeros((n, n), np.float32))], (32, 32, 1), \
                (2, 2), 0
        return make
    for name in ("transposeNaive", "transposeShared"):
        for pad in (0, 1):
            out.append(Launchable(f"lesson05/{name}_pad{pad}", "lessons", transpose(name, pad)))

    def saxpy():
        n = 1000
        x = np.arange(n, dtype=np.float32)
        f = SourceModule(kernels.load("saxpy")).get_function("saxpy")
        return f, [np.int32(n), np.float32(2.0), In(x), InOut(np.ones(n, np.float32))], \
            (256, 1, 1), (4, 1), 0
    out.append(Launchable("lesson06/saxpy", "lessons", saxpy))
    return out


def race_free_cases() -> list:
    """The race-free kernels of the tests and the lessons (no corpus: that needs mirrors)."""
    return _conformance_cases() + _course_cases()


# ----------------------------------------------------------------------------- racy

SEED = kernels.load("sgemm_tiled")
DB = kernels.load("sgemm_tiled_db")


def _tiled_launch(source, kernel, N=32, tile=16):
    def make():
        A, B = _matrices(N, N, N, seed=0)
        f = SourceModule(source, options=[f"-DTILE={tile}"]).get_function(kernel)
        return (f, [np.int32(N), In(A), In(B), Out(np.zeros((N, N), np.float32))],
                (tile, tile, 1), (N // tile, N // tile), 0)
    return make


def _small(source, kernel, make_args, block, grid=(1, 1), **module):
    def make():
        f = SourceModule(source, **module).get_function(kernel)
        return f, make_args(), block, grid, 0
    return make


WAW = """
__global__ void k(int* out) {
    __shared__ int s[4];
    s[threadIdx.x % 4] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x % 4];
}"""

SYNCWARP_ONLY = """
__global__ void k(int* out) {
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncwarp();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}"""

WARP_REDUCE = """
__global__ void warp_reduce(const float* in, float* out)
{
    __shared__ float s[64];
    int tid = threadIdx.x;
    s[tid] = in[tid] + in[tid + 64];
    __syncthreads();
    if (tid < 32) {
        for (int offset = 32; offset > 0; offset >>= 1) {
            float t = tid < offset ? s[tid + offset] : 0.0f;
            s[tid] += t;
        }
    }
    if (tid == 0) out[0] = s[0];
}"""

REDUCE_NO_LOOP_BARRIER = """
__global__ void reduce(const int* in, int* out) {
    __shared__ int s[256];
    int tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}"""

SHIFT_INOUT = """
__global__ void shift(float* v) {
    __shared__ float s[64];
    s[threadIdx.x] = v[threadIdx.x];
    v[threadIdx.x] = s[(threadIdx.x + 32) % 64];
}"""


def _submission(name):
    src = (ROOT / "tests" / "submissions" / name).read_text()

    def make():
        from tilinglib.grading.sgemm import adversary_shape, grading_args
        f = SourceModule(src, options=["-DTILE=16"]).get_function("sgemm")
        args, block, grid = grading_args(f, 16, *adversary_shape(16))
        return f, args, block, grid, 0
    return make


def racy_cases() -> list:
    """The race-carrying kernels of the tests, the lessons and the grader's submissions."""
    from tilinglib.sgemm import barrier_before_stores, without_barrier

    ints = lambda n: (lambda: [Out(np.zeros(n, np.int32))])  # noqa: E731
    out = [
        Launchable("lesson03/tiled minus first barrier", "lessons",
                   _tiled_launch(without_barrier(SEED, "first"), "sgemmTiled")),
        Launchable("lesson03/tiled minus second barrier", "lessons",
                   _tiled_launch(without_barrier(SEED, "second"), "sgemmTiled")),
        Launchable("lesson06/db minus first barrier", "lessons",
                   _tiled_launch(without_barrier(DB, "first"), "sgemmTiledDB")),
        Launchable("lesson06/db minus its loop barrier", "lessons",
                   _tiled_launch(without_barrier(DB, "second"), "sgemmTiledDB")),
        Launchable("lesson06/db barrier before the stores", "lessons",
                   _tiled_launch(barrier_before_stores(DB), "sgemmTiledDB")),
        Launchable("test_emulator_races/write-after-write", "tests",
                   _small(WAW, "k", ints(8), (8, 1, 1))),
        Launchable("test_emulator_races/syncwarp across warps", "tests",
                   _small(SYNCWARP_ONLY, "k", ints(64), (64, 1, 1))),
        Launchable("test_emulator_races/warp reduce without syncwarp", "tests",
                   _small(WARP_REDUCE, "warp_reduce",
                          lambda: [In(np.arange(128, dtype=np.float32)),
                                   Out(np.zeros(1, np.float32))], (64, 1, 1))),
        Launchable("test_race_search/reduce without its loop barrier", "tests",
                   _small(REDUCE_NO_LOOP_BARRIER, "reduce",
                          lambda: [In(np.arange(512, dtype=np.int32)),
                                   Out(np.zeros(2, np.int32))], (256, 1, 1), (2, 1))),
        Launchable("test_race_search/shift in place", "tests",
                   _small(SHIFT_INOUT, "shift",
                          lambda: [InOut(np.arange(64, dtype=np.float32))], (64, 1, 1))),
    ]
    for name in ("bad_missing_first_barrier.cu", "bad_missing_second_barrier.cu"):
        out.append(Launchable(f"grader/{name}", "grader", _submission(name)))
    return out


# ----------------------------------------------------------------------------- the corpus

def _corpus_module():
    spec = importlib.util.spec_from_file_location("conformance_corpus",
                                                  HERE / "conformance_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def corpus_cases(only=None):
    """(racy, race-free, skipped) Launchables of the corpus: each entry run once in lockstep
    to see whether it has a read/write race; skipped: (id, why) for entries whose mirror,
    compile or launch fails (the corpus table has them)."""
    import json
    from tilinglib.toolchain.runtime.schedule import _ORDER

    cc = _corpus_module()
    listing = json.loads((HERE / "conformance_corpus.json").read_text())
    commits = listing["repositories"]
    racy, free, skipped = [], [], []
    for entry in listing["kernels"]:
        if only and only not in entry["id"]:
            continue
        if not cc.mirror_git_dir(entry["repo"]).is_dir():
            skipped.append((entry["id"], f"no mirror of {entry['repo']}"))
            continue
        try:
            source, _ = cc.materialise(entry, commits)
        except SystemExit as exc:
            skipped.append((entry["id"], str(exc)))
            continue

        def make(entry=entry, source=source):
            f = SourceModule(source, options=entry.get("options"), no_extern_c=True
                             ).get_function(cc.lookup_name(entry))
            launch = cc.build_launch(entry)
            args = [v if k == "scalar" else WRAP[k](v.copy()) for k, _, v in launch["args"]]
            return f, args, launch["block"], launch["grid"], launch["shared"]
        def accept(outputs, entry=entry, source=source):
            if "atomic" not in source:
                return False
            launch = cc.build_launch(entry)
            names = [n for k, n, _ in launch["args"] if k in ("out", "inout")]
            return cc.compare(entry, launch, dict(zip(names, outputs))) is None
        item = Launchable(f"corpus/{entry['id']}", "corpus", make, accept=accept)
        try:
            f, args, block, grid, shared = make()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                f(*args, block=block, grid=grid, shared=shared)
        except Exception as exc:          # noqa: BLE001 (the corpus table reports these)
            skipped.append((entry["id"], f"{type(exc).__name__}: "
                                         f"{str(exc).splitlines()[0] if str(exc) else ''}"))
            continue
        if any(h.kind in _ORDER for h in f.last_report.hazards):
            racy.append(item)
        else:
            free.append(item)
    return racy, free, skipped


# ----------------------------------------------------------------------------- the report

def search(item: Launchable, seeds: int, max_seconds: float):
    from tilinglib import find_race_failure

    f, args, block, grid, shared = item.make()
    try:
        return find_race_failure(f, *args, block=block, grid=grid, shared=shared, seeds=seeds,
                                 max_seconds=max_seconds)
    except UnsupportedFeatureError as exc:
        return str(exc).splitlines()[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6, help="seeds per race-free kernel")
    ap.add_argument("--racy-seeds", type=int, default=16, help="seeds per racy kernel")
    ap.add_argument("--max-seconds", type=float, default=60.0,
                    help="time budget of one kernel's search")
    ap.add_argument("--no-corpus", action="store_true", help="skip the conformance corpus")
    ap.add_argument("-k", default=None, help="only the kernels whose name contains this")
    a = ap.parse_args(argv)

    racy, free = racy_cases(), race_free_cases()
    skipped = []
    if not a.no_corpus:
        c_racy, c_free, skipped = corpus_cases()
        racy += c_racy
        free += c_free
    if a.k:
        racy = [x for x in racy if a.k in x.name]
        free = [x for x in free if a.k in x.name]

    print(f"== race-carrying kernels: tilinglib.find_race_failure(..., seeds={a.racy_seeds}, "
          f"max_seconds={a.max_seconds:g})\n")
    print(f"{'kernel':<52} {'wrong':>5} {'seeds':>5} {'seconds':>8}")
    found = 0
    for item in racy:
        r = search(item, a.racy_seeds, a.max_seconds)
        if isinstance(r, str):
            print(f"{item.name:<52} {'n/a':>5} {0:>5} {0:>8}   refused: {r}")
            continue
        found += r.found
        print(f"{item.name:<52} {'yes' if r.found else 'no':>5} {r.seeds_tried:>5} "
              f"{r.seconds:>8.2f}")
        print("    " + str(r).replace("\n", "\n    "), flush=True)
    print(f"\nfound wrong: {found} of {len(racy)} race-carrying kernels\n")

    print(f"== race-free kernels: lockstep against schedule='adversarial' ({a.seeds} seeds "
          f"each: 1, 2 and {a.seeds - 2} picked from the name), bit for bit\n")
    runs = differ = refused = kernels_run = ordered = 0
    groups: dict = {}
    for item in free:
        res = compare_schedules(item, property_seeds(item.name, a.seeds))
        g = groups.setdefault(item.group, [0, 0, 0, 0, 0])
        if "refused" in res:
            refused += 1
            g[3] += 1
            print(f"{item.name:<52} refused: {res['refused']}")
            continue
        kernels_run += 1
        runs += res["runs"]
        differ += len(res["differ"])
        ordered += len(res["atomic_order"])
        g[0] += 1
        g[1] += res["runs"]
        g[2] += len(res["differ"])
        g[4] += len(res["atomic_order"])
        mark = "" if not res["differ"] else f"   DIFFERS under seeds {res['differ']}"
        if res["atomic_order"]:
            mark += (f"   atomics' order: other bits under seeds {res['atomic_order']}, "
                     f"within the reference's check")
        print(f"{item.name:<52} {res['runs']:>3} seeds {res['seconds']:>7.2f} s{mark}",
              flush=True)
    print()
    for name, (k, n, d, x, o) in groups.items():
        print(f"{name:<8} {k:>4} kernels x seeds = {n:>5} runs, {d} differences"
              f"{f', {x} refused' if x else ''}"
              f"{f', {o} runs of kernels whose answer depends on the order of atomics gave other bits, within the reference' if o else ''}")
    print(f"all      {kernels_run:>4} kernels x seeds = {runs:>5} runs, {differ} differences, "
          f"{refused} refused by the adversarial schedule, {ordered} atomic-order runs "
          f"(other bits, within the reference's check)")
    for eid, why in skipped:
        print(f"skipped corpus/{eid}: {why}")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
