"""A local HTTP fake of the few Kubernetes API endpoints lagbot's executor uses (no cluster runs here).

It keeps objects (Deployments, StatefulSets, Pods, KEDA ScaledObjects), answers as the API server does
(the scale subresource, strategic / merge patches of maps, 404 Status objects), records every request
(method, path, query, headers, JSON body) and can answer chosen requests with an error status:

```python
with FakeKubernetes().start() as k8s:
    k8s.add_workload("deployment", "default", "orders", replicas=2)
    k8s.fail("PATCH", "/apis/apps/v1/namespaces/default/deployments/orders/scale", 409)
    ...                                   # point the client at k8s.url
    assert k8s.requests[-1].body == {"spec": {"replicas": 4}}
```

Served: GET/PATCH /apis/apps/v1/namespaces/{ns}/{deployments|statefulsets}/{name}/scale,
PATCH /apis/apps/v1/namespaces/{ns}/{deployments|statefulsets}/{name},
GET /api/v1/namespaces/{ns}/pods (fieldSelector status.podIP / status.phase), DELETE .../pods/{name},
GET/PATCH /apis/keda.sh/v1alpha1/namespaces/{ns}/scaledobjects/{name}. Anything else is a 404.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

REASONS = {400: "BadRequest", 404: "NotFound", 409: "Conflict", 415: "UnsupportedMediaType", 500: "InternalError"}
PATCH_TYPES = ("application/merge-patch+json", "application/strategic-merge-patch+json")


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    """Header names in lower case."""
    body: Any


@dataclass
class Workload:
    kind: str
    namespace: str
    name: str
    replicas: int
    template_annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class Pod:
    namespace: str
    name: str
    ip: str
    phase: str = "Running"


def merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386 merge (what both patch types do to plain maps): null removes a key."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = json.loads(json.dumps(value))
    return target


class FakeKubernetes:
    """The fake API server; thread-safe; objects and recorded requests are plain attributes."""

    def __init__(self) -> None:
        self.workloads: dict[tuple[str, str, str], Workload] = {}
        self.pods: dict[tuple[str, str], Pod] = {}
        self.scaled_objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[Request] = []
        self._failures: list[tuple[str, str, int, str]] = []
        self._delays: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- set-up ---------------------------------------------------------------------------------

    def add_workload(self, kind: str, namespace: str, name: str, *, replicas: int) -> Workload:
        workload = Workload(kind, namespace, name, replicas)
        self.workloads[(kind, namespace, name)] = workload
        return workload

    def add_pod(self, namespace: str, name: str, *, ip: str, phase: str = "Running") -> Pod:
        pod = Pod(namespace, name, ip, phase)
        self.pods[(namespace, name)] = pod
        return pod

    def add_scaled_object(self, namespace: str, name: str, *, annotations: dict[str, str] | None = None) -> None:
        self.scaled_objects[(namespace, name)] = {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations or {})},
            "spec": {"scaleTargetRef": {"name": name}, "minReplicaCount": 1, "maxReplicaCount": 10},
        }

    def fail(self, method: str, path: str, status: int, message: str = "injected failure") -> None:
        """Answer the next `method` request to `path` with `status` (a Kubernetes Status object)."""
        with self._lock:
            self._failures.append((method, path, status, message))

    def delay(self, method: str, path: str, seconds: float) -> None:
        """Answer `method` requests to `path` only after `seconds` (to test the client's timeout)."""
        with self._lock:
            self._delays[(method, path)] = seconds

    def start(self) -> Self:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="k8s-fake", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # --- serving --------------------------------------------------------------------------------

    def handle(self, request: Request) -> tuple[int, dict[str, Any]]:
        with self._lock:
            pause = self._delays.get((request.method, request.path), 0.0)
        if pause:
            time.sleep(pause)
        with self._lock:
            self.requests.append(request)
            for failure in self._failures:
                if failure[:2] == (request.method, request.path):
                    self._failures.remove(failure)
                    return failure[2], status_object(failure[2], failure[3])
            return self._route(request)

    def _route(self, request: Request) -> tuple[int, dict[str, Any]]:
        method, path = request.method, request.path
        if request.method == "PATCH" and request.headers.get("content-type") not in PATCH_TYPES:
            return 415, status_object(415, f"unsupported patch type {request.headers.get('content-type')}")
        apps = re.fullmatch(r"/apis/apps/v1/namespaces/([^/]+)/(deployments|statefulsets)/([^/]+)(/scale)?", path)
        if apps:
            namespace, plural, name, scale = apps.groups()
            return self._apps(method, plural[:-1], namespace, name, scale is not None, request.body)
        pods = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?", path)
        if pods:
            return self._pods(method, pods.group(1), pods.group(2), request.query)
        keda = re.fullmatch(r"/apis/keda.sh/v1alpha1/namespaces/([^/]+)/scaledobjects/([^/]+)", path)
        if keda:
            return self._scaled_object(method, keda.group(1), keda.group(2), request.body)
        return 404, status_object(404, f"the server could not find the requested resource ({method} {path})")

    def _apps(
        self, method: str, kind: str, namespace: str, name: str, scale: bool, body: Any
    ) -> tuple[int, dict[str, Any]]:
        workload = self.workloads.get((kind, namespace, name))
        if workload is None:
            return 404, status_object(404, f'{kind}s.apps "{name}" not found')
        if scale and method in ("GET", "PATCH"):
            if method == "PATCH":
                workload.replicas = int(body["spec"]["replicas"])
            return 200, scale_object(workload)
        if not scale and method == "PATCH":
            template = ((body.get("spec") or {}).get("template") or {}).get("metadata") or {}
            merge(workload.template_annotations, template.get("annotations") or {})
            return 200, workload_object(workload)
        return 405, status_object(405, f"{method} is not allowed here")

    def _pods(
        self, method: str, namespace: str, name: str | None, query: dict[str, list[str]]
    ) -> tuple[int, dict[str, Any]]:
        if name is None and method == "GET":
            selectors = dict(s.split("=", 1) for q in query.get("fieldSelector", []) for s in q.split(","))
            items = [
                pod_object(p)
                for p in self.pods.values()
                if p.namespace == namespace
                and selectors.get("status.podIP", p.ip) == p.ip
                and selectors.get("status.phase", p.phase) == p.phase
            ]
            return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
        if name is not None and method == "DELETE":
            pod = self.pods.pop((namespace, name), None)
            if pod is None:
                return 404, status_object(404, f'pods "{name}" not found')
            return 200, pod_object(pod)
        return 405, status_object(405, f"{method} is not allowed here")

    def _scaled_object(self, method: str, namespace: str, name: str, body: Any) -> tuple[int, dict[str, Any]]:
        scaled_object = self.scaled_objects.get((namespace, name))
        if scaled_object is None:
            return 404, status_object(404, f'scaledobjects.keda.sh "{name}" not found')
        if method == "PATCH":
            merge(scaled_object, body)
        elif method != "GET":
            return 405, status_object(405, f"{method} is not allowed here")
        return 200, json.loads(json.dumps(scaled_object))


def status_object(code: int, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": REASONS.get(code, "Unknown"),
        "code": code,
    }


def scale_object(workload: Workload) -> dict[str, Any]:
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": workload.name, "namespace": workload.namespace},
        "spec": {"replicas": workload.replicas},
        "status": {"replicas": workload.replicas, "selector": f"app={workload.name}"},
    }


def workload_object(workload: Workload) -> dict[str, Any]:
    return {
        "kind": "Deployment" if workload.kind == "deployment" else "StatefulSet",
        "apiVersion": "apps/v1",
        "metadata": {"name": workload.name, "namespace": workload.namespace},
        "spec": {
            "replicas": workload.replicas,
            "selector": {"matchLabels": {"app": workload.name}},
            "serviceName": workload.name,
            "template": {
                "metadata": {"labels": {"app": workload.name}, "annotations": dict(workload.template_annotations)},
                "spec": {"containers": [{"name": "consumer", "image": "consumer:1"}]},
            },
        },
    }


def pod_object(pod: Pod) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
        "spec": {"containers": [{"name": "consumer", "image": "consumer:1"}]},
        "status": {"phase": pod.phase, "podIP": pod.ip},
    }


def _handler(fake: FakeKubernetes) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            request = Request(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw) if raw else None,
            )
            status, payload = fake.handle(request)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
