# JupyterHub for one machine (up to about 50 students): the course on every student's own
# server, nbgrader's exchange between real Unix users, the instructor's formgrader.
#
# deploy/setup.sh installs this file as /etc/tiling-hub/jupyterhub_config.py together with
# /etc/tiling-hub/hub.env, which sets the TILING_HUB_* variables read below, and starts
#     /opt/tiling-course/venv/bin/jupyterhub -f /etc/tiling-hub/jupyterhub_config.py
# as root (the hub has to be root to start servers as other users), from that environment:
# every server runs the same environment's jupyterhub-singleuser (sys.prefix below).
#
# Who gets in: the Unix users of two groups, checked by PAM with their own Unix passwords.
# Members of TILING_HUB_INSTRUCTOR_GROUP are hub admins and get the formgrader; members of
# TILING_HUB_STUDENT_GROUP get a server with the Assignments tab and nothing to grade with.
#
# Limits (TILING_HUB_MEM_LIMIT, TILING_HUB_CPU_LIMIT) are per user, for the server and all of
# its kernels together:
#   - where systemd runs the machine (a fresh Debian) and jupyterhub-systemdspawner is
#     installed: SystemdSpawner, each server a transient unit with MemoryMax and CPUQuota;
#   - without systemd, where the cgroup v1 memory and cpu hierarchies are writable (most
#     containers run as root): each server is started inside a cgroup of its own made here,
#     with memory.limit_in_bytes and cpu.cfs_quota_us (the kernel OOM-kills a process of that
#     user's server past the limit);
#   - otherwise plain LocalProcessSpawner, which cannot enforce either: the hub logs a
#     warning saying so.
# TILING_HUB_LIMITS=systemd|cgroup|none picks one instead of choosing automatically.

import grp
import os
import secrets
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner

c = get_config()  # noqa: F821  (JupyterHub provides get_config)

HERE = Path(__file__).resolve().parent


def setting(name, default):
    """One TILING_HUB_* variable (hub.env), or its default."""
    return os.environ.get("TILING_HUB_" + name, default)


COURSE_ID = setting("COURSE_ID", "tiling")
STATE_DIR = Path(setting("STATE_DIR", "/var/lib/tiling-hub"))
STUDENT_GROUP = setting("STUDENT_GROUP", "tiling-students")
INSTRUCTOR_GROUP = setting("INSTRUCTOR_GROUP", "tiling-instructors")
MEM_LIMIT = setting("MEM_LIMIT", "2G")
CPU_LIMIT = float(setting("CPU_LIMIT", "1"))
CULL_TIMEOUT = int(setting("CULL_TIMEOUT", "3600"))
# The folder of the global nbgrader_config.py (Exchange.root, course_id). /etc/jupyter and
# /usr/local/etc/jupyter are on every Jupyter's config path; another folder is added to each
# server's JUPYTER_CONFIG_PATH.
GLOBAL_CONFIG = setting("GLOBAL_CONFIG", "/etc/jupyter")
INSTRUCTOR_CONFIG = setting("INSTRUCTOR_CONFIG", str(HERE / "instructor-config"))

# -- the hub itself -------------------------------------------------------------------------

STATE_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
c.JupyterHub.bind_url = setting("BIND_URL", "http://:8000")
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(setting("HUB_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{setting('PROXY_API_PORT', '8001')}"
c.JupyterHub.db_url = f"sqlite:///{STATE_DIR / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE_DIR / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE_DIR / "jupyterhub.pid")
# The proxy's token: in the state folder, so a restarted hub finds the proxy it left running.
_token_file = STATE_DIR / "proxy_auth_token"
if not _token_file.exists():
    _token_file.write_text(secrets.token_hex(32))
    _token_file.chmod(0o600)
c.ConfigurableHTTPProxy.auth_token = _token_file.read_text().strip()
# configurable-http-proxy (npm): setup.sh installs it beside the environment.
_proxy = Path(sys.prefix).parent / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
c.ConfigurableHTTPProxy.command = [setting("PROXY", str(_proxy) if _proxy.exists()
                                           else "configurable-http-proxy")]
# Stopping the hub stops every server (the default), so nothing outlives it.
c.JupyterHub.cleanup_servers = True

# -- who may log in -------------------------------------------------------------------------

c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {STUDENT_GROUP, INSTRUCTOR_GROUP}
c.PAMAuthenticator.admin_groups = {INSTRUCTOR_GROUP}
# Users are made by setup.sh (useradd), never by the hub.
c.LocalAuthenticator.create_system_users = False


def _members(group):
    try:
        return set(grp.getgrnam(group).gr_mem)
    except KeyError:
        return set()


# -- every user's server --------------------------------------------------------------------

c.Spawner.cmd = [str(Path(sys.prefix) / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.mem_limit = MEM_LIMIT
c.Spawner.cpu_limit = CPU_LIMIT
# A class starting at once on a small machine: ten servers took 17.6 s together on 2 cores.
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 300
_environment = {
    # The course's environment first, so a terminal's python, nbgrader and jupyter are it.
    "PATH": os.pathsep.join([str(Path(sys.prefix) / "bin"), "/usr/local/bin", "/usr/bin",
                             "/bin"]),
    "TILING_COURSE_ID": COURSE_ID,
}
if setting("BACKEND", ""):
    _environment["TILINGLIB_BACKEND"] = setting("BACKEND", "")
c.Spawner.environment = _environment


def _config_path(*extra):
    """JUPYTER_CONFIG_PATH for a server: `extra` folders, then the global config's folder
    where Jupyter would not read it anyway."""
    paths = [str(p) for p in extra]
    if GLOBAL_CONFIG not in ("/etc/jupyter", "/usr/local/etc/jupyter"):
        paths.append(GLOBAL_CONFIG)
    return os.pathsep.join(paths)


def pre_spawn_hook(spawner):
    """Instructors get the formgrader (their course folder ~/COURSE_ID); students do not."""
    name = spawner.user.name
    if name in _members(INSTRUCTOR_GROUP):
        spawner.environment["JUPYTER_CONFIG_PATH"] = _config_path(INSTRUCTOR_CONFIG)
    elif _config_path():
        spawner.environment["JUPYTER_CONFIG_PATH"] = _config_path()


c.Spawner.pre_spawn_hook = pre_spawn_hook


# -- per-user limits --------------------------------------------------------------------------

def _cgroup_v1_dirs():
    """The hub's own memory and cpu cgroups (v1), if both can be written; else None."""
    mounts = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(","):
                mounts[controller] = path
    dirs = {}
    for controller in ("memory", "cpu"):
        if controller not in mounts:
            return None
        base = Path("/sys/fs/cgroup") / controller / mounts[controller].lstrip("/")
        if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
            return None
        dirs[controller] = base / "tiling-hub"
    return dirs


class CgroupLocalProcessSpawner(LocalProcessSpawner):
    """LocalProcessSpawner whose server (and so its kernels) starts inside a cgroup v1 of
    its own per user: memory.limit_in_bytes = mem_limit, cpu.cfs_quota_us = cpu_limit
    cores. The process joins the cgroups before it drops root, so it cannot leave them."""

    def _cgroups(self):
        roots = _cgroup_v1_dirs() or {}
        return {controller: root / self.user.name for controller, root in roots.items()}

    async def start(self):
        for controller, path in self._cgroups().items():
            path.mkdir(parents=True, exist_ok=True)
            if controller == "memory" and self.mem_limit:
                (path / "memory.limit_in_bytes").write_text(str(int(self.mem_limit)))
                if (path / "memory.memsw.limit_in_bytes").exists():     # and no swap past it
                    (path / "memory.memsw.limit_in_bytes").write_text(str(int(self.mem_limit)))
            if controller == "cpu" and self.cpu_limit:
                period = int((path / "cpu.cfs_period_us").read_text())
                (path / "cpu.cfs_quota_us").write_text(str(int(self.cpu_limit * period)))
        return await super().start()

    def make_preexec_fn(self, name):
        drop_root = super().make_preexec_fn(name)
        procs = [str(path / "cgroup.procs") for path in self._cgroups().values()]

        def preexec():
            for path in procs:
                with open(path, "w") as f:
                    f.write(str(os.getpid()))
            drop_root()

        return preexec

    async def stop(self, now=False):
        await super().stop(now=now)
        for path in self._cgroups().values():
            try:
                path.rmdir()            # only once empty: a kernel still exiting keeps it
            except OSError:
                pass


_limits = setting("LIMITS", "auto")
if _limits == "auto":
    if Path("/run/systemd/system").is_dir():
        try:
            import systemdspawner  # noqa: F401
            _limits = "systemd"
        except ImportError:
            _limits = "cgroup" if _cgroup_v1_dirs() else "none"
    else:
        _limits = "cgroup" if _cgroup_v1_dirs() else "none"

if _limits == "systemd":
    c.JupyterHub.spawner_class = "systemdspawner.SystemdSpawner"
    c.SystemdSpawner.unit_name_template = "jupyter-{USERNAME}-singleuser"
    c.SystemdSpawner.isolate_tmp = True
    c.SystemdSpawner.disable_user_sudo = True
elif _limits == "cgroup":
    c.JupyterHub.spawner_class = CgroupLocalProcessSpawner
else:
    c.JupyterHub.spawner_class = LocalProcessSpawner
    print(f"tiling-hub: per-user limits NOT enforced (TILING_HUB_LIMITS={_limits}): "
          f"LocalProcessSpawner cannot; run under systemd or with cgroup v1 writable",
          file=sys.stderr)
# What was chosen, for the log and for tests (GET /hub/api/info does not say).
os.environ["TILING_HUB_LIMITS_IN_EFFECT"] = _limits

# -- idle culling ---------------------------------------------------------------------------

c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                f"--timeout={CULL_TIMEOUT}", f"--cull-every={max(CULL_TIMEOUT // 6, 10)}"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
