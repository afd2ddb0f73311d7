"""A class on the course's JupyterHub at once: N students log in, start their servers and run
a lesson together, each through its own kernel's websocket channels; measured.

    sudo deploy/setup.sh --env-only                  # once: the course environment
    sudo /opt/tiling-course/venv/bin/python bench/hub_load.py          # 10 students, lesson 03
    sudo /opt/tiling-course/venv/bin/python bench/hub_load.py --students 30 \
        --out bench/results/hub_load_30.json
    sudo /opt/tiling-course/venv/bin/python bench/hub_load.py --students 5 \
        --lesson notebooks/08_to_cublas.ipynb

(any Python with psutil, websocket-client and jupyter_client does: the "hub" extra.)

As root (it makes the students as Unix users, and removes them afterwards, also on failure
or Ctrl-C), on 127.0.0.1 only, with the hub of deploy/ set up by deploy/setup.sh
--skip-env in a temporary folder (bench/hub_session.py; TILING_HUB_ENV names another
course environment than /opt/tiling-course/venv). Every server runs the CPU emulator.

Phases, each timed:
  1. the hub starts;
  2. all N students at once: log in (the login form, PAM), make a token, start a server;
  3. one student runs the lesson alone (a fresh kernel, started and answering, then every
     code cell in order over the kernel's websocket: JupyterLab's "Run All");
  4. all N at once (a barrier), each in a fresh kernel: the same lesson; then, while every
     kernel is still alive, the resident memory (RSS) and CPU seconds used so far of each
     student's processes (the server, jupyterhub-singleuser; the kernel, ipykernel; other:
     the clang tilinglib's front end keeps started), the hub's and the proxy's RSS.
Prints each student's figures and a summary (min, median, max); errors (a cell that failed,
a server that did not start, a phase past its deadline) are counted and listed. --out
writes everything as JSON. Bounded: at most 60 students, --deadline seconds in all.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hub_session  # noqa: E402

ROOT = hub_session.ROOT
MAX_STUDENTS = 60
MiB = 2**20


def code_cells(path: Path) -> list[str]:
    notebook = json.loads(path.read_text())
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in notebook["cells"] if c["cell_type"] == "code"]


def run_lesson(user: hub_session.HubUser, cells: list[str], cell_timeout: float) -> dict:
    """A fresh kernel on `user`'s server runs `cells`; returns seconds and errors. The kernel
    is left running (for the memory sample); its id is returned."""
    t0 = time.monotonic()
    kernel = user.start_kernel()
    channels = user.kernel_channels(kernel)
    errors = []
    try:
        ready = channels.execute("pass", timeout=cell_timeout)    # the kernel is up
        if ready["status"] != "ok":
            errors.append(f"kernel start: {ready['status']}")
        started = time.monotonic() - t0
        t1 = time.monotonic()
        for index, code in enumerate(cells):
            reply = channels.execute(code, timeout=cell_timeout)
            if reply["status"] != "ok":
                errors.append(f"cell {index}: {reply['status']} {reply.get('ename') or ''} "
                              f"{(reply.get('evalue') or '')[:200]}".rstrip())
                break
        lesson = time.monotonic() - t1
    finally:
        channels.close()
    return {"kernel": kernel, "kernel_start_s": started, "lesson_s": lesson, "errors": errors}


def memory_of(user: hub_session.HubUser) -> dict:
    """RSS in MiB of the user's server and kernel processes."""
    server = kernel = other = 0
    cpu = {"server": 0.0, "kernel": 0.0, "other": 0.0}
    names = []
    for proc in hub_session.processes_of(user.uid):
        try:
            rss = proc.info["memory_info"].rss
            cmd = " ".join(proc.info["cmdline"] or [])
            times = proc.cpu_times()
        except Exception:
            continue
        seconds = times.user + times.system
        if "ipykernel" in cmd:
            kernel += rss
            cpu["kernel"] += seconds
        elif "jupyterhub-singleuser" in cmd:
            server += rss
            cpu["server"] += seconds
        else:
            other += rss
            cpu["other"] += seconds
            names.append(proc.info.get("name") or cmd.split(" ")[0])
    return {"server_mib": server / MiB, "kernel_mib": kernel / MiB, "other_mib": other / MiB,
            "other": sorted(set(names)), "total_mib": (server + kernel + other) / MiB,
            "server_cpu_s": cpu["server"], "kernel_cpu_s": cpu["kernel"],
            "other_cpu_s": cpu["other"]}


def hub_memory(hub: hub_session.ClassHub) -> dict:
    import psutil
    out = {"hub_mib": 0.0, "proxy_mib": 0.0, "culler_mib": 0.0}
    root = psutil.Process(hub.proc.pid)
    out["hub_mib"] = root.memory_info().rss / MiB
    for child in root.children(recursive=True):
        try:
            cmd = " ".join(child.cmdline())
            if "configurable-http-proxy" in cmd:
                out["proxy_mib"] += child.memory_info().rss / MiB
            elif "jupyterhub_idle_culler" in cmd:
                out["culler_mib"] += child.memory_info().rss / MiB
        except psutil.Error:
            continue
    return out


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    return (f"min {min(values):.1f}  median {statistics.median(values):.1f}  "
            f"max {max(values):.1f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=10,
                   help=f"how many at once (default 10, at most {MAX_STUDENTS})")
    p.add_argument("--lesson", type=Path, default=ROOT / "notebooks" / "03_tiled_kernel.ipynb")
    p.add_argument("--mem-limit", default="2G", help="per student (deploy's default 2G)")
    p.add_argument("--cpu-limit", type=float, default=1.0)
    p.add_argument("--deadline", type=float, default=1200,
                   help="seconds for the whole run; past it the run stops (default 1200)")
    p.add_argument("--cell-timeout", type=float, default=300)
    p.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = p.parse_args(argv)
    if not 1 <= args.students <= MAX_STUDENTS:
        p.error(f"--students is 1 to {MAX_STUDENTS}")
    missing = hub_session.missing_requirements()
    if missing:
        print("hub_load.py cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    args.lesson = args.lesson.resolve()
    if not args.lesson.is_file():
        p.error(f"no lesson notebook {args.lesson}")
    cells = code_cells(args.lesson)
    t_begin = time.monotonic()
    deadline = t_begin + args.deadline
    result = {"students": args.students, "lesson": str(args.lesson.relative_to(ROOT))
              if args.lesson.is_relative_to(ROOT) else str(args.lesson),
              "code_cells": len(cells), "mem_limit": args.mem_limit,
              "cpu_limit": args.cpu_limit, "errors": []}
    result["machine"] = {"cpus": os.cpu_count(),
                         "mem_gib": round(os.sysconf("SC_PAGE_SIZE") *
                                          os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}
    # The machine may be shared: its load before and after says how much the figures owe
    # to others.
    result["load_average_before"] = os.getloadavg()
    hub = hub_session.ClassHub(args.students, mem_limit=args.mem_limit,
                               cpu_limit=args.cpu_limit)
    try:
        t0 = time.monotonic()
        hub.setup()
        result["setup_s"] = time.monotonic() - t0
        result["hub_start_s"] = hub.start()
        print(f"{args.students} students; hub set up in {result['setup_s']:.1f} s, "
              f"started in {result['hub_start_s']:.1f} s", flush=True)
        users = [hub.user(name) for name in hub.students]
        per = {u.name: {} for u in users}

        def arrive(user):
            per[user.name]["login_s"] = user.login()
            per[user.name]["server_start_s"] = user.start_server(
                timeout=max(10.0, deadline - time.monotonic()))

        t0 = time.monotonic()
        with ThreadPoolExecutor(args.students) as pool:
            futures = {u.name: pool.submit(arrive, u) for u in users}
        for name, fut in futures.items():
            if fut.exception():
                result["errors"].append(f"{name}: {fut.exception()}")
        result["all_servers_s"] = time.monotonic() - t0
        ready = [u for u in users if "server_start_s" in per[u.name]]
        print(f"servers: {len(ready)} of {args.students} up, all in "
              f"{result['all_servers_s']:.1f} s", flush=True)
        if not ready:
            raise hub_session.HubError("no server started")

        solo = run_lesson(ready[0], cells, args.cell_timeout)
        ready[0].server("DELETE", f"api/kernels/{solo['kernel']}")
        result["solo"] = {k: v for k, v in solo.items() if k != "kernel"}
        result["errors"] += [f"{ready[0].name} alone: {e}" for e in solo["errors"]]
        print(f"lesson alone: {solo['lesson_s']:.1f} s (kernel start "
              f"{solo['kernel_start_s']:.1f} s)", flush=True)

        barrier = threading.Barrier(len(ready))
        finished = threading.Barrier(len(ready) + 1)

        def lesson(user):
            barrier.wait(timeout=max(1.0, deadline - time.monotonic()))
            try:
                return run_lesson(user, cells, args.cell_timeout)
            finally:
                finished.wait(timeout=max(1.0, deadline - time.monotonic()))

        t0 = time.monotonic()
        with ThreadPoolExecutor(len(ready)) as pool:
            futures = {u.name: pool.submit(lesson, u) for u in ready}
            finished.wait(timeout=max(1.0, deadline - time.monotonic()))
            result["all_lessons_s"] = time.monotonic() - t0
            # every kernel still alive: the memory of a class mid-lesson
            for u in ready:
                per[u.name]["memory"] = memory_of(u)
            result["hub_memory"] = hub_memory(hub)
        for name, fut in futures.items():
            if fut.exception():
                result["errors"].append(f"{name}: {fut.exception()!r}")
            else:
                r = fut.result()
                per[name].update({k: v for k, v in r.items() if k != "kernel"})
                result["errors"] += [f"{name}: {e}" for e in r["errors"]]
        result["per_student"] = per
    except Exception as exc:
        result["errors"].append(f"run stopped: {exc!r}")
    finally:
        left = hub.close()
        if left:
            result["errors"].append(f"not removed: {left}")
    result["load_average_after"] = os.getloadavg()
    result["wall_s"] = time.monotonic() - t_begin
    report(result)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, default=float) + "\n")
    return 1 if result["errors"] else 0


def fmt_load(load) -> str:
    return " ".join(f"{x:.1f}" for x in load)


def report(r: dict) -> None:
    per = r.get("per_student", {})
    print()
    print(f"{'student':<14}{'login s':>9}{'server s':>10}{'kernel s':>10}{'lesson s':>10}"
          f"{'server MiB':>12}{'kernel MiB':>12}{'other MiB':>11}{'errors':>8}")
    for name, s in per.items():
        m = s.get("memory", {})
        print(f"{name:<14}{s.get('login_s', float('nan')):>9.2f}"
              f"{s.get('server_start_s', float('nan')):>10.1f}"
              f"{s.get('kernel_start_s', float('nan')):>10.1f}"
              f"{s.get('lesson_s', float('nan')):>10.1f}"
              f"{m.get('server_mib', float('nan')):>12.0f}{m.get('kernel_mib', float('nan')):>12.0f}"
              f"{m.get('other_mib', float('nan')):>11.0f}"
              f"{len(s.get('errors', [])):>8}")
    col = lambda key: [s[key] for s in per.values() if key in s]  # noqa: E731
    mem = lambda key: [s["memory"][key] for s in per.values() if "memory" in s]  # noqa: E731
    print()
    print(f"lesson {r['lesson']} ({r['code_cells']} code cells), {r['students']} students, "
          f"limits {r['mem_limit']} / {r['cpu_limit']:g} CPU each, machine "
          f"{r['machine']['cpus']} CPUs / {r['machine']['mem_gib']} GiB")
    if "hub_start_s" in r:
        print(f"hub start            {r['hub_start_s']:.1f} s")
    if "all_servers_s" in r:
        print(f"server start         {spread(col('server_start_s'))} s "
              f"(all {r['students']} at once: {r['all_servers_s']:.1f} s)")
    if "solo" in r:
        solo = r["solo"]["lesson_s"]
        together = col("lesson_s")
        print(f"lesson alone         {solo:.1f} s")
        if together:
            print(f"lesson, all at once  {spread(together)} s  "
                  f"(median {statistics.median(together) / solo:.1f}x alone)")
    if mem("total_mib"):
        others = sorted({n for s in per.values() for n in s.get("memory", {}).get("other", [])})
        print(f"RSS per student      {spread(mem('total_mib'))} MiB")
        print(f"  server             {spread(mem('server_mib'))} MiB")
        print(f"  kernel             {spread(mem('kernel_mib'))} MiB")
        print(f"  other ({', '.join(others) or 'none'})  {spread(mem('other_mib'))} MiB")
    if mem("server_cpu_s"):
        print(f"CPU-s per student    server {spread(mem('server_cpu_s'))} (its start, the "
              f"lesson's traffic); kernel {spread(mem('kernel_cpu_s'))} (the lesson); "
              f"other {spread(mem('other_cpu_s'))}")
    if "hub_memory" in r:
        h = r["hub_memory"]
        print(f"RSS hub / proxy / culler  {h['hub_mib']:.0f} / {h['proxy_mib']:.0f} / "
              f"{h['culler_mib']:.0f} MiB")
    print(f"load average (1, 5, 15 min) before {fmt_load(r['load_average_before'])}, "
          f"after {fmt_load(r['load_average_after'])}")
    print(f"errors               {len(r['errors'])}")
    for e in r["errors"][:20]:
        print(f"  {e}")
    print(f"wall                 {r['wall_s']:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
