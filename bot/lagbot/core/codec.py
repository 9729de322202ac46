"""One codec for what lagbot stores: a frozen dataclass to versioned JSON and back, through pydantic's TypeAdapter.

A stored type is registered once with its kind (the words an error names it by), its current format version and
an upgrader for each older version still read (`Codec.upgraders[n]` turns a version-n document into version n+1;
decoding chains them up to the current one). Whatever is wrong with a stored document (not JSON, a version not
read, a field missing or of the wrong type) raises lagbot.core.stored's StoredFormatError, naming the kind: stored
state is never guessed at. Documents are lagbot.core.stored's: a JSON object with its version under "v".

Adding a stored type (docs/development.md, "Recipes"): a frozen dataclass, and `register(Codec(kind, type,
version))` beside it; its `to_json` / `from_json` call the codec. tests/core/test_codec.py does this for a
throwaway type.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter, ValidationError

from lagbot.core.stored import StoredFormatError, encode

T = TypeVar("T")

Upgrader = Callable[[dict[str, Any]], dict[str, Any]]
"""A version-n document (without its "v") as version n+1 has it."""


@dataclass(frozen=True)
class Codec(Generic[T]):
    """A stored type's codec: `encode` writes the current version; `decode` reads it and every upgradable one."""

    kind: str
    """What the stored document is, for error messages: "stored plan"."""
    type: type[T]
    version: int
    upgraders: Mapping[int, Upgrader] = field(default_factory=dict)
    """Version n -> the function that makes a version-n document a version n+1 one."""

    @cached_property
    def _adapter(self) -> TypeAdapter[T]:
        return TypeAdapter(self.type)

    def encode(self, value: T) -> str:
        """Compact JSON of `value` with the current version under "v" (keys sorted)."""
        return encode(self.version, self._adapter.dump_python(value, mode="json"))

    def decode(self, raw: bytes | str) -> T:
        """The value a stored document holds, upgraded from an older version first.

        Raises:
            StoredFormatError: not JSON, a version this lagbot does not read, or not what it wrote.
        """
        return self.from_document(self._load(raw))

    def from_document(self, document: Any) -> T:
        """The value of an already parsed document (with its "v"), upgraded first. Raises StoredFormatError."""
        if not isinstance(document, dict):
            raise StoredFormatError(f"{self.kind} is not a JSON object")
        document = dict(document)
        found = document.pop("v", None)
        while found != self.version:
            upgrade = self.upgraders.get(found) if isinstance(found, int) else None
            if upgrade is None:
                raise StoredFormatError(f"{self.kind} has format version {found!r}; this lagbot reads {self.version}")
            document, found = upgrade(document), found + 1
        try:
            return self._adapter.validate_python(document)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(document)'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            raise StoredFormatError(f"{self.kind} is not one lagbot wrote: {problems}") from None

    def _load(self, raw: bytes | str) -> Any:
        try:
            return json.loads(raw)
        except (ValueError, TypeError):
            raise StoredFormatError(f"{self.kind} is not JSON") from None


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(document)"


_codecs: dict[type, Codec[Any]] = {}


def register(codec: Codec[T]) -> Codec[T]:
    """Register a stored type's codec (once per type). Returns it."""
    if codec.type in _codecs:
        raise ValueError(f"{codec.type.__name__} already has a codec ({_codecs[codec.type].kind})")
    if any(not 0 < v < codec.version for v in codec.upgraders):
        raise ValueError(f"{codec.kind}: upgraders are for versions below {codec.version}")
    _codecs[codec.type] = codec
    return codec


def codec_of(stored_type: type[T]) -> Codec[T]:
    """The registered codec of `stored_type`."""
    found: Codec[T] = _codecs[stored_type]
    return found


def registered() -> tuple[Codec[Any], ...]:
    """Every registered codec, in the order registered."""
    return tuple(_codecs.values())
