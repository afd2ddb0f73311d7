"""``--scheduler ADDRESS`` (`tilinglib.grading.cluster`): the same class graded on a Dask
LocalCluster of two worker processes gives what ``--jobs 2`` gives, every submission still in
a sandboxed process of its own on a worker; a worker with another tilinglib, or no
scheduler, is refused before anything is graded. Skipped without dask.distributed (the
``cluster`` extra)."""

import importlib.util
import json
import sys
from pathlib import Path

import nbformat
import pytest

distributed = pytest.importorskip("distributed")

from tilinglib.grading import assignments as assignments_module  # noqa: E402
from tilinglib.grading import cluster  # noqa: E402
from tilinglib.grading.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
A1 = "a1_tiled_sgemm"


def _load_bench():
    spec = importlib.util.spec_from_file_location("grade_class", ROOT / "bench" / "grade_class.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("grade_class", module)
    spec.loader.exec_module(module)
    return module


# One of each: a correct kernel, a kernel with a bug (a partial score), an empty one (0),
# one that includes a host file (compile_error), an unreadable notebook, none handed in.
KINDS = ["good_reference_tile8", "bad_int32_index", "empty_no_tile", "hostile_include_passwd",
         "hostile_bad_json", "missing_notebook"]

# Fake assignments, added on the workers by the --setup file's contents: one that spins (the
# CPU limit must stop it there too) and one that reports the process it runs in.
SETUP = '''
import json, os, resource
from tilinglib.grading import Check, GradeReport
from tilinglib.grading.assignments import ASSIGNMENTS, Answer, Assignment

def spin(a):
    while True:
        pass

def where(a):
    info = {"env": sorted(os.environ), "cwd": os.getcwd(), "pid": os.getpid(),
            "ppid": os.getppid(),
            "as": resource.getrlimit(resource.RLIMIT_AS)[0],
            "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0]}
    return GradeReport("where", (Check("where", 1.0, 1.0, True, json.dumps(info)),))

ANSWERS = (Answer("X", "fake-answer", (int,)),)
ASSIGNMENTS["fake_spin"] = Assignment("fake_spin", ANSWERS, 1.0, spin)
ASSIGNMENTS["fake_where"] = Assignment("fake_where", ANSWERS, 1.0, where)
'''


@pytest.fixture(scope="module")
def local_cluster():
    """A LocalCluster of 2 worker processes (not threads of this process), 1 thread each."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as c:
        yield c


def command(directory, out, *extra):
    return main([str(directory), "--quiet", "--timeout", "20", "--memory", "1024",
                 "--out", str(out / "grades.csv"), "--results", str(out / "grades.json"),
                 "--feedback-dir", str(out / "feedback"), *map(str, extra)])


def outcomes(out):
    """{(student, assignment): the outcome without what this run measured (its seconds and
    the grading process's peak memory)} of a results file."""
    got = {}
    for r in json.loads((out / "grades.json").read_text())["results"]:
        o = dict(r["outcome"])
        o.pop("seconds")
        o.pop("peak_memory_bytes")
        got[(r["student"], r["assignment"])] = o
    return got


def test_dask_workers_grade_as_jobs_2_does(tmp_path, local_cluster):
    bench = _load_bench()
    plan = bench.build_class(tmp_path / "submitted", len(KINDS), only=set(KINDS))
    assert sorted(k.name for k in plan.values()) == sorted(KINDS)
    assert command(tmp_path / "submitted", tmp_path / "jobs", "--jobs", "2") == 0
    assert command(tmp_path / "submitted", tmp_path / "dask",
                   "--scheduler", local_cluster.scheduler_address) == 0
    jobs, dask = outcomes(tmp_path / "jobs"), outcomes(tmp_path / "dask")
    assert len(jobs) == len(KINDS)
    # every field of every outcome (status, score, checks, messages, cells, output)
    assert dask == jobs
    by_kind = {plan[s].name: (o["status"], o["score"]) for (s, _), o in dask.items()}
    assert by_kind["good_reference_tile8"] == ("graded", 100.0)
    assert by_kind["empty_no_tile"] == ("graded", 0.0)
    assert by_kind["bad_int32_index"][0] == "graded" and 0 < by_kind["bad_int32_index"][1] < 100
    assert by_kind["hostile_include_passwd"] == ("compile_error", 0.0)
    assert by_kind["hostile_bad_json"] == ("bad_notebook", 0.0)
    assert by_kind["missing_notebook"] == ("missing_notebook", 0.0)
    # the settings block is the same but for what the two runs chose
    s_jobs = json.loads((tmp_path / "jobs" / "grades.json").read_text())["settings"]
    s_dask = json.loads((tmp_path / "dask" / "grades.json").read_text())["settings"]
    assert s_jobs == s_dask


def _fake(root, student, assignment):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("X = 1\n")
    cell.metadata["nbgrader"] = {"grade_id": "fake-answer", "solution": True, "grade": False,
                                 "locked": False, "schema_version": 3}
    nb.cells.append(cell)
    folder = root / student / assignment
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{assignment}.ipynb")


def test_on_a_worker_each_submission_is_still_sandboxed(tmp_path, local_cluster, monkeypatch):
    """The setup file reaches the workers by its contents; the grading process there has the
    sandbox's environment, limits and folder, is not the worker itself, and a spinning grader
    is stopped by the CPU limit."""
    monkeypatch.setattr(assignments_module, "ASSIGNMENTS", dict(assignments_module.ASSIGNMENTS))
    setup = tmp_path / "setup_fakes.py"
    setup.write_text(SETUP)
    _fake(tmp_path / "submitted", "spinner", "fake_spin")
    _fake(tmp_path / "submitted", "prober", "fake_where")
    assert command(tmp_path / "submitted", tmp_path / "out", "--setup", setup, "--cpu", "2",
                   "--scheduler", local_cluster.scheduler_address) == 0
    got = outcomes(tmp_path / "out")
    assert got[("spinner", "fake_spin")]["status"] == "timeout"
    assert "2 s of CPU time" in got[("spinner", "fake_spin")]["message"]
    info = json.loads(got[("prober", "fake_where")]["checks"][0]["message"])
    worker_pids = set(distributed.Client(local_cluster).run(
        lambda: __import__("os").getpid()).values())
    assert info["pid"] not in worker_pids and info["ppid"] in worker_pids
    assert info["as"] == 1024 * 2**20
    assert info["cwd"].rsplit("/", 1)[-1].startswith("tilinglib-grade-")
    assert not [k for k in info["env"] if k.startswith("DASK") or k == "USER"]
    if info["nproc"] != -1:                     # root: the kernel ignores RLIMIT_NPROC
        assert info["nproc"] == 0


def test_a_worker_with_another_tilinglib_is_refused(tmp_path, local_cluster, capsys):
    client = distributed.Client(local_cluster)

    def pretend_other_version():
        import tilinglib.grading.shard as shard
        shard._real_fingerprint = shard.grader_fingerprint
        shard.grader_fingerprint = lambda: {**shard._real_fingerprint(), "tilinglib": "0" * 64}

    def restore():
        import tilinglib.grading.shard as shard
        shard.grader_fingerprint = shard._real_fingerprint

    (tmp_path / "submitted" / "ada" / A1).mkdir(parents=True)
    workers = sorted(client.scheduler_info()["workers"])
    client.run(pretend_other_version, workers=workers[:1])
    try:
        rc = command(tmp_path / "submitted", tmp_path / "out",
                     "--scheduler", local_cluster.scheduler_address)
    finally:
        client.run(restore, workers=workers[:1])
        client.close()
    err = capsys.readouterr().err
    assert rc == 2
    assert f"the worker {workers[0]} grades with another tilinglib" in err
    assert "tilinglib: '" + "0" * 64 in err and "same commit" in err
    assert not (tmp_path / "out" / "grades.json").exists()


def test_no_scheduler_at_the_address_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 2.0)
    (tmp_path / "submitted" / "ada" / A1).mkdir(parents=True)
    rc = command(tmp_path / "submitted", tmp_path / "out", "--scheduler", "tcp://127.0.0.1:9")
    err = capsys.readouterr().err
    assert rc == 2 and "no Dask scheduler answered there" in err and "Traceback" not in err


def test_a_worker_that_cannot_import_tilinglib_is_refused(tmp_path, local_cluster, capsys):
    client = distributed.Client(local_cluster)

    def hide_tilinglib():
        import sys
        sys.modules["tilinglib.grading.shard"] = None         # import fails there

    def restore():
        import importlib
        import sys
        del sys.modules["tilinglib.grading.shard"]
        importlib.import_module("tilinglib.grading.shard")

    (tmp_path / "submitted" / "ada" / A1).mkdir(parents=True)
    workers = sorted(client.scheduler_info()["workers"])
    client.run(hide_tilinglib, workers=workers[-1:])
    try:
        rc = command(tmp_path / "submitted", tmp_path / "out",
                     "--scheduler", local_cluster.scheduler_address)
    finally:
        client.run(restore, workers=workers[-1:])
        client.close()
    err = capsys.readouterr().err
    assert rc == 2 and "a worker could not run tilinglib" in err and "Traceback" not in err
