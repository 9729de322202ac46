"""Settings of the executors, declared once with their defaults, and the factory that builds one.

Parsing never does I/O and never imports a client library: building an executor (`build_executor`)
is a separate step, and even then the Kubernetes client connects only on its first call.

```yaml
executors:
  kubernetes: {kubeconfig: ~/.kube/config, context: prod, timeout: 10}
  command:
    scale: [kubectl, scale, "{kind}/{workload}", "--replicas={replicas}", -n, "{namespace}"]
    replicas: [kubectl, get, "{kind}/{workload}", -n, "{namespace}", -o, "jsonpath={{.spec.replicas}}"]
  local: {state_dir: /var/tmp/lagbot-fleets}   # the dev kit's consumer fleet (lagbot.devkit.fleet)
```
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from lagbot.remediations.executors import wording

if TYPE_CHECKING:
    from lagbot.remediations.executors.base import Executor

ExecutorName = Literal["kubernetes", "command", "local"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KubernetesConfig(_Strict):
    """How to reach the API server: exactly one of `api_url`, `kubeconfig`, `in_cluster`.

    `api_url` takes a bearer `token` (or a `token_file`, read when the client is built); `verify_tls`
    and `ca_file` apply to it. `timeout` bounds every request (seconds).
    """

    api_url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(/[^\s]*)?$")
    token: SecretStr | None = None
    token_file: Path | None = None
    kubeconfig: Path | None = None
    context: str | None = None
    in_cluster: bool = False
    verify_tls: bool = True
    ca_file: Path | None = None
    timeout: float = Field(default=10.0, gt=0, le=300)

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        sources = [n for n, on in (("api_url", self.api_url), ("kubeconfig", self.kubeconfig)) if on]
        if self.in_cluster:
            sources.append("in_cluster")
        if len(sources) != 1:
            raise ValueError(wording.k8s_config_sources(sources))
        if (self.token or self.token_file) and not self.api_url:
            raise ValueError(wording.k8s_config_only_with("token and token_file", "api_url"))
        if self.token and self.token_file:
            raise ValueError(wording.k8s_config_exclusive("token", "token_file"))
        if self.context and not self.kubeconfig:
            raise ValueError(wording.k8s_config_only_with("context", "kubeconfig"))
        return self


COMMAND_OPERATIONS = ("scale", "restart", "restart_member", "replicas")
"""The operations a command template can be given for."""

_COMMON_FIELDS = {"workload", "namespace", "kind"}
COMMAND_FIELDS: dict[str, frozenset[str]] = {
    "scale": frozenset(_COMMON_FIELDS | {"replicas"}),
    "restart": frozenset(_COMMON_FIELDS),
    "restart_member": frozenset(_COMMON_FIELDS | {"client_id", "host", "member_id"}),
    "replicas": frozenset(_COMMON_FIELDS),
}
"""The placeholders each operation's template may use."""


def template_fields(element: str) -> list[str]:
    """The placeholder names in one argv element ('--replicas={replicas}' -> ['replicas']).

    Raises:
        ValueError: the element is not a valid template (an unmatched brace, a format spec, an index).
    """
    try:
        parsed = list(string.Formatter().parse(element))
    except ValueError as exc:
        raise ValueError(wording.command_bad_element(element, str(exc))) from None
    names = []
    for _text, name, spec, conversion in parsed:
        if name is None:
            continue
        if not re.fullmatch(r"[a-z_]+", name) or spec or conversion:
            raise ValueError(wording.command_bad_element(element, "use plain {name} placeholders"))
        names.append(name)
    return names


class CommandConfig(_Strict):
    """An argv template per operation, run without a shell; each value is validated before substitution.

    The first element (the program) is fixed: it may not hold a placeholder. `timeout` bounds each run
    (the whole process group is killed after it); the output kept is the last `output_lines` lines and
    at most `output_chars` characters. `replicas` must print the count as the last line of its output.
    """

    scale: list[str] | None = None
    restart: list[str] | None = None
    restart_member: list[str] | None = None
    replicas: list[str] | None = None
    timeout: float = Field(default=60.0, gt=0, le=3600)
    output_lines: int = Field(default=20, ge=1, le=1000)
    output_chars: int = Field(default=1500, ge=100, le=40_000)
    cwd: Path | None = None

    @model_validator(mode="after")
    def _templates_valid(self) -> Self:
        given = {op: argv for op in COMMAND_OPERATIONS if (argv := getattr(self, op)) is not None}
        if not given:
            raise ValueError(wording.command_no_templates(COMMAND_OPERATIONS))
        for operation, argv in given.items():
            _check_template(operation, argv)
        return self

    def template(self, operation: str) -> list[str] | None:
        argv: list[str] | None = getattr(self, operation)
        return argv


def _check_template(operation: str, argv: list[str]) -> None:
    if not argv or not argv[0]:
        raise ValueError(wording.command_no_program(operation))
    if template_fields(argv[0]):
        raise ValueError(wording.command_program_placeholder(operation, argv[0]))
    allowed = COMMAND_FIELDS[operation]
    for element in argv[1:]:
        unknown = [name for name in template_fields(element) if name not in allowed]
        if unknown:
            raise ValueError(wording.command_unknown_placeholder(operation, unknown[0], sorted(allowed)))


class LocalConfig(_Strict):
    """A fleet of consumer processes on this machine. `state_dir` holds one directory per fleet."""

    state_dir: Path
    stop_timeout: float = Field(default=15.0, gt=0, le=300)
    """Seconds a member has to leave its group after SIGTERM before it is killed."""
    start_timeout: float = Field(default=30.0, gt=0, le=300)
    """Seconds a new member has to report that it runs."""
    lock_timeout: float = Field(default=120.0, gt=0, le=3600)
    """Seconds to wait for another process's change of the same fleet to finish."""
    python: str | None = None
    """The interpreter that runs the members (default: the one running lagbot)."""

    @field_validator("state_dir")
    @classmethod
    def _absolute(cls, path: Path) -> Path:
        return path.expanduser()


class ExecutorsConfig(_Strict):
    """The executors this deployment of lagbot may use; a workload names one of them."""

    kubernetes: KubernetesConfig | None = None
    command: CommandConfig | None = None
    local: LocalConfig | None = None


ExecutorFactory = Callable[[Any], "Executor"]
"""Builds an executor from its section of the configuration."""

_factories: dict[str, ExecutorFactory] = {}
"""Executors that live outside this package, by name: the dev kit's local fleet registers "local" here
(lagbot.devkit.fleet.register_local_executor), for the processes that may act on one (`lagbot run` with an
`executors.local` section, the demo, the tests)."""


def register_executor(name: ExecutorName, factory: ExecutorFactory) -> None:
    """Let `build_executor(name, ...)` build with `factory` (registering the same factory again changes nothing)."""
    _factories[name] = factory


def build_executor(name: str, config: ExecutorsConfig, *, budget: float | None = None) -> Executor:
    """The executor called `name`, built from its section of `config` (no connection is made yet).

    `budget`: seconds the requests it is built for may take all together (`lagbot check`'s pod reads, within its
    --timeout); the kubernetes executor, the one that reads pods, keeps it (the others are bounded call by call).

    Raises:
        ExecutorError: no such executor, or it has no configuration.
    """
    from lagbot.remediations.executors.base import ExecutorError

    if name not in ("kubernetes", "command", "local"):
        raise ExecutorError(wording.executor_unknown(name))
    section = getattr(config, name)
    if section is None:
        raise ExecutorError(wording.executor_not_configured(name))
    if name == "kubernetes":
        from lagbot.remediations.executors.kubernetes import KubernetesExecutor

        return KubernetesExecutor(section, budget=budget)
    if name == "command":
        from lagbot.remediations.executors.command import CommandExecutor

        return CommandExecutor(section)
    factory = _factories.get(name)
    if factory is None:
        raise ExecutorError(wording.executor_not_registered(name))
    return factory(section)
