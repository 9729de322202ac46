"""One codec for what lagbot stores: a frozen dataclass to versioned JSON and back, through pydantic's TypeAdapter.

A stored type is registered once with its kind (the words an error names it by), its current format version and
an upgrader for each older version still read (`Codec.upgraders[n]` turns a version-n document into version n+1;
decoding chains them up to the current one). Whatever is wrong with a stored document (not JSON, a version not
read, a field missing or of the wrong type) raises lagbot.core.stored's StoredFormatError, naming the kind: stored
state is never guessed at. Documents are lagbot.core.stored's: a JSON object with its version under "v".

- A document written before its type was versioned (no "v") is version 0 when the codec has an upgrader for 0.
  `plain` reads one that is not even a JSON object (a value kept as it was before it had a type) as version 0.
- `versioned(value)` is the document with its "v", for one kept inside another's (a remediation's restore
  payload inside the restore queue's record); `from_document` reads it back.
- `omit_defaults`: fields at their default are left out (a shape older readers expect); decoding fills them in.
- An enum stored by its member's name rather than its value: annotate the field `Annotated[E, ByName(E)]`.
- `encode(value, derived=...)` adds read-only fields for other readers (a manifest's totals); decoding ignores
  fields the type does not have.

Adding a stored type (docs/development.md, "Recipes"): a frozen dataclass, and `register(Codec(kind, type,
version))` beside it; its `to_json` / `from_json` call the codec. tests/core/test_codec.py does this for a
throwaway type.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, Generic, TypeVar

from pydantic import GetCoreSchemaHandler, TypeAdapter, ValidationError
from pydantic_core import CoreSchema, core_schema

from lagbot.core.stored import StoredFormatError, encode

T = TypeVar("T")

Upgrader = Callable[[dict[str, Any]], dict[str, Any]]
"""A version-n document (without its "v") as version n+1 has it."""

UNVERSIONED = 0
"""The version of a document written without one (`Codec.upgraders[UNVERSIONED]` reads it)."""


@dataclass(frozen=True)
class ByName:
    """Stores an enum field by its member's name (read back case-insensitively): `Annotated[Status, ByName(Status)]`;
    `lower`: the name in lower case ("warn")."""

    enum: type[Enum]
    lower: bool = False

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(
            self.member,
            serialization=core_schema.plain_serializer_function_ser_schema(
                self.name, return_schema=core_schema.str_schema()
            ),
        )

    def name(self, member: Enum) -> str:
        return member.name.lower() if self.lower else member.name

    def member(self, value: object) -> Enum:
        if isinstance(value, self.enum):
            return value
        if isinstance(value, str) and value.upper() in self.enum.__members__:
            return self.enum[value.upper()]
        names = ", ".join(self.enum.__members__)
        raise ValueError(f"{value!r} is not one of {names}")


@dataclass(frozen=True)
class Codec(Generic[T]):
    """A stored type's codec: `encode` writes the current version; `decode` reads it and every upgradable one."""

    kind: str
    """What the stored document is, for error messages: "stored plan"."""
    type: type[T]
    version: int
    upgraders: Mapping[int, Upgrader] = field(default_factory=dict)
    """Version n -> the function that makes a version-n document a version n+1 one (0: one without a version)."""
    omit_defaults: bool = False
    """Leave fields at their default out of the document."""
    plain: Callable[[Any], dict[str, Any]] | None = None
    """A document that is not a JSON object (a value kept plain before its type had a codec) as the version-0
    object the upgrader of version 0 reads; None: such a document is refused."""

    @cached_property
    def _adapter(self) -> TypeAdapter[T]:
        return TypeAdapter(self.type)

    def encode(self, value: T, *, derived: Mapping[str, Any] | None = None) -> str:
        """Compact JSON of `value` with the current version under "v" (keys sorted), and `derived`'s fields."""
        return encode(self.version, {**self.to_document(value), **(derived or {})})

    def versioned(self, value: T) -> dict[str, Any]:
        """`value` as the JSON object `encode` writes, with its "v" (for a document kept inside another)."""
        return {"v": self.version, **self.to_document(value)}

    def to_document(self, value: T) -> dict[str, Any]:
        """`value` as the JSON object `encode` writes, without its "v"."""
        document: dict[str, Any] = self._adapter.dump_python(value, mode="json", exclude_defaults=self.omit_defaults)
        return document

    def decode(self, raw: bytes | str, *, kind: str | None = None) -> T:
        """The value a stored document holds, upgraded from an older version first. `kind`: what errors call it,
        when more precise than the codec's kind ("stored proposal 1f2e...").

        Raises:
            StoredFormatError: not JSON, a version this lagbot does not read, or not what it wrote.
        """
        return self.from_document(self.parse(raw, kind=kind), kind=kind)

    def from_document(self, document: Any, *, kind: str | None = None) -> T:
        """The value of an already parsed document (with its "v"), upgraded first. Raises StoredFormatError."""
        kind = kind or self.kind
        if not isinstance(document, dict) and self.plain is not None:
            document = self.plain(document)  # version 0: registering checked there is an upgrader for it
        if not isinstance(document, dict):
            raise StoredFormatError(f"{kind} is not a JSON object")
        document = dict(document)
        found = document.pop("v", None)
        if found is None and UNVERSIONED in self.upgraders:
            found = UNVERSIONED
        while found != self.version:
            upgrade = self.upgraders.get(found) if isinstance(found, int) else None
            if upgrade is None:
                raise StoredFormatError(f"{kind} has format version {found!r}; this lagbot reads {self.version}")
            try:
                document = upgrade(document)
            except (KeyError, IndexError, TypeError, ValueError, AttributeError):
                raise StoredFormatError(f"{kind} of format version {found} is not one lagbot wrote") from None
            found += 1
        try:
            return self._adapter.validate_python(document)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(document)'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            raise StoredFormatError(f"{kind} is not one lagbot wrote: {problems}") from None

    def parse(self, raw: bytes | str, *, kind: str | None = None) -> Any:
        """The JSON `raw` holds, not yet checked. Raises StoredFormatError when it is not JSON."""
        try:
            return json.loads(raw)
        except (ValueError, TypeError):
            raise StoredFormatError(f"{kind or self.kind} is not JSON") from None


_codecs: dict[type, Codec[Any]] = {}


def register(codec: Codec[T]) -> Codec[T]:
    """Register a stored type's codec (once per type). Returns it."""
    if codec.type in _codecs:
        raise ValueError(f"{codec.type.__name__} already has a codec ({_codecs[codec.type].kind})")
    if any(not UNVERSIONED <= v < codec.version for v in codec.upgraders):
        raise ValueError(f"{codec.kind}: upgraders are for versions below {codec.version}")
    if codec.plain is not None and UNVERSIONED not in codec.upgraders:
        raise ValueError(f"{codec.kind}: a plain document is version {UNVERSIONED}, which needs an upgrader")
    _codecs[codec.type] = codec
    return codec


def codec_of(stored_type: type[T]) -> Codec[T]:
    """The registered codec of `stored_type`."""
    found: Codec[T] = _codecs[stored_type]
    return found


def registered() -> tuple[Codec[Any], ...]:
    """Every registered codec, in the order registered."""
    return tuple(_codecs.values())
