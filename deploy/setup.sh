#!/usr/bin/env bash
# Set up the course's JupyterHub on one Debian machine (up to about 50 students):
#
#   sudo deploy/setup.sh --instructor NAME --students FILE [--course-id tiling] [options]
#
# From the root of a clone of the course, as root. Steps, each safe to run again:
#   1. Debian packages: python3-venv, nodejs and npm, where missing (--no-apt: skip).
#   2. The course environment every user runs: a venv at PREFIX/venv (default
#      /opt/tiling-course/venv, world-readable and executable) with this checkout's tilinglib
#      and the "hub" extra (JupyterHub, JupyterLab, nbgrader, the idle culler), and
#      configurable-http-proxy from npm in PREFIX/node. Students' servers get no formgrader
#      (nbgrader's formgrader and course list are turned off at the environment's level;
#      the instructor's server turns them back on).
#      --env-only stops after this step; --skip-env uses the environment already at PREFIX.
#   3. Unix users and groups: the instructor (group tiling-instructors, a hub admin) and one
#      user per line of FILE (group tiling-students). A new user gets a random password,
#      written to STATE/initial-passwords (root only); existing users keep theirs. Homes
#      are made private (mode 700): students cannot read each other's notebooks.
#   4. nbgrader: the exchange (EXCHANGE, default /srv/nbgrader/exchange, mode 777 as
#      nbgrader asks; nbgrader makes inbound/ write-only itself on the first release), the
#      global nbgrader_config.py every user reads (JUPYTER_CONFIG/nbgrader_config.py, default
#      /etc/jupyter) with Exchange.root and course_id, and the instructor's course folder
#      ~NAME/COURSE_ID with source/ holding notebooks/assignments/.
#   5. The hub: ETC (default /etc/tiling-hub) gets jupyterhub_config.py, instructor-config/ and
#      hub.env (its settings); where systemd runs, a unit tiling-hub.service is enabled and
#      started (--no-service: skip, and print the command that starts the hub).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COURSE_ID=tiling
INSTRUCTOR=""
STUDENTS_FILE=""
PREFIX=/opt/tiling-course
ETC=/etc/tiling-hub
STATE=/var/lib/tiling-hub
EXCHANGE=/srv/nbgrader/exchange
JUPYTER_CONFIG=/etc/jupyter
HOME_BASE=/home
STUDENT_GROUP=tiling-students
INSTRUCTOR_GROUP=tiling-instructors
BIND_URL=http://:8000
HUB_PORT=8081
PROXY_API_PORT=8001
MEM_LIMIT=2G
CPU_LIMIT=1
CULL_TIMEOUT=3600
BACKEND=""
LIMITS=auto
EXTRAS=hub
APT=1
ENV_STEP=1
ENV_ONLY=0
SERVICE=1

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    cat <<EOF
Options (defaults in brackets):
  --course-id ID           nbgrader course id [$COURSE_ID]
  --instructor NAME        the instructor's Unix user (made if missing)
  --students FILE          one Unix user name a line (# comments); made if missing
  --prefix DIR             the course environment: DIR/venv, DIR/node [$PREFIX]
  --etc DIR                the hub's configuration [$ETC]
  --state DIR              the hub's database, cookie secret, initial passwords [$STATE]
  --exchange DIR           nbgrader's exchange [$EXCHANGE]
  --jupyter-config DIR     where the global nbgrader_config.py goes [$JUPYTER_CONFIG]
  --home-base DIR          homes of new users [$HOME_BASE]
  --student-group G, --instructor-group G   [$STUDENT_GROUP, $INSTRUCTOR_GROUP]
  --bind-url URL           the hub's public address [$BIND_URL]
  --hub-port N, --proxy-api-port N          the hub's and proxy's own (127.0.0.1) ports [$HUB_PORT, $PROXY_API_PORT]
  --mem-limit SIZE, --cpu-limit CORES       per user: server and kernels [$MEM_LIMIT, $CPU_LIMIT]
  --cull-timeout S         stop a server idle this long [$CULL_TIMEOUT]
  --backend NAME           TILINGLIB_BACKEND for every server (emulator, pycuda) [auto]
  --limits HOW             auto, systemd, cgroup or none [$LIMITS]
  --extras LIST            the extras installed into the environment [$EXTRAS]; hub,gpu on
                           a GPU machine (PyCUDA, which needs nvcc on PATH)
  --no-apt, --env-only, --skip-env, --no-service
EOF
}

die() { echo "setup.sh: $*" >&2; exit 2; }
say() { echo "+ $*"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --course-id) COURSE_ID=$2; shift 2 ;;
        --instructor) INSTRUCTOR=$2; shift 2 ;;
        --students) STUDENTS_FILE=$2; shift 2 ;;
        --prefix) PREFIX=$2; shift 2 ;;
        --etc) ETC=$2; shift 2 ;;
        --state) STATE=$2; shift 2 ;;
        --exchange) EXCHANGE=$2; shift 2 ;;
        --jupyter-config) JUPYTER_CONFIG=$2; shift 2 ;;
        --home-base) HOME_BASE=$2; shift 2 ;;
        --student-group) STUDENT_GROUP=$2; shift 2 ;;
        --instructor-group) INSTRUCTOR_GROUP=$2; shift 2 ;;
        --bind-url) BIND_URL=$2; shift 2 ;;
        --hub-port) HUB_PORT=$2; shift 2 ;;
        --proxy-api-port) PROXY_API_PORT=$2; shift 2 ;;
        --mem-limit) MEM_LIMIT=$2; shift 2 ;;
        --cpu-limit) CPU_LIMIT=$2; shift 2 ;;
        --cull-timeout) CULL_TIMEOUT=$2; shift 2 ;;
        --backend) BACKEND=$2; shift 2 ;;
        --limits) LIMITS=$2; shift 2 ;;
        --extras) EXTRAS=$2; shift 2 ;;
        --no-apt) APT=0; shift ;;
        --env-only) ENV_ONLY=1; shift ;;
        --skip-env) ENV_STEP=0; shift ;;
        --no-service) SERVICE=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option $1" ;;
    esac
done

[ "$(id -u)" -eq 0 ] || die "run as root (sudo deploy/setup.sh ...): it makes users and starts servers as them"
[ -f "$REPO/pyproject.toml" ] && [ -d "$REPO/tilinglib" ] || die "run it from a clone of the course ($REPO has no tilinglib/)"
case "$LIMITS" in auto|systemd|cgroup|none) ;; *) die "--limits is auto, systemd, cgroup or none, not $LIMITS" ;; esac
NAME_RE='^[a-z_][a-z0-9_-]{0,31}$'
USERS=()
if [ "$ENV_ONLY" -eq 0 ]; then
    [ -n "$INSTRUCTOR" ] || die "--instructor NAME is needed (the Unix user who grades)"
    [[ "$INSTRUCTOR" =~ $NAME_RE ]] || die "instructor name '$INSTRUCTOR' is not a valid Unix user name"
    [ -n "$STUDENTS_FILE" ] || die "--students FILE is needed (one user name a line)"
    [ -r "$STUDENTS_FILE" ] || die "cannot read the student list $STUDENTS_FILE"
    while IFS= read -r line || [ -n "$line" ]; do
        name=$(printf '%s' "${line%%#*}" | tr -d '[:space:]')
        [ -n "$name" ] || continue
        [[ "$name" =~ $NAME_RE ]] || die "'$name' in $STUDENTS_FILE is not a valid Unix user name (lower-case letters, digits, _ and -)"
        [ "$name" != "$INSTRUCTOR" ] || die "$name is both the instructor and a student"
        USERS+=("$name")
    done < "$STUDENTS_FILE"
    [ "${#USERS[@]}" -gt 0 ] || die "$STUDENTS_FILE lists no students"
fi
VENV=$PREFIX/venv

# -- 1. Debian packages ----------------------------------------------------------------------
missing=()
/usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3 python3-venv)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ] && [ "$ENV_STEP" -eq 1 ]; then
    [ "$APT" -eq 1 ] || die "missing ${missing[*]} (and --no-apt given)"
    say "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# -- 2. the course environment ---------------------------------------------------------------
if [ "$ENV_STEP" -eq 1 ]; then
    umask 022
    mkdir -p "$PREFIX"
    # Debian's own Python: a venv made from a Python under root's home (pyenv) cannot be run
    # by anyone else.
    [ -x "$VENV/bin/python" ] || { say "python3 -m venv $VENV"; /usr/bin/python3 -m venv "$VENV"; }
    say "pip install $REPO[$EXTRAS] into $VENV"
    "$VENV/bin/pip" install -q --upgrade "$REPO[$EXTRAS]"
    # the same version number with other code: install this checkout's tilinglib in any case
    "$VENV/bin/pip" install -q --no-deps --force-reinstall "$REPO"
    say "npm install configurable-http-proxy into $PREFIX/node"
    npm install --silent --no-fund --no-audit --prefix "$PREFIX/node" configurable-http-proxy@5 >/dev/null
    # Students get the Assignments tab (assignment_list, validate) and no grading tools.
    for ext in formgrader course_list; do
        "$VENV/bin/jupyter" server extension disable --sys-prefix "nbgrader.server_extensions.$ext" >/dev/null 2>&1
    done
    for plugin in formgrader create-assignment course-list; do
        "$VENV/bin/jupyter" labextension disable --level=sys_prefix "@jupyter/nbgrader:$plugin" >/dev/null 2>&1
    done
    chmod -R a+rX "$PREFIX"
    su nobody -s /bin/sh -c "'$VENV/bin/python' -c 'import tilinglib, jupyterhub, nbgrader'" \
        || die "the environment at $VENV cannot be used by an unprivileged user"
    echo "course environment ready: $VENV"
fi
[ "$ENV_ONLY" -eq 0 ] || exit 0
[ -x "$VENV/bin/jupyterhub" ] || die "no environment at $VENV (run without --skip-env first)"

# -- 3. users and groups -----------------------------------------------------------------------
mkdir -p "$STATE" && chmod 700 "$STATE"
getent group "$STUDENT_GROUP" >/dev/null || { say "groupadd $STUDENT_GROUP"; groupadd "$STUDENT_GROUP"; }
getent group "$INSTRUCTOR_GROUP" >/dev/null || { say "groupadd $INSTRUCTOR_GROUP"; groupadd "$INSTRUCTOR_GROUP"; }
passwords=$STATE/initial-passwords
touch "$passwords" && chmod 600 "$passwords"
mkdir -p "$HOME_BASE"
add_user() {   # add_user NAME GROUP
    local name=$1 group=$2
    if ! id "$name" >/dev/null 2>&1; then
        say "useradd $name"
        useradd --create-home --home-dir "$HOME_BASE/$name" --shell /bin/bash --user-group "$name"
        local pw
        pw=$(/usr/bin/python3 -c 'import secrets; print(secrets.token_urlsafe(12))')
        printf '%s:%s\n' "$name" "$pw" | chpasswd
        printf '%s %s\n' "$name" "$pw" >> "$passwords"
    fi
    usermod -a -G "$group" "$name"
    chmod 700 "$(getent passwd "$name" | cut -d: -f6)"
}
add_user "$INSTRUCTOR" "$INSTRUCTOR_GROUP"
for name in "${USERS[@]}"; do add_user "$name" "$STUDENT_GROUP"; done

# -- 4. nbgrader: exchange, global config, the course folder ---------------------------------------
say "exchange $EXCHANGE (mode 777)"
mkdir -p "$EXCHANGE" && chmod 777 "$EXCHANGE"
mkdir -p "$JUPYTER_CONFIG" && chmod 755 "$JUPYTER_CONFIG"
cat > "$JUPYTER_CONFIG/nbgrader_config.py" <<EOF
# Written by deploy/setup.sh: every user's nbgrader (students' Assignments tab, the
# instructor's formgrader and command line) reads this.
c = get_config()  # noqa: F821
c.Exchange.root = "$EXCHANGE"
c.CourseDirectory.course_id = "$COURSE_ID"
EOF
chmod 644 "$JUPYTER_CONFIG/nbgrader_config.py"
home=$(getent passwd "$INSTRUCTOR" | cut -d: -f6)
course=$home/$COURSE_ID
say "course folder $course"
mkdir -p "$course/source"
for a in "$REPO"/notebooks/assignments/*/; do
    name=$(basename "$a")
    [ -e "$course/source/$name" ] || cp -r "$a" "$course/source/$name"
done
sed "s/course_id = \"tiling\"/course_id = \"$COURSE_ID\"/" \
    "$REPO/notebooks/assignments/nbgrader_config.py" > "$course/nbgrader_config.py"
chown -R "$INSTRUCTOR:$INSTRUCTOR" "$course"

# -- 5. the hub ----------------------------------------------------------------------------------
mkdir -p "$ETC"
cp "$REPO/deploy/jupyterhub_config.py" "$ETC/"
rm -rf "$ETC/instructor-config" && cp -r "$REPO/deploy/instructor-config" "$ETC/"
chmod -R a+rX "$ETC"
cat > "$ETC/hub.env" <<EOF
TILING_HUB_COURSE_ID=$COURSE_ID
TILING_HUB_STATE_DIR=$STATE
TILING_HUB_STUDENT_GROUP=$STUDENT_GROUP
TILING_HUB_INSTRUCTOR_GROUP=$INSTRUCTOR_GROUP
TILING_HUB_BIND_URL=$BIND_URL
TILING_HUB_HUB_PORT=$HUB_PORT
TILING_HUB_PROXY_API_PORT=$PROXY_API_PORT
TILING_HUB_MEM_LIMIT=$MEM_LIMIT
TILING_HUB_CPU_LIMIT=$CPU_LIMIT
TILING_HUB_CULL_TIMEOUT=$CULL_TIMEOUT
TILING_HUB_GLOBAL_CONFIG=$JUPYTER_CONFIG
TILING_HUB_INSTRUCTOR_CONFIG=$ETC/instructor-config
TILING_HUB_BACKEND=$BACKEND
TILING_HUB_LIMITS=$LIMITS
EOF
start="cd $STATE && env \$(cat $ETC/hub.env) $VENV/bin/jupyterhub -f $ETC/jupyterhub_config.py"
if [ "$SERVICE" -eq 1 ] && [ -d /run/systemd/system ]; then
    cat > /etc/systemd/system/tiling-hub.service <<EOF
[Unit]
Description=JupyterHub for the tiling course
After=network-online.target

[Service]
User=root
WorkingDirectory=$STATE
EnvironmentFile=$ETC/hub.env
ExecStart=$VENV/bin/jupyterhub -f $ETC/jupyterhub_config.py
Restart=on-failure

[Install]
WantedBy=multi-user.target
EOF
    say "systemctl enable --now tiling-hub"
    systemctl daemon-reload
    systemctl enable --now tiling-hub
    systemctl restart tiling-hub
    echo "hub running (systemctl status tiling-hub) at $BIND_URL"
else
    echo "hub configured; start it (as root) with:"
    echo "  $start"
fi
echo "initial passwords of the users made now: $passwords"
