"""The Kubernetes API client as the executor (lagbot.remediations.executors.kubernetes) uses it: built from the
config, a copy that sends each request once (for requests a caller bounds), the wait each request gets under the
deadlines that bound it, and its failures read (no answer in time, no answer at all, the user a 403 names, one line
for the problem)."""

from __future__ import annotations

import re
from typing import Any

from lagbot.remediations.executors import wording
from lagbot.remediations.executors.base import Deadline, ExecutorError
from lagbot.remediations.executors.config import KubernetesConfig

_FORBIDDEN_USER = re.compile(r'User "([^"]{1,253})"')


def build_api_client(config: KubernetesConfig, *, retries: int = 1) -> Any:
    """A `kubernetes.client.ApiClient` from the config (reads the kubeconfig, token or service account), whose
    requests are retried `retries` times (a connection refused or reset, an answer that did not come in time).

    Raises:
        ExecutorError: the kubeconfig, token file or in-cluster service account cannot be loaded.
    """
    from kubernetes import client
    from kubernetes import config as kube_config

    configuration = client.Configuration()
    try:
        if config.in_cluster:
            kube_config.load_incluster_config(client_configuration=configuration)
        elif config.kubeconfig is not None:
            kube_config.load_kube_config(
                config_file=str(config.kubeconfig.expanduser()),
                context=config.context,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            _configure_url(configuration, config)
    except (OSError, kube_config.ConfigException) as exc:
        raise ExecutorError(wording.k8s_client_unbuildable(str(exc))) from exc
    configuration.retries = retries
    return client.ApiClient(configuration)


def _configure_url(configuration: Any, config: KubernetesConfig) -> None:
    assert config.api_url is not None
    configuration.host = config.api_url.rstrip("/")
    configuration.verify_ssl = config.verify_tls
    if config.ca_file is not None:
        configuration.ssl_ca_cert = str(config.ca_file.expanduser())
    token = config.token.get_secret_value() if config.token else None
    if config.token_file is not None:
        token = config.token_file.expanduser().read_text(encoding="utf-8").strip()
    if token:
        configuration.api_key = {"authorization": token}
        configuration.api_key_prefix = {"authorization": "Bearer"}


def earliest(first: Deadline | None, second: Deadline | None) -> Deadline | None:
    """Pure: the deadline that comes first (None when neither is set)."""
    if first is None or second is None:
        return first or second
    return first if first.at <= second.at else second


def request_timeout(timeout: float, deadline: Deadline | None, now: float) -> float:
    """Pure: the seconds a request sent at `now` may wait: the executor's `timeout`, or what is left of the deadline
    when that is less (0: it has passed, send nothing)."""
    return timeout if deadline is None else min(timeout, deadline.left(now))


def timed_out(exc: Exception) -> bool:
    """Whether a request failed for want of an answer in time (urllib3's timeouts, or retries that ended in one)."""
    from urllib3.exceptions import TimeoutError as Urllib3Timeout

    return isinstance(exc, Urllib3Timeout) or isinstance(getattr(exc, "reason", None), Urllib3Timeout)


def unanswered(exc: Exception) -> bool:
    """Whether a request failed without an answer from the server: a timeout, a connection refused, reset or cut
    (urllib3's errors, and the retries that ended in one), as opposed to an answer that refused it."""
    from urllib3.exceptions import HTTPError

    return isinstance(exc, HTTPError | OSError)


def single_try_client(api_client: Any) -> Any:
    """An API client like `api_client` (a copy of its configuration and headers) that sends each request once."""
    import copy

    from kubernetes import client

    configuration = copy.deepcopy(api_client.configuration)
    configuration.retries = 0
    single = client.ApiClient(configuration)
    single.default_headers = dict(api_client.default_headers)
    return single


def forbidden_user(exc: Exception) -> str | None:
    """The user a 403 names ('system:serviceaccount:lagbot:lagbot'), if the API server said."""
    message = _status_message(getattr(exc, "body", None)) or ""
    match = _FORBIDDEN_USER.search(message)
    return match.group(1) if match else None


def api_problem(exc: Exception) -> str:
    """One line for an API failure: '404 Not Found: deployments.apps "x" not found'."""
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        return wording.k8s_api_problem(exc.status, exc.reason, _status_message(exc.body))
    cause = getattr(exc, "reason", None)  # urllib3's MaxRetryError wraps the connection error
    return f"{type(cause or exc).__name__}: {cause or exc}"


def _status_message(body: Any) -> str | None:
    import json

    if not body:
        return None
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return str(body)[:200]
    message = data.get("message") if isinstance(data, dict) else None
    return str(message) if message else None
