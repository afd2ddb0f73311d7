"""deploy/k8s/: the Zero to JupyterHub values, without a cluster.

- Each profile's pod, as KubeSpawner builds it: the values are turned into KubeSpawner's
  configuration the way the chart's hub does it (`chart_config` below, for the keys
  values.yaml uses, and it refuses any other key so that none is silently left out), the
  values' hub.extraConfig is run on it, and a KubeSpawner made with `_mock=True` (as
  KubeSpawner's own tests make theirs: no Kubernetes API is contacted) loads the profile,
  runs the pre-spawn hook and builds the pod. Each pod must pass `kubernetes-validate
  --strict` for Kubernetes 1.33, and carry the requests, limits, tolerations,
  environment and volumes the values set on purpose.
- deploy/k8s/exchange.yaml (the ReadWriteMany volume and the Job that opens it) passes the
  same validation.
- With helm and the chart on this machine (TILING_Z2JH_CHART=path of the unpacked chart, or
  a `jupyterhub` repository added to helm), `helm template` renders the whole release and
  every manifest passes the validation; skipped otherwise, with the reason.

What only a cluster can show (scheduling on GPU nodes, the NFS exchange's permissions, the
image) is not tested here: the README says so.
"""

from __future__ import annotations

import asyncio
import copy
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
KUBERNETES = "1.33.0"
CHART_TOLERATIONS = [
    {"key": key, "operator": "Equal", "value": "user", "effect": "NoSchedule"}
    for key in ("hub.jupyter.org/dedicated", "hub.jupyter.org_dedicated")]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def need(module: str):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        reason = f"needs {module} (pip install -e '.[deploy]')"
        if in_ci():
            pytest.fail(reason + " (CI=true: failing instead of skipping)", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def values():
    yaml = need("yaml")
    return yaml.safe_load((K8S / "values.yaml").read_text())


# -- the chart's hub, for the keys values.yaml uses ------------------------------------------

# singleuser.<key> -> KubeSpawner trait, as the chart's jupyterhub_config.py maps them
DIRECT = {"defaultUrl": "default_url", "uid": "uid", "fsGid": "fs_gid",
          "extraEnv": "environment", "profileList": "profile_list"}
HANDLED = set(DIRECT) | {"image", "cpu", "memory", "storage", "extraFiles"}


def chart_config(values: dict):
    """A traitlets Config for KubeSpawner from the chart's values (the subset used)."""
    from traitlets.config import Config
    singleuser = values["singleuser"]
    unknown = set(singleuser) - HANDLED
    assert not unknown, f"chart_config does not translate singleuser.{sorted(unknown)}"
    c = Config()
    for key, trait in DIRECT.items():
        if key in singleuser:
            setattr(c.KubeSpawner, trait, copy.deepcopy(singleuser[key]))
    image = singleuser["image"]
    c.KubeSpawner.image = f"{image['name']}:{image['tag']}"
    c.KubeSpawner.cpu_guarantee = float(singleuser["cpu"]["guarantee"])
    c.KubeSpawner.cpu_limit = float(singleuser["cpu"]["limit"])
    c.KubeSpawner.mem_guarantee = singleuser["memory"]["guarantee"]
    c.KubeSpawner.mem_limit = singleuser["memory"]["limit"]
    # scheduling.userPods.tolerations (the chart's default) + singleuser.extraTolerations
    c.KubeSpawner.tolerations = copy.deepcopy(CHART_TOLERATIONS) + \
        copy.deepcopy(singleuser.get("extraTolerations", []))
    # storage.type dynamic (the chart's default): a PVC per user for the home folder
    storage = singleuser["storage"]
    c.KubeSpawner.pvc_name_template = "claim-{username}{servername}"
    c.KubeSpawner.storage_pvc_ensure = True
    c.KubeSpawner.storage_capacity = storage["capacity"]
    volumes = [{"name": "volume-{username}{servername}",
                "persistentVolumeClaim": {"claimName": "claim-{username}{servername}"}}]
    mounts = [{"name": "volume-{username}{servername}", "mountPath": "/home/jovyan"}]
    volumes += copy.deepcopy(storage.get("extraVolumes", []))
    mounts += copy.deepcopy(storage.get("extraVolumeMounts", []))
    # extraFiles: the chart puts them in a Secret "singleuser" and mounts each key
    files = singleuser.get("extraFiles", {})
    if files:
        volumes.append({"name": "files", "secret": {
            "secretName": "singleuser",
            "items": [{"key": name, "path": name} for name in files]}})
        mounts += [{"name": "files", "mountPath": f["mountPath"], "subPath": name}
                   for name, f in files.items()]
    c.KubeSpawner.volumes = volumes
    c.KubeSpawner.volume_mounts = mounts
    for snippet in values["hub"].get("extraConfig", {}).values():
        exec(compile(snippet, "values.yaml:hub.extraConfig", "exec"), {"c": c})
    return c


class User:
    """What KubeSpawner reads of JupyterHub's user object."""

    def __init__(self, name: str, id: int, admin: bool = False):
        self.name, self.id, self.admin = name, id, admin
        self.url = f"/user/{name}/"
        self.escaped_name = name


class Hub:
    public_host = "hub.example.org"
    url = "http://hub:8081/hub/"
    base_url = "/hub/"
    api_url = "http://hub:8081/hub/api"


def build_pod(values: dict, profile: str, user: User) -> dict:
    """The pod KubeSpawner makes for `user` choosing `profile`, as a JSON-ready dict."""
    need("kubespawner")
    from kubernetes_asyncio.client import ApiClient
    from kubespawner import KubeSpawner

    async def build():
        spawner = KubeSpawner(config=chart_config(values), user=user, hub=Hub(), _mock=True)
        spawner.user_options = {"profile": profile}
        await spawner.load_user_options()
        from jupyterhub.utils import maybe_future
        await maybe_future(spawner.run_pre_spawn_hook())
        pod = await spawner.get_pod_manifest()
        async with ApiClient() as api:
            return api.sanitize_for_serialization(pod)

    return asyncio.run(build())


def validate(resource: dict) -> None:
    kubernetes_validate = need("kubernetes_validate")
    kubernetes_validate.validate(resource, KUBERNETES, strict=True)


def container(pod: dict) -> dict:
    (notebook,) = [c for c in pod["spec"]["containers"] if c["name"] == "notebook"]
    return notebook


def env(pod: dict) -> dict:
    return {e["name"]: e.get("value") for e in container(pod)["env"]}


# -- the profiles' pods ------------------------------------------------------------------------

MOCK_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: mock, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: mock, user: {token: mock}}]
contexts: [{name: mock, context: {cluster: mock, user: mock}}]
current-context: mock
"""


@pytest.fixture(scope="module")
def pods(values, tmp_path_factory):
    # KubeSpawner loads a client configuration when it is made (it contacts nothing until
    # it starts a pod, which never happens here): give it one that names no real cluster.
    kubeconfig = tmp_path_factory.mktemp("kube") / "config"
    kubeconfig.write_text(MOCK_KUBECONFIG)
    saved = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = str(kubeconfig)
    try:
        yield _pods(values)
    finally:
        if saved is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = saved


def _pods(values):
    student, other, instructor = User("ada", 7), User("grace", 8), User("instructor", 1, True)
    return {"emulator": build_pod(values, "emulator", student),
            "emulator-other": build_pod(values, "emulator", other),
            "gpu": build_pod(values, "gpu", student),
            "instructor": build_pod(values, "emulator", instructor)}


@pytest.mark.parametrize("name", ["emulator", "gpu", "instructor"])
def test_each_profiles_pod_is_valid_kubernetes(pods, name):
    validate(pods[name])


def test_the_emulator_profile_is_sized_from_the_benchmark(pods):
    resources = container(pods["emulator"])["resources"]
    assert resources["requests"] == {"cpu": 0.25, "memory": 512 * 2**20}
    assert resources["limits"] == {"cpu": 1.0, "memory": 2 * 2**30}
    assert env(pods["emulator"])["TILINGLIB_BACKEND"] == "emulator"
    assert pods["emulator"]["spec"]["tolerations"] == CHART_TOLERATIONS
    assert container(pods["emulator"])["image"] == "registry.example.org/tiling-course:0.1.0"


def test_the_gpu_profile_sets_its_requests_and_tolerations_on_purpose(pods):
    gpu = pods["gpu"]
    resources = container(gpu)["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == "1"
    # not the chart-wide quarter core: a profile's value replaces it, so it is set
    assert resources["requests"]["cpu"] == 1.0 and resources["limits"]["cpu"] == 2.0
    assert resources["requests"]["memory"] == 2 * 2**30
    assert resources["limits"]["memory"] == 4 * 2**30
    # the chart's dedicated-node tolerations are kept beside the GPU nodes' taint
    tolerations = gpu["spec"]["tolerations"]
    assert all(t in tolerations for t in CHART_TOLERATIONS)
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert gpu["spec"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert env(gpu)["TILINGLIB_BACKEND"] == "pycuda"
    assert env(gpu)["TILING_COURSE_ID"] == env(pods["emulator"])["TILING_COURSE_ID"]
    assert container(gpu)["image"].endswith("tiling-course-gpu:0.1.0")


@pytest.mark.parametrize("name", ["emulator", "gpu", "instructor"])
def test_every_pod_mounts_the_exchange_and_the_global_nbgrader_config(pods, name):
    pod = pods[name]
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"]
              for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v}
    mounts = {m["mountPath"]: m for m in container(pod)["volumeMounts"]}
    exchange = mounts["/srv/nbgrader/exchange"]
    assert claims[exchange["name"]] == "nbgrader-exchange"
    config = mounts["/etc/jupyter/nbgrader_config.py"]
    assert config["subPath"] == "nbgrader-config"


def test_each_user_runs_as_a_uid_of_their_own(pods):
    uids = {name: container(pods[name])["securityContext"]["runAsUser"]
            for name in ("emulator", "emulator-other", "instructor")}
    assert container(pods["emulator"])["securityContext"]["allowPrivilegeEscalation"] is False
    assert uids == {"emulator": 200007, "emulator-other": 200008, "instructor": 200001}
    assert pods["emulator"]["spec"]["securityContext"]["fsGroup"] == 100


def test_only_instructors_get_the_formgrader(pods):
    assert env(pods["instructor"])["JUPYTER_CONFIG_PATH"] == "/etc/tiling-hub/instructor-config"
    assert "JUPYTER_CONFIG_PATH" not in env(pods["emulator"])
    assert (ROOT / "deploy" / "instructor-config" / "jupyter_server_config.json").is_file()


def test_the_global_nbgrader_config_names_the_mounted_exchange(values):
    text = values["singleuser"]["extraFiles"]["nbgrader-config"]["stringData"]
    assert 'c.Exchange.root = "/srv/nbgrader/exchange"' in text
    assert f'c.CourseDirectory.course_id = "{values["singleuser"]["extraEnv"]["TILING_COURSE_ID"]}"' in text


def test_the_exchange_volume_is_read_write_many_and_valid():
    yaml = need("yaml")
    documents = list(yaml.safe_load_all((K8S / "exchange.yaml").read_text()))
    kinds = {d["kind"]: d for d in documents}
    assert set(kinds) == {"PersistentVolumeClaim", "Job"}
    for document in documents:
        validate(document)
    assert kinds["PersistentVolumeClaim"]["spec"]["accessModes"] == ["ReadWriteMany"]
    assert kinds["PersistentVolumeClaim"]["metadata"]["name"] == "nbgrader-exchange"


# -- the whole chart, where helm is here ------------------------------------------------------

def chart_reference() -> tuple[str | None, str]:
    """(what to pass to helm template, why not) for the Zero to JupyterHub chart."""
    if shutil.which("helm") is None:
        return None, "helm is not installed"
    local = os.environ.get("TILING_Z2JH_CHART")
    if local:
        return (local, "") if Path(local, "Chart.yaml").is_file() else \
            (None, f"TILING_Z2JH_CHART={local} has no Chart.yaml")
    probe = subprocess.run(["helm", "show", "chart", "jupyterhub/jupyterhub"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return None, ("the chart is not here (helm repo add jupyterhub ..., or "
                      "TILING_Z2JH_CHART=path)")
    return "jupyterhub/jupyterhub", ""


def test_helm_template_renders_valid_manifests():
    chart, why = chart_reference()
    if chart is None:
        pytest.skip(f"helm template not run: {why}")
    yaml = need("yaml")
    rendered = subprocess.run(["helm", "template", "tiling", chart, "--namespace", "tiling",
                               "--values", str(K8S / "values.yaml")],
                              capture_output=True, text=True, timeout=300)
    assert rendered.returncode == 0, rendered.stderr
    manifests = [m for m in yaml.safe_load_all(rendered.stdout) if m]
    assert len(manifests) > 10
    for manifest in manifests:
        validate(manifest)


# -- the sizes quoted come from the benchmark ---------------------------------------------------

RESULTS = ROOT / "bench" / "results"


def _median(values):
    values = sorted(values)
    n = len(values)
    return (values[n // 2] + values[(n - 1) // 2]) / 2


def _complete(name: str) -> list[dict]:
    """The memory figures of the students of bench/results/NAME (bench/hub_load.py --out)
    who ran the whole lesson without an error."""
    import json
    run = json.loads((RESULTS / name).read_text())
    return [s["memory"] for s in run.get("per_student", {}).values()
            if "memory" in s and "lesson_s" in s and not s["errors"]]


def _measured(name: str, at_least: int = 10) -> dict:
    """Medians over the complete students of bench/results/NAME."""
    memory = _complete(name)
    assert len(memory) >= at_least, f"{name}: too few complete students"
    return {key: _median([m[key] for m in memory])
            for key in ("total_mib", "server_mib", "kernel_mib", "other_mib", "server_cpu_s",
                        "kernel_cpu_s")}


# The runs of a class (10 or 30 students) in which at least ten ran the whole lesson; a run
# where the servers missed the hub's start timeout has none to measure.
CLASS_RUNS = sorted(p.name for p in RESULTS.glob("hub_load_[13]0*.json")
                    if len(_complete(p.name)) >= 10)


def test_the_class_runs_are_there():
    assert "hub_load_10.json" in CLASS_RUNS
    assert any(n.startswith("hub_load_30") for n in CLASS_RUNS)


@pytest.mark.parametrize("run", CLASS_RUNS)
def test_the_readme_quotes_the_benchmarks_memory_and_cpu(run):
    import re
    m = _measured(run)
    text = " ".join((ROOT / "README.md").read_text().split())
    quoted = re.search(r"holds about (\d+) MiB resident \(server (\d+), kernel (\d+), and the "
                       r"(\d+) MiB clang", text)
    assert quoted, "README: the memory per student is not where this test reads it"
    assert [int(x) for x in quoted.groups()] == [
        round(m["total_mib"]), round(m["server_mib"]), round(m["kernel_mib"]),
        round(m["other_mib"])]
    cpu = re.search(r"a server's start to cost about (\d+) CPU-seconds", text)
    assert cpu and int(cpu.group(1)) == round(m["server_cpu_s"])


def test_the_values_are_sized_from_the_benchmark(values):
    import re
    ByteSpecification = pytest.importorskip(
        "jupyterhub.traitlets", reason="the hub extra (jupyterhub) is not installed").ByteSpecification
    runs = [_measured(name) for name in CLASS_RUNS]
    lesson08 = _measured("hub_load_1_lesson08.json", at_least=1)
    comment = " ".join(" ".join(line.lstrip("#").split())
                       for line in (K8S / "values.yaml").read_text().splitlines()
                       if line.lstrip().startswith("#"))
    quoted = re.search(r"holds about (\d+) MiB resident \(server (\d+), kernel (\d+), and the "
                       r"(\d+) MiB clang", comment)
    assert quoted and [int(x) for x in quoted.groups()] == [
        round(runs[0]["total_mib"]), round(runs[0]["server_mib"]),
        round(runs[0]["kernel_mib"]), round(runs[0]["other_mib"])]
    quoted08 = re.search(r"lesson 08 holds (\d+) MiB", comment)
    assert quoted08 and int(quoted08.group(1)) == round(lesson08["total_mib"])
    cpu = re.search(r"costs its kernel (\d+) \(lesson 03\) to (\d+) \(lesson 08\) CPU seconds",
                    comment)
    assert cpu and [int(x) for x in cpu.groups()] == [
        round(min(r["kernel_cpu_s"] for r in runs)), round(lesson08["kernel_cpu_s"])]
    # the guarantee covers the largest measured student with half again as much to spare
    guarantee = ByteSpecification().validate(None, values["singleuser"]["memory"]["guarantee"])
    largest = max([r["total_mib"] for r in runs] + [lesson08["total_mib"]]) * 2**20
    assert guarantee >= 1.5 * largest
