"""deploy/kubernetes/ applied to a real API server as a user applies it, and checked against the code.

- On an empty control plane of its own (etcd + kube-apiserver + kube-controller-manager, tests/support/k8s_cluster.py):
  the steps of docs/deploy.md, run as written with the pinned kubectl (`kubectl apply -k`, strict field validation);
  every object created, the pods the controllers make admitted under the restricted pod security standard, a
  second apply a no-op (`kubectl diff` finds nothing), the target namespace's Roles as intended for lagbot's
  ServiceAccount (asked of the real authorizer). The executor's own calls under those Roles are proved in
  tests/remediations/test_executor_kubernetes.py.
- Rendered (`kubectl kustomize` of examples/production): probes on the real HTTP server, the drain sent to the
  Spark Connect server of the manifests, its account and NetworkPolicy, Redis on a volume with a password, the
  image's numeric user.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lagbot.app.server import LIVENESS_PATH, READINESS_PATH, SLACK_PATH, BotHTTPServer
from lagbot.core.config import ENV_PREFIX, Settings, build_settings
from lagbot.core.config_env import environment_values, merged
from lagbot.remediations.drain.settings import is_connect, is_local
from tests.support.k8s_cluster import BIN, ControlPlane
from tests.support.k8s_rbac import relative
from tests.support.spark_connect import SERVER_CLASS
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "kubernetes"
DOCS = ROOT / "docs" / "deploy.md"
NAMESPACE = "lagbot"
CONNECT = "lagbot-spark-connect"
EXECUTOR_NAMESPACE = "lagbot-drain"
BOT = "system:serviceaccount:lagbot:lagbot"


def render(folder: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize` of a folder: the objects `kubectl apply -k` would send."""
    result = subprocess.run(
        [str(BIN / "kubectl"), "kustomize", str(folder)], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def one(documents: list[dict[str, Any]], kind: str, name: str, namespace: str | None = NAMESPACE) -> dict[str, Any]:
    [found] = [
        d
        for d in documents
        if d["kind"] == kind and d["metadata"]["name"] == name and d["metadata"].get("namespace") == namespace
    ]
    return found


def bot_container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = one(documents, "Deployment", "lagbot")["spec"]["template"]["spec"]["containers"]
    return container


def settings_of(documents: list[dict[str, Any]]) -> Settings:
    """The bot's settings as its pod builds them: the ConfigMap's file under the container's LAGBOT_ variables
    (with the Secret's Redis password given as 'pw')."""
    data = yaml.safe_load(one(documents, "ConfigMap", "lagbot")["data"]["lagbot.yaml"])
    env = {e["name"]: e["value"] for e in bot_container(documents)["env"] if "value" in e}
    env = {k: v.replace("$(REDIS_PASSWORD)", "pw") for k, v in env.items()}
    return build_settings(merged(data, environment_values(Settings, ENV_PREFIX, env)), source="configmap lagbot.yaml")


@pytest.fixture(scope="module")
def production() -> list[dict[str, Any]]:
    return render(DEPLOY / "examples" / "production")


# --- applied on an empty cluster, as the docs say ---------------------------------------------------------


@pytest.fixture(scope="module")
def empty_cluster() -> Iterator[ControlPlane]:
    """A control plane of this module's own: the docs' steps start from an empty cluster."""
    with ControlPlane().start() as plane:
        yield plane


def docs_steps() -> list[str]:
    """The commands of docs/deploy.md's Kubernetes steps (the block after '<!-- steps: kubernetes -->')."""
    block = re.search(r"<!-- steps: kubernetes -->\s*```sh\n(.*?)```", DOCS.read_text(), re.S)
    assert block is not None, "docs/deploy.md lost its Kubernetes steps"
    joined = block.group(1).replace("\\\n", " ")
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def kubectl_shim(folder: Path, plane: ControlPlane) -> dict[str, str]:
    """An environment whose `kubectl` is the pinned one, pointed at `plane` as its admin."""
    shim = folder / "kubectl"
    kubectl, kubeconfig = shlex.quote(str(BIN / "kubectl")), shlex.quote(str(plane.admin_kubeconfig))
    shim.write_text(f'#!/bin/sh\nexec {kubectl} --kubeconfig {kubeconfig} "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture(scope="module")
def deployed(empty_cluster: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Run the docs' steps (every kubectl command; building and pushing the image needs a registry) once."""
    env = kubectl_shim(tmp_path_factory.mktemp("shim"), empty_cluster)
    outputs: dict[str, str] = {}
    for command in docs_steps():
        if not command.startswith("kubectl "):
            assert command.startswith("docker "), f"a step the test does not know how to follow: {command}"
            continue
        result = subprocess.run(
            ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, f"{command}\n{result.stderr}"
        assert "Warning" not in result.stderr, f"{command}\n{result.stderr}"
        outputs[command] = result.stdout
    return outputs


def applied(outputs: dict[str, str], folder: str) -> list[str]:
    [output] = [out for command, out in outputs.items() if command.startswith("kubectl apply") and folder in command]
    return output.splitlines()


def test_the_docs_steps_create_every_object_of_the_base_and_the_target(
    deployed: dict[str, str], empty_cluster: ControlPlane
) -> None:
    for folder in ("deploy/kubernetes/base", "deploy/kubernetes/examples/payments-target"):
        documents = render(ROOT / folder)
        expected = sorted(f"{d['kind'].lower()}/{d['metadata']['name']} created" for d in documents)
        said = sorted(re.sub(r"^([a-z]+)\.[a-z.0-9]+/", r"\1/", line) for line in applied(deployed, folder))
        assert said == expected
        for d in documents:
            where = ["-n", d["metadata"]["namespace"]] if d["metadata"].get("namespace") else []
            got = empty_cluster.kubectl("get", d["kind"].lower(), d["metadata"]["name"], *where, "-o", "name")
            assert got.returncode == 0, got.stderr


def test_the_controllers_make_the_bots_and_redis_pods_under_the_restricted_standard(
    deployed: dict[str, str], empty_cluster: ControlPlane
) -> None:
    def pods() -> list[str] | None:
        got = empty_cluster.kubectl("get", "pods", "-n", NAMESPACE, "-o", "jsonpath={.items[*].metadata.labels.app}")
        apps = sorted(got.stdout.split())
        return apps if apps == ["lagbot", "lagbot", "lagbot-redis"] else None

    assert wait_for("the pods of lagbot and lagbot-redis", pods, timeout=60) == ["lagbot", "lagbot", "lagbot-redis"]
    namespace = yaml.safe_load(empty_cluster.kubectl("get", "namespace", NAMESPACE, "-o", "yaml").stdout)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_a_second_apply_is_a_no_op(deployed: dict[str, str], empty_cluster: ControlPlane) -> None:
    """Nothing differs and nothing is written: every object keeps its resourceVersion. (kubectl's client-side apply
    still prints 'configured' for the StatefulSet and the PodDisruptionBudget, whose patch it computes is empty.)"""
    versions = "jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}"
    for folder in ("base", "examples/payments-target"):
        diff = empty_cluster.kubectl("diff", "-k", str(DEPLOY / folder))
        assert (diff.returncode, diff.stdout) == (0, ""), diff.stdout + diff.stderr
        before = empty_cluster.kubectl("get", "-k", str(DEPLOY / folder), "-o", versions).stdout.split()
        again = empty_cluster.kubectl("apply", "--validate=strict", "-k", str(DEPLOY / folder))
        assert again.returncode == 0, again.stderr
        after = empty_cluster.kubectl("get", "-k", str(DEPLOY / folder), "-o", versions).stdout.split()
        assert len(before) == len(render(DEPLOY / folder)) and after == before


def can(plane: ControlPlane, verb: str, resource: str, namespace: str, name: str = "", subresource: str = "") -> bool:
    args = ["auth", "can-i", verb, f"{resource}/{name}" if name else resource, "-n", namespace, f"--as={BOT}"]
    if subresource:
        args.append(f"--subresource={subresource}")
    answer = plane.kubectl(*args)
    assert answer.stdout.strip() in {"yes", "no"}, answer.stdout + answer.stderr
    return answer.stdout.strip() == "yes"


def test_lagbots_account_may_do_what_the_target_grants_and_nothing_else(
    deployed: dict[str, str], empty_cluster: ControlPlane
) -> None:
    p = empty_cluster
    assert can(p, "get", "deployments.apps", "payments", "payments-consumer", "scale")
    assert can(p, "patch", "deployments.apps", "payments", "payments-consumer", "scale")
    assert can(p, "patch", "deployments.apps", "payments", "payments-consumer")
    assert can(p, "patch", "scaledobjects.keda.sh", "payments", "payments-consumer-scaler")
    assert can(p, "list", "pods", "payments") and can(p, "delete", "pods", "payments", "any-pod")
    assert can(p, "list", "events", "payments") and can(p, "get", "pods", "payments", "any-pod")  # evidence, read only
    # Not another workload, not a verb the remediations do not use, not another namespace, not its own.
    assert not can(p, "patch", "deployments.apps", "payments", "billing-consumer", "scale")
    assert not can(p, "patch", "scaledobjects.keda.sh", "payments", "another-scaler")
    assert not can(p, "delete", "deployments.apps", "payments", "payments-consumer")
    assert not can(p, "create", "pods", "payments")
    assert not can(p, "patch", "pods", "payments", "any-pod")
    assert not can(p, "get", "secrets", "payments")
    assert not can(p, "list", "pods", "default")
    assert not can(p, "get", "configmaps", NAMESPACE, "lagbot")
    assert not can(p, "get", "secrets", NAMESPACE, "lagbot-slack")


def test_a_target_namespace_is_never_assumed(empty_cluster: ControlPlane, tmp_path: Path) -> None:
    """Applied to a namespace nobody created, the target overlay fails naming it, and creates nothing."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    kustomization = yaml.safe_load((DEPLOY / "examples" / "payments-target" / "kustomization.yaml").read_text())
    kustomization["namespace"] = "nobody-made-this"
    kustomization["resources"] = [relative(DEPLOY / "target", overlay)]
    kustomization["components"] = [relative(DEPLOY / "components" / c, overlay) for c in ("keda", "evidence")]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    result = empty_cluster.kubectl("apply", "--validate=strict", "-k", str(overlay))
    assert result.returncode != 0
    assert 'namespaces "nobody-made-this" not found' in result.stderr
    assert empty_cluster.kubectl("get", "namespace", "nobody-made-this").returncode != 0


def test_the_production_overlay_applies_over_the_base_and_then_is_a_no_op(
    deployed: dict[str, str], empty_cluster: ControlPlane, production: list[dict[str, Any]]
) -> None:
    folder = str(DEPLOY / "examples" / "production")
    first = empty_cluster.kubectl("apply", "--validate=strict", "-k", folder)
    assert first.returncode == 0 and "Warning" not in first.stderr, first.stderr
    assert "deployment.apps/lagbot configured" in first.stdout  # the drain's settings and the registry's image
    assert "ingress.networking.k8s.io/lagbot created" in first.stdout
    assert "deployment.apps/lagbot-spark-connect created" in first.stdout
    diff = empty_cluster.kubectl("diff", "-k", folder)
    assert (diff.returncode, diff.stdout) == (0, ""), diff.stdout + diff.stderr
    image = empty_cluster.kubectl(
        "get", "deployment", "lagbot", "-n", NAMESPACE, "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    )
    assert image.stdout == bot_container(production)["image"] == "registry.example.com/lagbot:0.1.0"


# --- rendered: the pieces against the code ------------------------------------------------------------------


def connect_server(documents: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = one(documents, "Deployment", CONNECT)["spec"]["template"]["spec"]["containers"]
    return container


def spark_conf(container: dict[str, Any]) -> dict[str, str]:
    """The `--conf key=value` arguments of a spark-submit command line."""
    args = container["args"]
    pairs = [args[i + 1].split("=", 1) for i, arg in enumerate(args) if arg == "--conf"]
    return {key: value for key, value in pairs}


def test_the_configmap_ships_an_executor_and_a_policy_where_the_configuration_reads_it(
    production: list[dict[str, Any]],
) -> None:
    settings = settings_of(production)
    assert settings.executors.kubernetes is not None and settings.executors.kubernetes.in_cluster
    assert settings.policy_file is not None
    [mount] = [m for m in bot_container(production)["volumeMounts"] if m["name"] == "config"]
    assert Path(settings.policy_file).parent == Path(mount["mountPath"])
    assert Path(settings.policy_file).name in one(production, "ConfigMap", "lagbot")["data"]


def test_the_drain_goes_to_the_spark_connect_server_of_the_manifests(production: list[dict[str, Any]]) -> None:
    settings = settings_of(production)
    assert is_connect(settings.drain.master) and not is_local(settings.drain.master)
    found = re.fullmatch(r"sc://([a-z0-9-]+):(\d+)", settings.drain.master)
    assert found is not None
    service = one(production, "Service", found.group(1))
    [service_port] = [p for p in service["spec"]["ports"] if p["port"] == int(found.group(2))]
    server = one(production, "Deployment", found.group(1))
    assert server["spec"]["template"]["metadata"]["labels"] == service["spec"]["selector"]
    container = connect_server(production)
    assert container["command"] == ["spark-submit"]
    args = container["args"]
    assert args[args.index("--class") + 1] == SERVER_CLASS
    assert args[args.index("--master") + 1] == "k8s://https://kubernetes.default.svc"
    port = int(spark_conf(container)["spark.connect.grpc.binding.port"])
    assert service_port["targetPort"] in {p["name"] for p in container["ports"] if p["containerPort"] == port}
    assert server["spec"]["replicas"] == 1 and server["spec"]["strategy"] == {"type": "Recreate"}
    bot = bot_container(production)  # nothing of Spark in the bot pod: no driver ports, no sink volume
    assert sorted(p["name"] for p in bot["ports"]) == ["http", "probes"]
    assert not [e for e in bot.get("env", []) if e["name"].startswith("SPARK")]
    assert [m["name"] for m in bot["volumeMounts"]] == ["config", "tmp"]
    assert settings.drain.spark_conf == {}


def test_the_connect_server_has_its_own_account_allowed_only_executor_pods_in_their_namespace(
    production: list[dict[str, Any]],
) -> None:
    spec = one(production, "Deployment", CONNECT)["spec"]["template"]["spec"]
    account = one(production, "ServiceAccount", spec["serviceAccountName"])
    assert account["metadata"]["name"] == CONNECT and account.get("automountServiceAccountToken", True)
    conf = spark_conf(connect_server(production))
    assert conf["spark.kubernetes.namespace"] == EXECUTOR_NAMESPACE
    bindings = [d for d in production if d["kind"] in ("RoleBinding", "ClusterRoleBinding")
                and {"kind": "ServiceAccount", "name": CONNECT, "namespace": NAMESPACE} in d["subjects"]]  # fmt: skip
    assert [(b["kind"], b["metadata"]["namespace"], b["roleRef"]["name"]) for b in bindings] == [
        ("RoleBinding", EXECUTOR_NAMESPACE, CONNECT)
    ]
    role = one(production, "Role", CONNECT, EXECUTOR_NAMESPACE)
    granted = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    pod_verbs = {"create", "get", "list", "watch", "delete", "deletecollection"}
    assert granted == {("pods", v) for v in pod_verbs} | {("configmaps", v) for v in pod_verbs - {"watch"}}
    accounts = [
        d for d in production if d["kind"] == "ServiceAccount" and d["metadata"]["namespace"] == EXECUTOR_NAMESPACE
    ]
    assert [(a["metadata"]["name"], a["automountServiceAccountToken"]) for a in accounts] == [
        (conf["spark.kubernetes.authenticate.executor.serviceAccountName"], False)
    ]
    namespace = one(production, "Namespace", EXECUTOR_NAMESPACE, namespace=None)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


def test_the_executors_run_the_executor_image_of_deploy_spark(production: list[dict[str, Any]]) -> None:
    conf = spark_conf(connect_server(production))
    tag = connect_server(production)["image"].split(":", 1)[1]
    assert conf["spark.kubernetes.container.image"] == f"lagbot-spark-executor:{tag}"
    dockerfile = (ROOT / "deploy" / "spark" / "Dockerfile").read_text()
    assert f"ARG LAGBOT_IMAGE=lagbot:{tag}\nFROM ${{LAGBOT_IMAGE}}\n" in dockerfile
    copied = re.search(r"^COPY --chmod=0755 (\S+) (\S+)$", dockerfile, re.M)
    assert copied is not None and (ROOT / copied.group(1)).is_file()
    assert f'ENTRYPOINT ["{copied.group(2)}"]' in dockerfile
    assert conf["spark.pyspark.python"] == "/usr/local/bin/python"


def test_the_sink_is_on_a_volume_every_executor_pod_mounts(production: list[dict[str, Any]]) -> None:
    settings = settings_of(production)
    conf = spark_conf(connect_server(production))
    prefix = "spark.kubernetes.executor.volumes.persistentVolumeClaim."
    [volume] = {key.removeprefix(prefix).split(".")[0] for key in conf if key.startswith(prefix)}
    claim = one(production, "PersistentVolumeClaim", conf[f"{prefix}{volume}.options.claimName"], EXECUTOR_NAMESPACE)
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    mount = conf[f"{prefix}{volume}.mount.path"]
    assert settings.drain.sink is not None and settings.drain.sink.startswith(mount + "/")
    assert settings.drain.manifest_dir.startswith(mount + "/")


def test_only_the_bot_reaches_redis_and_the_connect_server(production: list[dict[str, Any]]) -> None:
    bot_labels = one(production, "Deployment", "lagbot")["spec"]["template"]["metadata"]["labels"]
    redis = one(production, "NetworkPolicy", "lagbot-redis")["spec"]
    assert redis["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": bot_labels}}], "ports": [{"protocol": "TCP", "port": 6379}]}
    ]
    policy = one(production, "NetworkPolicy", CONNECT)["spec"]
    conf = spark_conf(connect_server(production))
    grpc = int(conf["spark.connect.grpc.binding.port"])
    driver = {int(conf["spark.driver.port"]), int(conf["spark.driver.blockManager.port"])}
    assert policy["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": bot_labels}}], "ports": [{"protocol": "TCP", "port": grpc}]},
        {
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": EXECUTOR_NAMESPACE}},
                      "podSelector": {"matchLabels": {"spark-role": "executor"}}}],
            "ports": [{"protocol": "TCP", "port": port} for port in sorted(driver)],
        },
    ]  # fmt: skip


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_liveness_is_the_process_and_readiness_is_redis_on_the_real_server(production: list[dict[str, Any]]) -> None:
    container = bot_container(production)
    liveness, readiness = container["livenessProbe"]["httpGet"], container["readinessProbe"]["httpGet"]
    assert (liveness["path"], readiness["path"]) == (LIVENESS_PATH, READINESS_PATH)
    # HTTP mode: the probes on a listener of their own, never behind Slack's traffic on the main port
    [probes] = [p for p in container["ports"] if p["name"] == liveness["port"] == readiness["port"]]
    http = settings_of(production).http
    assert probes["containerPort"] == http.health_port != http.port
    redis_down = BotHTTPServer(
        host="127.0.0.1", port=0, app=None, health=lambda: (False, {"redis": "down"}), metrics=lambda: b"",
        health_port=0,
    ).start()  # fmt: skip
    try:
        base = f"http://127.0.0.1:{redis_down.health_port}"
        assert (get(base + liveness["path"]), get(base + readiness["path"])) == (200, 503)
    finally:
        redis_down.stop()


def test_the_ingress_caps_each_client_and_exposes_only_slacks_endpoint(production: list[dict[str, Any]]) -> None:
    ingress = one(production, "Ingress", "lagbot")
    limits = {
        k: v for k, v in ingress["metadata"]["annotations"].items() if k.startswith("nginx.ingress.kubernetes.io/")
    }
    assert limits == {
        "nginx.ingress.kubernetes.io/limit-connections": "20",
        "nginx.ingress.kubernetes.io/limit-rps": "20",
        "nginx.ingress.kubernetes.io/proxy-body-size": "1m",
    }
    [rule] = ingress["spec"]["rules"]
    assert [(p["path"], p["pathType"]) for p in rule["http"]["paths"]] == [(SLACK_PATH, "Exact")]


def test_a_disruption_budget_keeps_one_bot_through_node_drains(production: list[dict[str, Any]]) -> None:
    deployment = one(production, "Deployment", "lagbot")
    budget = one(production, "PodDisruptionBudget", "lagbot")
    assert budget["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert 1 <= budget["spec"]["minAvailable"] < deployment["spec"]["replicas"]


def test_redis_keeps_its_data_on_a_volume_behind_the_password_the_bot_uses(production: list[dict[str, Any]]) -> None:
    found = re.fullmatch(r"redis://:pw@([a-z0-9-]+):(\d+)/\d+", settings_of(production).redis_url or "")
    assert found is not None
    one(production, "Service", found.group(1))
    redis = one(production, "StatefulSet", found.group(1))
    [container] = redis["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[args.index("--appendonly") + 1] == "yes"
    assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"
    secrets = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]}
    bot = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in bot_container(production)["env"] if "valueFrom" in e}
    assert (
        secrets["REDIS_PASSWORD"]
        == secrets["REDISCLI_AUTH"]
        == bot["REDIS_PASSWORD"]
        == {"name": "lagbot-redis", "key": "password"}
    )
    [claim] = redis["spec"]["volumeClaimTemplates"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == claim["metadata"]["name"]]
    assert args[args.index("--dir") + 1] == mount["mountPath"]


def test_pods_of_the_lagbot_image_run_as_its_numeric_user(production: list[dict[str, Any]]) -> None:
    user = re.search(r"^USER (\d+):(\d+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert user is not None
    for d in production:
        if d["kind"] != "Deployment":
            continue
        spec = d["spec"]["template"]["spec"]
        assert "lagbot:" in spec["containers"][0]["image"]
        context = spec["securityContext"]
        assert context["runAsNonRoot"] is True
        assert (context["runAsUser"], context["runAsGroup"]) == (int(user.group(1)), int(user.group(2)))
