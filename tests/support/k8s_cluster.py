"""A real Kubernetes control plane for the tests: etcd, kube-apiserver and kube-controller-manager on 127.0.0.1.

The binaries are those `make k8s-fetch` builds into .k8s/bin (pinned in tools/k8s/). Started once per session
(tests/conftest.py), in a temporary folder, on free loopback ports:

- etcd: client and peer URLs on 127.0.0.1, plain HTTP (only the API server talks to it), fsync off (test data).
- kube-apiserver: HTTPS with a serving certificate of a throwaway CA; authentication by a static admin token
  (group system:masters) and by service-account tokens it signs itself (TokenRequest); authorization RBAC only;
  --endpoint-reconciler-type=none (the loopback address cannot be the `kubernetes` Service's endpoint).
- kube-controller-manager: the controllers that turn Deployments and StatefulSets into ReplicaSets and pods,
  create each namespace's `default` ServiceAccount, and empty a deleted namespace.
- the KEDA ScaledObject CRD (keda.sh/v1alpha1), so the executor's pause/restore meets a real custom resource.

No scheduler and no kubelet: pods stay Pending. A test that needs what a kubelet writes (a Running phase, a pod
IP, container statuses) patches the pod's status subresource as a kubelet would (`set_pod_status`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LAGBOT_K8S_DIR", ROOT / ".k8s")) / "bin"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")
ADMIN_USER = "lagbot-test-admin"
CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "serviceaccount-controller",
    "namespace-controller",
    "garbage-collector-controller",
    "root-ca-certificate-publisher-controller",
)

SCALED_OBJECT_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "scaledobjects.keda.sh"},
    "spec": {
        "group": "keda.sh",
        "scope": "Namespaced",
        "names": {"plural": "scaledobjects", "singular": "scaledobject", "kind": "ScaledObject", "shortNames": ["so"]},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["scaleTargetRef"],
                                "properties": {
                                    "scaleTargetRef": {
                                        "type": "object",
                                        "required": ["name"],
                                        "properties": {
                                            "apiVersion": {"type": "string"},
                                            "kind": {"type": "string"},
                                            "name": {"type": "string"},
                                        },
                                    },
                                    "minReplicaCount": {"type": "integer"},
                                    "maxReplicaCount": {"type": "integer"},
                                    "triggers": {
                                        "type": "array",
                                        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    },
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}
"""KEDA's ScaledObject as far as lagbot touches it (the fields of keda.sh/v1alpha1 its examples use)."""


class ControlPlaneError(RuntimeError):
    """The control plane could not be started (binaries missing, a process died, not ready in time)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def binaries_missing(folder: Path = BIN) -> list[str]:
    return [name for name in BINARIES if not (folder / name).is_file()]


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)


def make_certificates(folder: Path) -> None:
    """A throwaway CA, the API server's serving certificate for 127.0.0.1, and the service-account signing key."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", str(folder / "ca.key"), "-out", str(folder / "ca.crt"), "-days", "2",
             "-subj", "/CN=lagbot-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    _openssl("req", *ec, "-keyout", str(folder / "server.key"), "-out", str(folder / "server.csr"),
             "-subj", "/CN=kube-apiserver")  # fmt: skip
    (folder / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
        "keyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n"
    )
    _openssl("x509", "-req", "-in", str(folder / "server.csr"), "-CA", str(folder / "ca.crt"),
             "-CAkey", str(folder / "ca.key"), "-CAcreateserial", "-days", "2", "-out", str(folder / "server.crt"),
             "-extfile", str(folder / "server.ext"))  # fmt: skip
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(folder / "sa.key"))
    _openssl("pkey", "-in", str(folder / "sa.key"), "-pubout", "-out", str(folder / "sa.pub"))


def kubeconfig_text(url: str, ca_file: Path, token: str, user: str) -> str:
    """A kubeconfig with one cluster, one user (a bearer token) and one current context."""
    import yaml

    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "lagbot-test", "cluster": {"server": url, "certificate-authority": str(ca_file)}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "lagbot-test", "context": {"cluster": "lagbot-test", "user": user}}],
            "current-context": "lagbot-test",
        }
    )


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager in a temporary folder; `with ControlPlane().start():`."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="lagbot-k8s-"))
        self.admin_token = uuid.uuid4().hex
        self.etcd_port = free_port()
        self.etcd_peer_port = free_port()
        self.port = free_port()
        self.controller_manager_port = free_port()
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.started_in: float | None = None

    # --- what tests use ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        return self.folder / "ca.crt"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.folder / "admin.kubeconfig"

    def api_client(self, token: str | None = None) -> Any:
        """A `kubernetes.client.ApiClient` to this API server with a bearer token (default: the admin's)."""
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self.url
        configuration.ssl_ca_cert = str(self.ca_file)
        configuration.verify_ssl = True
        configuration.api_key = {"authorization": token or self.admin_token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        configuration.retries = 0
        return client.ApiClient(configuration)

    def kubectl(
        self, *args: str, kubeconfig: Path | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the pinned kubectl against this server (admin unless another kubeconfig is given)."""
        return subprocess.run(
            [str(BIN / "kubectl"), "--kubeconfig", str(kubeconfig or self.admin_kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )

    def log_tail(self, name: str, lines: int = 30) -> str:
        path = self.folder / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    # --- lifecycle -----------------------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> Self:
        from tests.support.k8s_build import build_problem  # it reads BIN from here

        problem = build_problem()
        if problem is not None:
            raise ControlPlaneError(problem)
        began = time.monotonic()
        try:
            make_certificates(self.folder)
            (self.folder / "tokens.csv").write_text(f"{self.admin_token},{ADMIN_USER},{ADMIN_USER},system:masters\n")
            self.admin_kubeconfig.write_text(kubeconfig_text(self.url, self.ca_file, self.admin_token, ADMIN_USER))
            self._spawn("etcd", self._etcd_argv())
            self._wait("etcd", lambda: _http_ok(f"http://127.0.0.1:{self.etcd_port}/health"), began + timeout)
            self._spawn("kube-apiserver", self._apiserver_argv())
            self._wait("kube-apiserver", self._ready, began + timeout)
            self._spawn("kube-controller-manager", self._controller_manager_argv())
            self._install_scaled_object_crd(began + timeout)
            self._wait("the default ServiceAccount", self._default_service_account, began + timeout)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began
        return self

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            process = self.processes[name]
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=15)
        self.processes.clear()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    # --- the processes -------------------------------------------------------------------------------

    def _etcd_argv(self) -> list[str]:
        client = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        return [
            str(BIN / "etcd"),
            "--name=lagbot-test",
            f"--data-dir={self.folder / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=lagbot-test={peer}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]

    def _apiserver_argv(self) -> list[str]:
        f = self.folder
        return [
            str(BIN / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={f / 'apiserver-certs'}",
            f"--tls-cert-file={f / 'server.crt'}",
            f"--tls-private-key-file={f / 'server.key'}",
            f"--token-auth-file={f / 'tokens.csv'}",
            "--anonymous-auth=false",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={f / 'sa.pub'}",
            f"--service-account-signing-key-file={f / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            "--v=1",
        ]

    def _controller_manager_argv(self) -> list[str]:
        f = self.folder
        return [
            str(BIN / "kube-controller-manager"),
            f"--kubeconfig={self.admin_kubeconfig}",
            f"--authentication-kubeconfig={self.admin_kubeconfig}",
            f"--authorization-kubeconfig={self.admin_kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.controller_manager_port}",
            f"--cert-dir={f / 'controller-manager-certs'}",
            f"--root-ca-file={self.ca_file}",
            f"--controllers={','.join(CONTROLLERS)}",
            "--leader-elect=false",
            "--concurrent-deployment-syncs=2",
            "--profiling=false",
            "--v=1",
        ]

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.folder / f"{name}.log").open("wb")
        self.processes[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log.close()

    def _wait(self, what: str, probe: Callable[[], bool], deadline: float) -> None:
        while True:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise ControlPlaneError(f"{name} exited ({process.returncode}):\n{self.log_tail(name)}")
            if probe():
                return
            if time.monotonic() >= deadline:
                logs = "\n".join(f"--- {n}\n{self.log_tail(n)}" for n in self.processes)
                raise ControlPlaneError(f"{what} not ready in time\n{logs}")
            time.sleep(0.1)

    def _ready(self) -> bool:
        import ssl
        import urllib.request

        context = ssl.create_default_context(cafile=str(self.ca_file))
        request = urllib.request.Request(f"{self.url}/readyz", headers={"Authorization": f"Bearer {self.admin_token}"})
        try:
            with urllib.request.urlopen(request, context=context, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def _install_scaled_object_crd(self, deadline: float) -> None:
        from kubernetes import client

        with self.api_client() as api:
            extensions = client.ApiextensionsV1Api(api)
            extensions.create_custom_resource_definition(SCALED_OBJECT_CRD)

            def established() -> bool:
                crd = extensions.read_custom_resource_definition(SCALED_OBJECT_CRD["metadata"]["name"])
                return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or ())

            self._wait("the ScaledObject CRD", established, deadline)

    def _default_service_account(self) -> bool:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        with self.api_client() as api:
            try:
                client.CoreV1Api(api).read_namespaced_service_account("default", "default")
            except ApiException:
                return False
        return True


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False
