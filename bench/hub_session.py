"""A JupyterHub set up by deploy/setup.sh on 127.0.0.1, with throw-away Unix users, and a
client that does what a student's browser does: what tests/test_hub_e2e.py and
bench/hub_load.py share.

`ClassHub` runs `deploy/setup.sh --skip-env` into a temporary folder (users, groups, the
exchange, the global nbgrader_config.py, the hub's configuration, all under that folder or
named with a random tag), starts the hub from the course environment (by default the one
`sudo deploy/setup.sh --env-only` makes, /opt/tiling-course/venv; TILING_HUB_ENV names
another) on free loopback ports, and `close()` stops it, ends every process of its users,
removes the users, their groups and the folder, whatever happened before.

`HubUser` logs in through the hub's login form (PAM, the user's Unix password), makes an
API token, starts its server and talks to it: nbgrader's REST endpoints as JupyterLab's
Assignments tab and formgrader call them, the contents API, and a kernel's websocket
channels (jupyter_client's message format over websocket-client).

Needs root (it makes Unix users), the "hub" extra in the course environment, and
configurable-http-proxy beside it. Linux only. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import grp
import http.cookiejar
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ENV = Path("/opt/tiling-course/venv")
HUB_START_S = 60


def course_env() -> Path:
    return Path(os.environ.get("TILING_HUB_ENV", str(DEFAULT_ENV)))


def _package_files(top: Path) -> dict[str, bytes]:
    """tilinglib's files as shipped (the package data pyproject.toml names)."""
    files = {}
    for pattern in ("**/*.py", "kernels/*.cu", "data/*.json"):
        for path in top.glob(pattern):
            if "__pycache__" not in path.parts:
                files[str(path.relative_to(top))] = path.read_bytes()
    return files


def missing_requirements(env: Path | None = None) -> list[str]:
    """Why a hub cannot be run here (empty when it can)."""
    env = env or course_env()
    how = "sudo deploy/setup.sh --env-only (or set TILING_HUB_ENV to such an environment)"
    if sys.platform != "linux":
        return ["the hub test runs on Linux only"]
    if os.geteuid() != 0:
        return ["needs root: it makes Unix users and the hub starts servers as them"]
    missing = [f"no {tool}" for tool in ("useradd", "userdel", "chpasswd", "runuser")
               if shutil.which(tool) is None]
    python = env / "bin" / "python"
    if not (env / "bin" / "jupyterhub").exists():
        return missing + [f"no course environment at {env}: {how}"]
    probe = subprocess.run(
        ["runuser", "-u", "nobody", "--", str(python), "-c",
         "import tilinglib, jupyterhub, nbgrader, jupyterhub_idle_culler, jupyterlab; "
         "print(tilinglib.__file__)"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if probe.returncode != 0:
        return missing + [f"the course environment {env} cannot be used by an unprivileged "
                          f"user ({probe.stderr.strip().splitlines()[-1:]}): {how}"]
    installed = Path(probe.stdout.strip()).parent
    if installed.resolve() != (ROOT / "tilinglib").resolve() and \
            _package_files(installed) != _package_files(ROOT / "tilinglib"):
        missing.append(f"the course environment {env} has another tilinglib than this "
                       f"checkout: run {how} again")
    proxy = env.parent / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
    if not proxy.exists() and shutil.which("configurable-http-proxy") is None:
        missing.append(f"no configurable-http-proxy at {proxy} or on PATH: {how}")
    return missing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def processes_of(uid: int):
    import psutil
    for proc in psutil.process_iter(["uids", "cmdline", "memory_info", "name"]):
        try:
            if proc.info["uids"] and proc.info["uids"].real == uid:
                yield proc
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue


class HubError(RuntimeError):
    pass


class ClassHub:
    """A hub for one instructor and `students` students, in a temporary folder.

    Use as a context manager, or call `start()` and, always, `close()`."""

    def __init__(self, students: int, *, env: Path | None = None, mem_limit: str = "1G",
                 cpu_limit: float = 1.0, course_id: str = "tiling", cull_timeout: int = 3600,
                 log_path: Path | None = None):
        self.env = env or course_env()
        self.tag = "tlt" + secrets.token_hex(3)
        self.instructor = self.tag + "i"
        self.students = [f"{self.tag}s{k:02d}" for k in range(1, students + 1)]
        self.groups = [f"{self.tag}-students", f"{self.tag}-instructors"]
        self.course_id = course_id
        self.mem_limit, self.cpu_limit, self.cull_timeout = mem_limit, cpu_limit, cull_timeout
        self.base: Path | None = None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.passwords: dict[str, str] = {}
        self.log_path = log_path
        self._made_users: list[str] = []

    # -- paths -------------------------------------------------------------------------
    @property
    def exchange(self) -> Path:
        return self.base / "exchange"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def etc(self) -> Path:
        return self.base / "etc"

    def home(self, user: str) -> Path:
        return self.base / "home" / user

    @property
    def course_dir(self) -> Path:
        return self.home(self.instructor) / self.course_id

    # -- set up, start, stop -------------------------------------------------------------
    def setup(self) -> str:
        """deploy/setup.sh --skip-env into the temporary folder; returns what it printed."""
        if self.env.name != "venv":
            raise HubError(f"the course environment must be a folder named venv (setup.sh's "
                           f"PREFIX/venv), not {self.env}")
        self.base = Path(tempfile.mkdtemp(prefix="tiling-hub-", dir="/tmp"))
        self.base.chmod(0o755)                  # homes and the exchange are below it
        students_file = self.base / "students.txt"
        students_file.write_text("# the class\n" + "\n".join(self.students) + "\n")
        command = [
            "bash", str(ROOT / "deploy" / "setup.sh"), "--skip-env", "--no-service",
            "--prefix", str(self.env.parent), "--course-id", self.course_id,
            "--instructor", self.instructor, "--students", str(students_file),
            "--etc", str(self.etc), "--state", str(self.state),
            "--exchange", str(self.exchange), "--jupyter-config", str(self.base / "jupyter"),
            "--home-base", str(self.base / "home"),
            "--student-group", self.groups[0], "--instructor-group", self.groups[1],
            "--bind-url", f"http://127.0.0.1:{self.port}",
            "--hub-port", str(free_port()), "--proxy-api-port", str(free_port()),
            "--mem-limit", self.mem_limit, "--cpu-limit", str(self.cpu_limit),
            "--cull-timeout", str(self.cull_timeout), "--backend", "emulator"]
        names = [self.instructor] + self.students
        taken = [n for n in names + self.groups if _user_exists(n) or _group_exists(n)]
        if taken:       # never remove what this hub did not make
            raise HubError(f"users or groups of these names exist already: {taken}")
        self._made_users = names                                # close() removes them
        result = subprocess.run(command, capture_output=True, text=True,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise HubError(f"deploy/setup.sh failed ({result.returncode}):\n"
                           f"{result.stdout}\n{result.stderr}")
        for line in (self.state / "initial-passwords").read_text().splitlines():
            name, password = line.split(" ", 1)
            self.passwords[name] = password
        return result.stdout

    def hub_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("JUPYTER", "JPY_", "TILING", "VIRTUAL_ENV", "CONFIGPROXY"))}
        for line in (self.etc / "hub.env").read_text().splitlines():
            key, _, value = line.partition("=")
            env[key] = value
        env["PATH"] = os.pathsep.join([str(self.env / "bin"), "/usr/local/bin", "/usr/bin",
                                       "/bin", "/usr/sbin", "/sbin"])
        return env

    def start(self) -> float:
        """Set up (if not yet) and start the hub; returns seconds until its API answered."""
        if self.base is None:
            self.setup()
        log_path = self.log_path or (self.base / "hub.log")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(log_path, "w")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [str(self.env / "bin" / "jupyterhub"), "-f", str(self.etc / "jupyterhub_config.py")],
            cwd=self.state, env=self.hub_env(), stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.log_file = log_path
        deadline = t0 + HUB_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise HubError(f"the hub exited ({self.proc.returncode}):\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/hub/api/", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - t0
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        raise HubError(f"the hub did not answer within {HUB_START_S} s:\n{self.log()}")

    def log(self, tail: int = 60) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-tail:])
        except (AttributeError, OSError):
            return ""

    def stop(self) -> None:
        """Stop the hub (it stops every server and its proxy), then end whatever of its
        users is left."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)     # the proxy, the culler
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        for name in self._made_users:
            self._kill_processes_of(name)

    def _kill_processes_of(self, name: str) -> None:
        try:
            uid = pwd.getpwnam(name).pw_uid
        except KeyError:
            return
        for _ in range(50):
            procs = list(processes_of(uid))
            if not procs:
                return
            for proc in procs:
                try:
                    proc.kill()
                except Exception:
                    pass
            time.sleep(0.1)

    def close(self) -> list[str]:
        """Stop everything and remove the users, groups and folder; returns what could not
        be removed (empty when all went)."""
        left = []
        try:
            self.stop()
        finally:
            for name in self._made_users:
                if _user_exists(name):
                    subprocess.run(["userdel", "--remove", name], capture_output=True)
                    if _user_exists(name):
                        left.append(f"user {name}")
                # useradd --user-group made a group of the user's name
                if _group_exists(name):
                    subprocess.run(["groupdel", name], capture_output=True)
            for group in self.groups:
                if _group_exists(group):
                    subprocess.run(["groupdel", group], capture_output=True)
                    if _group_exists(group):
                        left.append(f"group {group}")
            for name in self._made_users:
                for root in _cgroup_roots():
                    try:
                        (root / name).rmdir()
                    except OSError:
                        pass
            for root in _cgroup_roots():
                try:
                    root.rmdir()              # only when no other hub's users are in it
                except OSError:
                    pass
            if self.base is not None:
                shutil.rmtree(self.base, ignore_errors=True)
                if self.base.exists():
                    left.append(f"folder {self.base}")
        return left

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    # -- helpers ---------------------------------------------------------------------------
    def user(self, name: str) -> "HubUser":
        return HubUser(self, name, self.passwords[name])

    def run_as(self, name: str, *command: str, cwd: Path | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess:
        """`command` as Unix user `name`, with the course environment's PATH and a login
        HOME (what a terminal on that user's server gives)."""
        env = {"PATH": self.hub_env()["PATH"], "HOME": str(self.home(name)), "USER": name,
               "LANG": "C.UTF-8", "TILINGLIB_BACKEND": "emulator"}
        jupyter_config = self.base / "jupyter"
        env["JUPYTER_CONFIG_PATH"] = (f"{self.etc / 'instructor-config'}:{jupyter_config}"
                                      if name == self.instructor else str(jupyter_config))
        return subprocess.run(["runuser", "-u", name, "--", "env", "-i",
                               *[f"{k}={v}" for k, v in env.items()], *command],
                              cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _cgroup_roots() -> list[Path]:
    """Where deploy/jupyterhub_config.py's CgroupLocalProcessSpawner makes each user's
    cgroups (below this process's own; the hub started from here shares them)."""
    roots = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return roots
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if controller in ("memory", "cpu"):
                roots.append(Path("/sys/fs/cgroup") / controller / path.lstrip("/") /
                             "tiling-hub")
    return roots


def user_cgroup(name: str, controller: str) -> Path | None:
    for root in _cgroup_roots():
        if root.parts[4] == controller and (root / name).is_dir():
            return root / name
    return None


# -- a user's browser ------------------------------------------------------------------------

class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class HubUser:
    """One user of a `ClassHub`, through HTTP on 127.0.0.1 as a browser would."""

    def __init__(self, hub: ClassHub, name: str, password: str):
        self.hub, self.name, self.password = hub, name, password
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies), _NoRedirect())
        self.token: str | None = None

    @property
    def uid(self) -> int:
        return pwd.getpwnam(self.name).pw_uid

    def _cookie(self, name: str) -> str | None:
        return next((c.value for c in self.cookies if c.name == name), None)

    def request(self, method: str, path: str, body=None, *, form: dict | None = None,
                timeout: float = 120, token: bool = True) -> tuple[int, object]:
        """(status, JSON or text) of `method path` on the hub's public address."""
        headers = {}
        data = None
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if token and self.token:
            headers["Authorization"] = f"token {self.token}"
        xsrf = self._cookie("_xsrf")
        if xsrf:
            headers["X-XSRFToken"] = xsrf
        req = urllib.request.Request(self.hub.url + path, data=data, headers=headers,
                                     method=method)
        try:
            with self.opener.open(req, timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        text = raw.decode(errors="replace")
        try:
            return status, json.loads(text) if text else None
        except json.JSONDecodeError:
            return status, text

    def login(self) -> float:
        """The login form with the Unix password, then an API token made with the session's
        cookies; returns the seconds both took."""
        t0 = time.monotonic()
        self.request("GET", "/hub/login", token=False)
        xsrf = self._cookie("_xsrf")
        status, body = self.request("POST", "/hub/login", token=False,
                                    form={"username": self.name, "password": self.password,
                                          "_xsrf": xsrf or ""})
        if status != 302:
            raise HubError(f"{self.name}: login answered {status}, not a redirect: "
                           f"{str(body)[:300]}")
        status, body = self.request("POST", f"/hub/api/users/{self.name}/tokens",
                                    {"note": "tiling-hub test", "expires_in": 3600},
                                    token=False)
        if status not in (200, 201):
            raise HubError(f"{self.name}: making a token answered {status}: {body}")
        self.token = body["token"]
        return time.monotonic() - t0

    def start_server(self, timeout: float = 300) -> float:
        """Start this user's server and wait until the hub says it is ready; returns the
        seconds that took."""
        t0 = time.monotonic()
        status, body = self.request("POST", f"/hub/api/users/{self.name}/server")
        if status not in (201, 202, 400):      # 400: already running
            raise HubError(f"{self.name}: starting the server answered {status}: {body}")
        deadline = t0 + timeout
        while time.monotonic() < deadline:
            status, body = self.request("GET", f"/hub/api/users/{self.name}")
            server = (body or {}).get("servers", {}).get("") if status == 200 else None
            if server and server.get("ready"):
                return time.monotonic() - t0
            if status == 200 and not server and time.monotonic() - t0 > 5:
                raise HubError(f"{self.name}: the server stopped while starting:\n"
                               f"{self.hub.log()}")
            time.sleep(0.25)
        raise HubError(f"{self.name}: the server was not ready within {timeout} s")

    def server(self, method: str, path: str, body=None, **kwargs):
        """A request to this user's own server, /user/NAME/PATH."""
        return self.request(method, f"/user/{self.name}/{path.lstrip('/')}", body, **kwargs)

    # -- a kernel over its websocket ---------------------------------------------------------
    def start_kernel(self) -> str:
        status, body = self.server("POST", "api/kernels", {"name": "python3"})
        if status != 201:
            raise HubError(f"{self.name}: starting a kernel answered {status}: {body}")
        return body["id"]

    def kernel_channels(self, kernel_id: str) -> "KernelChannels":
        return KernelChannels(self, kernel_id)


class KernelChannels:
    """A kernel's /channels websocket: execute code cell by cell, as JupyterLab does."""

    def __init__(self, user: HubUser, kernel_id: str, connect_timeout: float = 300):
        """Opens the websocket; the server answers the upgrade once the kernel is up, which
        for many kernels starting at once on a small machine takes long (30 kernels on 2
        cores: more than 30 s for a third of them)."""
        import websocket
        from jupyter_client.session import Session
        self.session = Session(username=user.name)
        url = (user.hub.url.replace("http://", "ws://") +
               f"/user/{user.name}/api/kernels/{kernel_id}/channels?session_id="
               f"{self.session.session}")
        self.ws = websocket.create_connection(url, timeout=connect_timeout,
                                              header=[f"Authorization: token {user.token}"])

    def execute(self, code: str, timeout: float = 300) -> dict:
        """Run `code`; returns {"status": "ok"|"error"|"dead", "ename", "evalue", "stdout",
        "seconds"}. "dead" means the kernel went away (restarting or dead) meanwhile."""
        from jupyter_client.jsonutil import json_default
        msg = self.session.msg("execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        msg["channel"] = "shell"
        msg_id = msg["header"]["msg_id"]
        t0 = time.monotonic()
        self.ws.send(json.dumps(msg, default=json_default))
        result = {"status": None, "stdout": "", "ename": None, "evalue": None}
        idle = False
        deadline = t0 + timeout
        while time.monotonic() < deadline and not (idle and result["status"]):
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                reply = json.loads(self.ws.recv())
            except Exception as exc:            # closed, or the deadline passed
                result.setdefault("error", repr(exc))
                break
            msg_type = reply.get("msg_type") or reply["header"]["msg_type"]
            content = reply.get("content", {})
            if msg_type == "status" and content.get("execution_state") in ("restarting", "dead"):
                result["status"] = "dead"
                break
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg_type == "stream" and content.get("name") == "stdout":
                result["stdout"] += content.get("text", "")
            elif msg_type == "error":
                result["ename"], result["evalue"] = content.get("ename"), content.get("evalue")
            elif msg_type == "execute_reply":
                result["status"] = content.get("status")
                if content.get("status") == "error":
                    result["ename"] = result["ename"] or content.get("ename")
                    result["evalue"] = result["evalue"] or content.get("evalue")
            elif msg_type == "status" and content.get("execution_state") == "idle":
                idle = True
        result["seconds"] = time.monotonic() - t0
        if result["status"] is None:
            result["status"] = "timeout"
        return result

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass

