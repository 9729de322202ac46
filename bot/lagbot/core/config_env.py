"""Settings from environment variables: `<PREFIX><FIELD>`, nested with `__`, a list or a mapping given as JSON.

How a variable is read (the conventions of pydantic-settings' environment source, which lagbot used before):
- its name is matched case-insensitively (`lagbot_window__samples` is `LAGBOT_WINDOW__SAMPLES`); the part after
  the prefix, lower-cased and split at `__`, is the field's path (`window`, `samples`);
- a variable whose first field is not a setting is not lagbot's (`LAGBOT_FLEET_DIR`, `LAGBOT_KAFKA_CACHE`) and is
  left alone; an unknown field further down is passed on, so validation names it as an extra input;
- a field holding a model, a list or a mapping takes JSON (`LAGBOT_CLUSTERS='[{"name": ...}]'`), and nested
  variables are merged into it (`LAGBOT_WINDOW='{"samples": 7}'` with `LAGBOT_WINDOW__TTL=1h`); every other
  value is passed as text for the model to validate (`"7"` for a number);
- the environment wins over what it is merged onto (the file), mapping by mapping.

Kept here, not in pydantic-settings: reading a dozen variables does not need its ~30 ms of imports, which were a
tenth of a `lagbot check`.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from lagbot.core import messages

DELIMITER = "__"
_CONTAINERS = (list, tuple, set, frozenset, dict)


class EnvValueError(ValueError):
    """A variable that must hold JSON does not: the message names it and its field."""

    def __init__(self, variable: str, field: str) -> None:
        super().__init__(messages.config_env_not_json(variable, field))


def environment_values(model: type[BaseModel], prefix: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The values the environment gives `model`'s fields, as nested mappings (in name order, so the same
    environment always gives the same values).

    Raises:
        EnvValueError: a variable of a model, list or mapping field that is not JSON.
    """
    values: dict[str, Any] = {}
    wanted = prefix.upper()
    for variable in sorted(environ):
        if not variable.upper().startswith(wanted):
            continue
        path = variable[len(wanted) :].lower().split(DELIMITER)
        if path[0] not in model.model_fields:
            continue
        annotation = _annotation_at(model, path)
        _put(values, path, _decoded(variable, ".".join(path), environ[variable], annotation))
    return values


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `over` on top: mappings in both are merged key by key, any other value of `over` wins."""
    result = dict(base)
    for key, value in over.items():
        below = result.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            result[key] = merged(below, value)
        else:
            result[key] = value
    return result


def _put(values: dict[str, Any], path: list[str], value: Any) -> None:
    """Set `value` at `path`, merging with what a variable of a shorter path (a JSON mapping) already gave."""
    node = values
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {} if not isinstance(child, Mapping) else dict(child)
        node = child
    last = path[-1]
    below = node.get(last)
    node[last] = merged(below, value) if isinstance(below, Mapping) and isinstance(value, Mapping) else value


def _annotation_at(model: type[BaseModel], path: list[str]) -> Any:
    """The type annotation of the field at `path` (None when some step of it is not a field of a model)."""
    annotation: Any = model
    for key in path:
        owner = _model_in(annotation)
        if owner is None or key not in owner.model_fields:
            return None
        annotation = owner.model_fields[key].annotation
    return annotation


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model `annotation` is (or is one of, in a union such as `Model | None`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if _is_union(annotation):
        return next((m for m in map(_model_in, get_args(annotation)) if m is not None), None)
    return None


def _decoded(variable: str, field: str, text: str, annotation: Any) -> Any:
    """`text` as JSON where the field takes a model, a list or a mapping; as it is otherwise. A union that also
    takes plain text keeps text that is not JSON."""
    if not text or not _takes_json(annotation):
        return text
    try:
        return json.loads(text)
    except ValueError:
        if _takes_text_too(annotation):
            return text
        raise EnvValueError(variable, field) from None


def _takes_json(annotation: Any) -> bool:
    if _is_union(annotation):
        return any(_takes_json(arg) for arg in get_args(annotation))
    origin = get_origin(annotation) or annotation
    return isinstance(origin, type) and (issubclass(origin, _CONTAINERS) or issubclass(origin, BaseModel))


def _takes_text_too(annotation: Any) -> bool:
    return _is_union(annotation) and any(arg is not type(None) and not _takes_json(arg) for arg in get_args(annotation))


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)
