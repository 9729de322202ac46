"""deploy/kubernetes/lagbot.yaml works as shipped, checked against the code rather than against itself.

- RBAC: the kubernetes executor is run, for every workload of the shipped policy and every remediation the policy
  allows there, against the local fake API server (tests/support/k8s_fake.py), which records each request; each request
  becomes the permission it needs (API group, resource, name, verb). The Roles must grant exactly those: in the
  policy's namespaces only, on the named workloads where Kubernetes allows naming them, nothing else.
- Probes: the paths are those the real HTTP server serves; with Redis down, liveness still answers 200 and
  readiness 503.
- The ConfigMap's configuration and policy are valid and wired: in-cluster executor, the policy file mounted where
  the configuration says, the drain sent to the Spark Connect server of the manifests (never run in the bot pod).
- The Spark Connect server: master k8s://, its own service account whose only Role (in the executors' namespace)
  grants exactly what Spark's driver does with executor pods; executors on the image built from
  deploy/spark/Dockerfile, mounting the sink's volume; a NetworkPolicy that admits only the bot to its gRPC port.
- A PodDisruptionBudget, Redis with an append-only file on a volume, a numeric non-root user that is the image's.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lagbot.app.server import LIVENESS_PATH, READINESS_PATH, BotHTTPServer
from lagbot.core.config import Settings, build_settings
from lagbot.core.model import Member
from lagbot.policies.loader import parse_policy
from lagbot.policies.model import Policy
from lagbot.remediations.drain.settings import is_connect, is_local
from lagbot.remediations.executors.base import Workload
from lagbot.remediations.executors.config import KubernetesConfig
from lagbot.remediations.executors.kubernetes import KubernetesExecutor
from tests.support.k8s_fake import FakeKubernetes
from tests.support.spark_connect import SERVER_CLASS

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes" / "lagbot.yaml"
NAMESPACE = "lagbot"
CONNECT = "lagbot-spark-connect"
EXECUTOR_NAMESPACE = "lagbot-drain"

Permission = tuple[str, str, str, str]
"""(API group, resource, resource name or "*", verb)."""

VERBS = {"GET": "get", "PATCH": "patch", "DELETE": "delete", "PUT": "update", "POST": "create"}


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFESTS.read_text()) if d]


def one(documents: list[dict[str, Any]], kind: str, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    [found] = [
        d
        for d in documents
        if d["kind"] == kind and d["metadata"]["name"] == name and d["metadata"].get("namespace") == namespace
    ]
    return found


def settings_of(documents: list[dict[str, Any]]) -> Settings:
    data = one(documents, "ConfigMap", "lagbot")["data"]
    return build_settings(yaml.safe_load(data["lagbot.yaml"]), source="configmap lagbot.yaml")


def policy_of(documents: list[dict[str, Any]]) -> Policy:
    data = one(documents, "ConfigMap", "lagbot")["data"]
    return parse_policy(yaml.safe_load(data["policy.yaml"]), source="configmap policy.yaml")


def bot_container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = one(documents, "Deployment", "lagbot")["spec"]["template"]["spec"]["containers"]
    return container


# --- RBAC, from the executor's own requests ---------------------------------------------------------


def permission(method: str, path: str) -> Permission:
    """The RBAC permission an API request needs."""
    core = re.fullmatch(r"/api/v1/namespaces/[^/]+/([^/]+)(?:/([^/]+))?(?:/([^/]+))?", path)
    grouped = re.fullmatch(r"/apis/([^/]+)/[^/]+/namespaces/[^/]+/([^/]+)(?:/([^/]+))?(?:/([^/]+))?", path)
    if core is not None:
        group, resource, name, sub = "", *core.groups()
    else:
        assert grouped is not None, path
        group, resource, name, sub = grouped.groups()
    verb = VERBS[method] if name is not None else {"GET": "list", "POST": "create"}[method]
    if resource == "pods":  # named by their controller at random: RBAC cannot name them in advance
        name = None
    return group, f"{resource}/{sub}" if sub else resource, name or "*", verb


def exercise(executor: KubernetesExecutor, workload: Workload, actions: set[str], pod_ip: str) -> None:
    """What each allowed remediation asks of the executor (the packages lagbot.remediations.scale, restart, drain)."""
    if actions & {"scale", "drain"}:
        before = executor.replicas(workload)
        assert executor.scale(workload, 0).ok  # the drain's pause; a scale is the same call with another count
        assert executor.scale(workload, before).ok
        if workload.keda_scaled_object:
            assert executor.restore_autoscaling(workload, previous=None).ok
    if "restart" in actions:
        assert executor.restart(workload).ok
        member = Member(member_id="m-1", client_id="c-1", host=f"/{pod_ip}")
        assert executor.restart_member(workload, member).ok


@pytest.fixture(scope="module")
def needed(documents: list[dict[str, Any]]) -> Iterator[dict[str, set[Permission]]]:
    """namespace -> the permissions the executor used there, for the shipped policy."""
    policy = policy_of(documents)
    result: dict[str, set[Permission]] = {}
    for rule in policy.rules:
        workload, actions = rule.workload, set(rule.remediations.allowed()) - {"reset_offsets"}
        if workload is None or workload.executor != "kubernetes" or not actions:
            continue
        with FakeKubernetes().start() as fake:
            fake.add_workload(workload.kind, workload.namespace, workload.name, replicas=3)
            fake.add_pod(workload.namespace, f"{workload.name}-5d8f7-abcde", ip="10.1.2.3")
            if workload.keda_scaled_object:
                fake.add_scaled_object(workload.namespace, workload.keda_scaled_object)
            exercise(KubernetesExecutor(KubernetesConfig(api_url=fake.url)), workload, actions, "10.1.2.3")
            used = {permission(r.method, r.path) for r in fake.requests}
        result.setdefault(workload.namespace, set()).update(used)
    yield result


def granted(role: dict[str, Any]) -> set[Permission]:
    return {
        (group, resource, name, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for name in rule.get("resourceNames", ["*"])
        for verb in rule["verbs"]
    }


def test_roles_exist_only_in_the_namespaces_the_policy_targets(
    documents: list[dict[str, Any]], needed: dict[str, set[Permission]]
) -> None:
    assert set(needed) == {"payments", "analytics"}
    roles = [d for d in documents if d["kind"] in ("Role", "ClusterRole")]
    remediations = [r for r in roles if r["metadata"]["name"] == "lagbot-remediations"]
    assert {(r["kind"], r["metadata"].get("namespace")) for r in remediations} == {("Role", ns) for ns in needed}
    # The one other Role is the Spark Connect server's, in the executors' namespace (checked below).
    assert [(r["kind"], r["metadata"]["name"], r["metadata"]["namespace"]) for r in roles if r not in remediations] == [
        ("Role", CONNECT, EXECUTOR_NAMESPACE)
    ]


def test_each_role_grants_exactly_what_the_executor_uses_there(
    documents: list[dict[str, Any]], needed: dict[str, set[Permission]]
) -> None:
    for namespace, used in needed.items():
        role = one(documents, "Role", "lagbot-remediations", namespace)
        assert granted(role) == used, namespace
    # Named where Kubernetes can name them: pods are listed (found by IP) and deleted by changing names.
    assert ("apps", "deployments/scale", "payments-consumer", "patch") in needed["payments"]
    assert ("", "pods", "*", "delete") in needed["payments"]
    assert ("keda.sh", "scaledobjects", "analytics-consumer-scaler", "patch") in needed["analytics"]


def test_each_role_is_bound_to_lagbots_service_account(
    documents: list[dict[str, Any]], needed: dict[str, set[Permission]]
) -> None:
    deployment = one(documents, "Deployment", "lagbot")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    one(documents, "ServiceAccount", account)
    for namespace in needed:
        binding = one(documents, "RoleBinding", "lagbot-remediations", namespace)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                      "name": "lagbot-remediations"}  # fmt: skip
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]


# --- configuration ------------------------------------------------------------------------------------


def test_the_configmap_ships_an_executor_and_a_policy_where_the_configuration_reads_it(
    documents: list[dict[str, Any]],
) -> None:
    settings = settings_of(documents)
    assert settings.executors.kubernetes is not None and settings.executors.kubernetes.in_cluster
    container = bot_container(documents)
    assert container["args"] == ["run", "--config", "/etc/lagbot/lagbot.yaml"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "config"]
    assert settings.policy_file == Path(mount["mountPath"]) / "policy.yaml"
    policy = policy_of(documents)
    assert [r.name for r in policy.rules] == ["payments-prod", "analytics"]
    assert set(policy.rules[0].remediations.allowed()) == {"restart", "scale", "drain", "reset_offsets"}


def connect_server(documents: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = one(documents, "Deployment", CONNECT)["spec"]["template"]["spec"]["containers"]
    return container


def spark_conf(container: dict[str, Any]) -> dict[str, str]:
    """The `--conf key=value` arguments of a spark-submit command line."""
    args = container["args"]
    pairs = [args[i + 1].split("=", 1) for i, arg in enumerate(args) if arg == "--conf"]
    return {key: value for key, value in pairs}


def test_the_drain_goes_to_the_spark_connect_server_of_the_manifests(documents: list[dict[str, Any]]) -> None:
    settings = settings_of(documents)
    assert is_connect(settings.drain.master) and not is_local(settings.drain.master)
    found = re.fullmatch(r"sc://([a-z0-9-]+):(\d+)", settings.drain.master)
    assert found is not None
    service = one(documents, "Service", found.group(1))
    [service_port] = [p for p in service["spec"]["ports"] if p["port"] == int(found.group(2))]
    server = one(documents, "Deployment", found.group(1))
    assert server["spec"]["template"]["metadata"]["labels"] == service["spec"]["selector"]
    container = connect_server(documents)
    assert container["command"] == ["spark-submit"]
    args = container["args"]
    assert args[args.index("--class") + 1] == SERVER_CLASS
    assert args[args.index("--master") + 1] == "k8s://https://kubernetes.default.svc"
    port = int(spark_conf(container)["spark.connect.grpc.binding.port"])
    assert service_port["targetPort"] in {p["name"] for p in container["ports"] if p["containerPort"] == port}
    assert server["spec"]["replicas"] == 1 and server["spec"]["strategy"] == {"type": "Recreate"}
    # Nothing of Spark is left in the bot pod: no driver ports, no driver address, no sink volume.
    bot = bot_container(documents)
    assert [p["name"] for p in bot["ports"]] == ["http"]
    assert not [e for e in bot.get("env", []) if e["name"].startswith("SPARK")]
    assert [m["name"] for m in bot["volumeMounts"]] == ["config", "tmp"]
    assert settings.drain.spark_conf == {}


def test_the_connect_server_has_its_own_account_allowed_only_executor_pods_in_their_namespace(
    documents: list[dict[str, Any]],
) -> None:
    spec = one(documents, "Deployment", CONNECT)["spec"]["template"]["spec"]
    account = one(documents, "ServiceAccount", spec["serviceAccountName"])
    assert account["metadata"]["name"] == CONNECT and account.get("automountServiceAccountToken", True)
    conf = spark_conf(connect_server(documents))
    assert conf["spark.kubernetes.namespace"] == EXECUTOR_NAMESPACE
    bindings = [d for d in documents if d["kind"] in ("RoleBinding", "ClusterRoleBinding")
                and {"kind": "ServiceAccount", "name": CONNECT, "namespace": NAMESPACE} in d["subjects"]]  # fmt: skip
    assert [(b["kind"], b["metadata"]["namespace"], b["roleRef"]["name"]) for b in bindings] == [
        ("RoleBinding", EXECUTOR_NAMESPACE, CONNECT)
    ]
    role = one(documents, "Role", CONNECT, EXECUTOR_NAMESPACE)
    pod_verbs = {"create", "get", "list", "watch", "delete", "deletecollection"}
    assert granted(role) == {("", "pods", "*", verb) for verb in pod_verbs} | {
        ("", "configmaps", "*", verb) for verb in pod_verbs - {"watch"}
    }
    # The executors' namespace holds no other account a created pod could borrow; theirs mounts no token.
    accounts = [
        d for d in documents if d["kind"] == "ServiceAccount" and d["metadata"]["namespace"] == EXECUTOR_NAMESPACE
    ]
    assert [(a["metadata"]["name"], a["automountServiceAccountToken"]) for a in accounts] == [
        (conf["spark.kubernetes.authenticate.executor.serviceAccountName"], False)
    ]
    namespace = one(documents, "Namespace", EXECUTOR_NAMESPACE, namespace=None)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    token = "/var/run/secrets/kubernetes.io/serviceaccount"
    assert (conf["spark.kubernetes.authenticate.oauthTokenFile"], conf["spark.kubernetes.authenticate.caCertFile"]) == (
        f"{token}/token",
        f"{token}/ca.crt",
    )


def test_the_executors_run_the_executor_image_of_deploy_spark(documents: list[dict[str, Any]]) -> None:
    conf = spark_conf(connect_server(documents))
    tag = bot_container(documents)["image"].split(":", 1)[1]
    assert conf["spark.kubernetes.container.image"] == f"lagbot-spark-executor:{tag}"
    dockerfile = (ROOT / "deploy" / "spark" / "Dockerfile").read_text()
    assert f"ARG LAGBOT_IMAGE=lagbot:{tag}\nFROM ${{LAGBOT_IMAGE}}\n" in dockerfile
    copied = re.search(r"^COPY --chmod=0755 (\S+) (\S+)$", dockerfile, re.M)
    assert copied is not None and (ROOT / copied.group(1)).is_file()
    assert f'ENTRYPOINT ["{copied.group(2)}"]' in dockerfile
    assert "!" + copied.group(1) in (ROOT / ".dockerignore").read_text().splitlines()
    assert conf["spark.pyspark.python"] == "/usr/local/bin/python"  # the lagbot image's Python (python:3.11-slim)


def test_the_sink_is_on_a_volume_every_executor_pod_mounts(documents: list[dict[str, Any]]) -> None:
    settings = settings_of(documents)
    conf = spark_conf(connect_server(documents))
    prefix = "spark.kubernetes.executor.volumes.persistentVolumeClaim."
    [volume] = {key.removeprefix(prefix).split(".")[0] for key in conf if key.startswith(prefix)}
    claim = one(documents, "PersistentVolumeClaim", conf[f"{prefix}{volume}.options.claimName"], EXECUTOR_NAMESPACE)
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    mount = conf[f"{prefix}{volume}.mount.path"]
    assert settings.drain.sink is not None and settings.drain.sink.startswith(mount + "/")
    assert settings.drain.manifest_dir.startswith(mount + "/")


def test_only_the_bot_reaches_the_connect_server_and_only_executors_its_driver(documents: list[dict[str, Any]]) -> None:
    policy = one(documents, "NetworkPolicy", CONNECT)["spec"]
    server = one(documents, "Deployment", CONNECT)["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"] == server and policy["policyTypes"] == ["Ingress"]
    container, conf = connect_server(documents), spark_conf(connect_server(documents))
    bot_labels = one(documents, "Deployment", "lagbot")["spec"]["template"]["metadata"]["labels"]
    grpc = int(conf["spark.connect.grpc.binding.port"])
    driver = {int(conf["spark.driver.port"]), int(conf["spark.driver.blockManager.port"])}
    assert driver <= {p["containerPort"] for p in container["ports"]}
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "$(POD_IP)"
    assert policy["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": bot_labels}}], "ports": [{"protocol": "TCP", "port": grpc}]},
        {
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": EXECUTOR_NAMESPACE}},
                      "podSelector": {"matchLabels": {"spark-role": "executor"}}}],
            "ports": [{"protocol": "TCP", "port": port} for port in sorted(driver)],
        },
    ]  # fmt: skip


# --- probes, disruption budget, Redis, user --------------------------------------------------------------


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.integration  # starts the real HTTP server and connects to it
def test_liveness_is_the_process_and_readiness_is_redis_on_the_real_server(documents: list[dict[str, Any]]) -> None:
    container = bot_container(documents)
    liveness, readiness = container["livenessProbe"]["httpGet"], container["readinessProbe"]["httpGet"]
    assert (liveness["path"], readiness["path"]) == (LIVENESS_PATH, READINESS_PATH)
    [http] = [p for p in container["ports"] if p["name"] == liveness["port"] == readiness["port"]]
    assert http["containerPort"] == settings_of(documents).http.port
    redis_down = BotHTTPServer(
        host="127.0.0.1", port=0, app=None, health=lambda: (False, {"redis": "down"}), metrics=lambda: b""
    ).start()
    try:
        base = f"http://127.0.0.1:{redis_down.port}"
        assert (get(base + liveness["path"]), get(base + readiness["path"])) == (200, 503)
    finally:
        redis_down.stop()


def test_a_disruption_budget_keeps_one_bot_through_node_drains(documents: list[dict[str, Any]]) -> None:
    deployment = one(documents, "Deployment", "lagbot")
    budget = one(documents, "PodDisruptionBudget", "lagbot")
    assert budget["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert 1 <= budget["spec"]["minAvailable"] < deployment["spec"]["replicas"]


def test_redis_keeps_its_data_on_a_volume(documents: list[dict[str, Any]]) -> None:
    found = re.fullmatch(r"redis://([a-z0-9-]+):(\d+)/\d+", settings_of(documents).redis_url or "")
    assert found is not None
    one(documents, "Service", found.group(1))
    redis = one(documents, "StatefulSet", found.group(1))
    [container] = redis["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[args.index("--appendonly") + 1] == "yes"
    [claim] = redis["spec"]["volumeClaimTemplates"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == claim["metadata"]["name"]]
    assert args[args.index("--dir") + 1] == mount["mountPath"]


def test_pods_of_the_lagbot_image_run_as_its_numeric_user(documents: list[dict[str, Any]]) -> None:
    user = re.search(r"^USER (\d+):(\d+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert user is not None
    for d in documents:
        if d["kind"] != "Deployment":
            continue
        spec = d["spec"]["template"]["spec"]
        assert spec["containers"][0]["image"].startswith("lagbot:")
        context = spec["securityContext"]
        assert context["runAsNonRoot"] is True
        assert (context["runAsUser"], context["runAsGroup"]) == (int(user.group(1)), int(user.group(2)))
