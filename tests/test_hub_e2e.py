"""The course's JupyterHub (deploy/) end to end, on 127.0.0.1, with real Unix users.

What a class does, in order:

1. `deploy/setup.sh --skip-env` sets up a hub in a temporary folder for one instructor and
   two students, made here as Unix users (random names, random passwords) in two groups of
   their own; the hub is started from the course environment (the one `sudo deploy/setup.sh
   --env-only` makes in /opt/tiling-course/venv; TILING_HUB_ENV names another);
2. everyone logs in through the hub's login form (PAM: their Unix passwords) and starts a
   server; the instructor's has nbgrader's formgrader (its REST API, and its JupyterLab
   plugins in the page config /lab serves), the students' do not, and keep the
   Assignments tab;
3. the instructor generates and releases a1_tiled_sgemm through the formgrader's REST API;
4. each student lists and fetches it through the Assignments tab's endpoints
   (/user/NAME/assignments, as JupyterLab's nbgrader extension calls them); one puts the
   solution into the fetched notebook with the contents API (as saving in JupyterLab does),
   the other hands it in untouched; both submit through the same endpoints;
5. the instructor collects through the formgrader, runs `python -m tilinglib.grading` as
   their own Unix user in the course folder, then nbgrader's autograde (the formgrader's
   button), then writes the saved scores into the gradebook with `--from grades.json
   --sha256 ... --gradebook gradebook.db` (the README's order), and the formgrader then
   shows 100 and 0;
6. a student cannot read another's submission (the exchange's inbound/ and the other's
   home, as that Unix user; the other's server, through the hub);
7. each server runs in its per-user limits (where the hub enforces them: the cgroup's
   limits, and a kernel that allocates past the memory limit is killed while its server
   lives on), and the idle culler runs;
8. afterwards the hub is stopped (it stops the servers), every process of those users is
   gone, and the users, groups and folder are removed, also when a step failed.

Needs root, Linux, and the course environment with the "hub" extra and
configurable-http-proxy. Without them the tests skip with the reason, except under CI=true,
where they fail (.ci/run makes the environment). About a minute and a half.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import hub_session  # noqa: E402

pytestmark = pytest.mark.hub

COURSE = "tiling"
ASSIGNMENT = "a1_tiled_sgemm"
MEM_LIMIT = "1G"


def in_ci(environ=os.environ) -> bool:
    return environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


@pytest.fixture(scope="module")
def hub():
    missing = hub_session.missing_requirements()
    if missing:
        reason = "hub test cannot run: " + "; ".join(missing)
        if in_ci():
            pytest.fail(reason + " (CI=true: failing instead of skipping)", pytrace=False)
        pytest.skip(reason)
    pytest.importorskip("psutil")
    pytest.importorskip("websocket", reason="needs websocket-client (the hub extra)")
    # the hub's log stays in its temporary folder; a failing step quotes its tail
    h = hub_session.ClassHub(2, mem_limit=MEM_LIMIT)
    try:
        h.start()
        yield h
    finally:
        uids = [hub_session.pwd.getpwnam(n).pw_uid for n in h._made_users
                if hub_session._user_exists(n)]
        print("the hub's log, its last lines:\n" + h.log(80))   # shown if a test failed
        left = h.close()
        running = [p.pid for uid in uids for p in hub_session.processes_of(uid)]
        assert not running, f"processes of the test's users outlived the hub: {running}"
        assert not left, f"not removed: {left}"
        assert not any(hub_session._user_exists(n) for n in h._made_users)


@pytest.fixture(scope="module")
def users(hub):
    """Everyone logged in with a running server: {role: HubUser}."""
    people = {"instructor": hub.user(hub.instructor), "alice": hub.user(hub.students[0]),
              "bob": hub.user(hub.students[1])}
    for person in people.values():
        person.login()
        person.start_server()
    return people


def _ok(answer, what):
    status, body = answer
    assert status == 200, f"{what}: HTTP {status}: {str(body)[:500]}"
    assert isinstance(body, dict) and body.get("success", True), f"{what}: {body}"
    return body


def _listing(person):
    body = _ok(person.server("GET", f"assignments?course_id={COURSE}"),
               f"{person.name} lists assignments")
    return body["value"]


@pytest.fixture(scope="module")
def course(hub, users):
    """Release, fetch, edit, submit: what each step answered."""
    instructor, alice, bob = users["instructor"], users["alice"], users["bob"]
    steps = {}
    _ok(instructor.server("POST", f"formgrader/api/assignment/{ASSIGNMENT}/assign"),
        "generate_assignment")
    _ok(instructor.server("POST", f"formgrader/api/assignment/{ASSIGNMENT}/release"),
        "release_assignment")
    action = {"course_id": COURSE, "assignment_id": ASSIGNMENT}
    for person in (alice, bob):
        steps[person.name, "before"] = _listing(person)
        steps[person.name, "fetch"] = _ok(person.server("POST", "assignments/fetch", action),
                                          f"{person.name} fetches")["value"]
    # alice saves the instructor's solution over her copy, as JupyterLab saves a notebook
    solution = json.loads((ROOT / "notebooks" / "assignments" / ASSIGNMENT /
                           f"{ASSIGNMENT}.ipynb").read_text())
    path = f"api/contents/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    status, body = alice.server("PUT", path, {"type": "notebook", "format": "json",
                                              "content": solution})
    assert status == 200, f"alice saves her notebook: HTTP {status}: {body}"
    for person in (alice, bob):
        steps[person.name, "submit"] = _ok(person.server("POST", "assignments/submit", action),
                                           f"{person.name} submits")["value"]
    return steps


def _one(listing, status):
    return [a for a in listing if a["assignment_id"] == ASSIGNMENT and a["status"] == status]


def test_students_fetch_and_submit_through_the_assignments_tab(hub, users, course):
    for person in (users["alice"], users["bob"]):
        assert len(_one(course[person.name, "before"], "released")) == 1
        fetched = _one(course[person.name, "fetch"], "fetched")
        assert fetched and fetched[0]["path"] == ASSIGNMENT
        notebook = hub.home(person.name) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert notebook.is_file() and notebook.stat().st_uid == person.uid
        submitted = _one(course[person.name, "submit"], "submitted")
        # each student sees their own submission, and only theirs
        assert len(submitted) == 1
        assert submitted[0]["student_id"] == person.name


def test_only_the_instructor_has_the_formgrader(users):
    status, body = users["instructor"].server("GET", "formgrader/api/status")
    assert (status, body) == (200, {"status": True})
    for student in ("alice", "bob"):
        assert users[student].server("GET", "formgrader/api/status")[0] == 404


def _lab_disabled_extensions(person) -> set[str]:
    """The JupyterLab plugins turned off in `person`'s page config (what /lab serves)."""
    status, page = person.server("GET", "lab")
    assert status == 200, page
    found = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                      page, re.S)
    assert found, "no page config in /lab"
    return set(json.loads(found.group(1)).get("disabledExtensions", []))


def test_only_the_instructors_lab_shows_the_formgrader(users):
    tools = {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
             "@jupyter/nbgrader:course-list"}
    assert not tools & _lab_disabled_extensions(users["instructor"])
    for student in ("alice", "bob"):
        disabled = _lab_disabled_extensions(users[student])
        assert tools <= disabled
        assert "@jupyter/nbgrader:assignment-list" not in disabled     # the Assignments tab


def test_collect_grade_and_gradebook(hub, users, course):
    instructor = users["instructor"]
    _ok(instructor.server("POST", f"formgrader/api/assignment/{ASSIGNMENT}/collect"), "collect")
    submitted = hub.course_dir / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == sorted(hub.students)
    python = str(hub.env / "bin" / "python")
    graded = hub.run_as(hub.instructor, python, "-m", "tilinglib.grading", "submitted",
                        "--assignment", ASSIGNMENT, cwd=hub.course_dir)
    assert graded.returncode == 0, graded.stderr
    sha = graded.stdout.strip()
    assert len(sha) == 64, graded.stdout
    # nbgrader's autograde (which runs the students' code: README, "Order matters") comes
    # after that run and before the saved scores go in; the formgrader lists a submission
    # as graded only once autograde has seen it.
    for student in hub.students:
        _ok(instructor.server("POST", f"formgrader/api/submission/{ASSIGNMENT}/{student}/"
                                      f"autograde", timeout=300), f"autograde {student}")
    written = hub.run_as(hub.instructor, python, "-m", "tilinglib.grading", "--from",
                         "grades.json", "--sha256", sha, "--gradebook", "gradebook.db",
                         cwd=hub.course_dir)
    assert written.returncode == 0, written.stderr
    status, rows = instructor.server("GET", f"formgrader/api/submissions/{ASSIGNMENT}")
    assert status == 200, rows
    scores = {row["student"]: (row["score"], row["max_score"]) for row in rows}
    alice, bob = hub.students
    assert scores == {alice: (100.0, 100.0), bob: (0.0, 100.0)}
    grades = (hub.course_dir / "grades.csv").read_text()
    assert f"{alice},{ASSIGNMENT},100" in grades and f"{bob},{ASSIGNMENT},0" in grades


def test_a_student_cannot_read_another_students_submission(hub, users, course):
    """nbgrader's exchange: inbound/ can be written and not listed (mode 733), and each
    submission's folder ends in 9 random bytes (os.urandom, 12 base64 characters), so no
    student can find another's. The files in it are world-readable (the instructor, another
    user, must collect them): the folder's name is the secret, as nbgrader designs it."""
    alice, bob = users["alice"], users["bob"]
    inbound = hub.exchange / COURSE / "inbound"
    hers = [p for p in inbound.iterdir() if p.name.startswith(alice.name + "+")]
    assert len(hers) == 1, "alice's submission is not in the exchange"
    assert re.fullmatch(rf"{alice.name}\+{ASSIGNMENT}\+[^+]+\+[A-Za-z0-9_-]{{12}}",
                        hers[0].name), hers[0].name
    her_copy = hub.home(alice.name) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    her_cache = hub.home(alice.name) / ".local" / "share" / "jupyter" / "nbgrader_cache"
    assert her_cache.is_dir()            # nbgrader keeps her submission there too
    for command in (["ls", str(inbound)], ["cat", str(her_copy)],
                    ["ls", str(hub.home(alice.name))], ["ls", "-R", str(her_cache)],
                    ["find", str(hub.exchange), "-name", f"{alice.name}+*"]):
        result = hub.run_as(bob.name, *command)
        assert "Permission denied" in result.stderr and alice.name + "+" not in result.stdout, \
            f"bob could run {command}: {result.stdout[:200]}"
    # ... and bob can hand in: inbound/ is writable, not readable (nbgrader's modes)
    assert oct(inbound.stat().st_mode & 0o777) == oct(0o733)
    # through the hub: bob's token opens no door of alice's server
    status, _ = bob.request("GET", f"/user/{alice.name}/api/contents/{ASSIGNMENT}")
    assert status in (403, 404)
    assert not any(a.get("student_id") == alice.name for a in _listing(bob))


def test_each_server_runs_in_its_limits(hub, users):
    bob = users["bob"]
    channels = bob.kernel_channels(bob.start_kernel())
    try:
        reply = channels.execute("import os, tilinglib as tl\n"
                                 "print(tl.backend_name(), os.getuid())")
        assert reply["status"] == "ok", reply
        assert reply["stdout"].split() == ["emulator", str(bob.uid)]
        in_effect = hub.run_as(bob.name, "cat", "/proc/self/cgroup").stdout
        if hub_session.user_cgroup(bob.name, "memory") is None:
            pytest.skip("this machine enforces no per-user limit (no systemd, cgroup v1 not "
                        "writable): the hub runs plain LocalProcessSpawner")
        memory = hub_session.user_cgroup(bob.name, "memory")
        assert int((memory / "memory.limit_in_bytes").read_text()) == 2**30
        cpu = hub_session.user_cgroup(bob.name, "cpu")
        quota = int((cpu / "cpu.cfs_quota_us").read_text())
        assert quota == int((cpu / "cpu.cfs_period_us").read_text())    # 1 core
        pids = {int(p) for p in (memory / "cgroup.procs").read_text().split()}
        servers = [p.pid for p in hub_session.processes_of(bob.uid)]
        assert set(servers) <= pids, (servers, pids, in_effect)
        # 1.5 GiB in a 1 GiB limit: the kernel is killed, the server is not
        reply = channels.execute("import numpy as np\n"
                                 "a = np.ones(3 * 2**27)\n"
                                 "print(a.sum())", timeout=120)
        assert reply["status"] == "dead", reply      # killed, not a MemoryError
    finally:
        channels.close()
    status, _ = bob.server("GET", "api/status")
    assert status == 200
    channels = bob.kernel_channels(bob.start_kernel())
    try:
        assert channels.execute("print(6 * 7)")["stdout"] == "42\n"
    finally:
        channels.close()


def test_the_idle_culler_runs(hub):
    import psutil
    culler = [p for p in psutil.Process(hub.proc.pid).children(recursive=True)
              if "jupyterhub_idle_culler" in " ".join(p.cmdline())]
    assert len(culler) == 1
    assert f"--timeout={hub.cull_timeout}" in culler[0].cmdline()
