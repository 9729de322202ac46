"""One codec for stored types (lagbot.core.codec), as docs/development.md's recipe adds one: a frozen dataclass and
`register(Codec(kind, type, version, upgraders))`. Older versions are upgraded step by step; whatever is wrong is a
StoredFormatError naming the kind."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Annotated, Any

import pytest

from lagbot.core import codec
from lagbot.core.stored import StoredFormatError
from lagbot.remediations.base import PLAN_CODEC, Plan, Risk


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Sample:
    """Version 3: `name`, `colour`, `sizes`; 2 had `size` alone; 1 called the name `title`."""

    name: str
    colour: Colour
    sizes: tuple[int, ...] = ()


def _one_to_two(document: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in document.items() if k != "title"}, "name": document["title"]}


def _two_to_three(document: dict[str, Any]) -> dict[str, Any]:
    size = document.pop("size", None)
    return {**document, "sizes": [] if size is None else [size]}


SAMPLE = codec.Codec("stored sample", Sample, 3, {1: _one_to_two, 2: _two_to_three})


def test_a_value_round_trips_as_compact_json_with_its_version() -> None:
    sample = Sample("a", Colour.BLUE, (1, 2))
    assert SAMPLE.encode(sample) == '{"colour":"blue","name":"a","sizes":[1,2],"v":3}'
    decoded = SAMPLE.decode(SAMPLE.encode(sample))
    assert decoded == sample and type(decoded.colour) is Colour and type(decoded.sizes) is tuple


def test_older_versions_are_upgraded_one_step_at_a_time() -> None:
    assert SAMPLE.decode('{"v":2,"name":"b","colour":"red","size":4}') == Sample("b", Colour.RED, (4,))
    assert SAMPLE.decode(b'{"v":1,"title":"c","colour":"red","size":5}') == Sample("c", Colour.RED, (5,))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{", "stored sample is not JSON"),
        ("[3]", "stored sample is not a JSON object"),
        ('{"v":4,"name":"a","colour":"red"}', "stored sample has format version 4; this lagbot reads 3"),
        ('{"name":"a","colour":"red"}', "stored sample has format version None; this lagbot reads 3"),
        (
            '{"v":3,"name":"a","colour":"green","extra":1}',
            "stored sample is not one lagbot wrote: colour: Input should be 'red' or 'blue'",
        ),
        ('{"v":3,"colour":"red"}', "stored sample is not one lagbot wrote: name: Field required"),
    ],
)
def test_anything_wrong_is_one_error_naming_the_kind(raw: str, message: str) -> None:
    with pytest.raises(StoredFormatError) as raised:
        SAMPLE.decode(raw)
    assert str(raised.value) == message


def test_a_type_is_registered_once_and_upgraders_are_for_older_versions() -> None:
    assert codec.codec_of(Plan) is PLAN_CODEC
    with pytest.raises(ValueError, match="Plan already has a codec \\(stored plan\\)"):
        codec.register(codec.Codec("another plan", Plan, 1))
    with pytest.raises(ValueError, match="upgraders are for versions below 3"):
        codec.register(codec.Codec("stored sample", Sample, 3, {3: _two_to_three}))


def test_a_plan_is_stored_through_it_in_the_format_lagbot_always_wrote() -> None:
    plan = Plan("scale", "prod", "orders", "Scale orders 2 -> 4", Risk.MEDIUM, {"replicas": 4}, steps=("scale",),
                before={"replicas": 2}, after={"replicas": 4}, preflight=("at target",), created_at=5.0)  # fmt: skip
    stored = plan.to_json()
    assert json.loads(stored) == {
        "v": 1, "action": "scale", "cluster": "prod", "group": "orders", "summary": "Scale orders 2 -> 4",
        "risk": "medium", "params": {"replicas": 4}, "steps": ["scale"], "before": {"replicas": 2},
        "after": {"replicas": 4}, "preflight": ["at target"], "created_at": 5.0, "confirm": None,
    }  # fmt: skip
    assert Plan.from_json(stored) == plan
    with pytest.raises(StoredFormatError) as raised:
        Plan.from_json(stored.replace('"medium"', '"extreme"'))
    assert str(raised.value) == "stored plan is not one lagbot wrote: risk: Input should be 'low', 'medium' or 'high'"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


@dataclass(frozen=True)
class Tagged:
    """Version 1; written before it had a version (0) with `label` alone."""

    label: str
    level: Annotated[Level, codec.ByName(Level)] = Level.LOW
    quiet: Annotated[Level, codec.ByName(Level, lower=True)] = Level.LOW
    notes: tuple[str, ...] = ()


TAGGED = codec.Codec("stored tag", Tagged, 1, {codec.UNVERSIONED: lambda d: d}, omit_defaults=True)


def test_enums_by_name_defaults_left_out_and_derived_fields_only_written() -> None:
    tag = Tagged("a", Level.HIGH, Level.HIGH)
    assert TAGGED.encode(tag) == '{"label":"a","level":"HIGH","quiet":"high","v":1}'
    assert TAGGED.encode(Tagged("b"), derived={"count": 0}) == '{"count":0,"label":"b","v":1}'
    assert TAGGED.decode('{"count":0,"label":"b","v":1}') == Tagged("b")
    assert TAGGED.decode('{"label":"a","level":"high","quiet":"HIGH","v":1}') == tag  # names in either case
    with pytest.raises(StoredFormatError) as refused:
        TAGGED.decode('{"label":"a","level":"MIDDLE","v":1}')
    assert (
        str(refused.value) == "stored tag is not one lagbot wrote: level: Value error, 'MIDDLE' is not one of LOW, HIGH"
    )


def test_a_document_without_a_version_is_read_only_by_a_codec_with_an_upgrader_for_it() -> None:
    assert TAGGED.decode('{"label":"old"}') == Tagged("old")
    with pytest.raises(StoredFormatError, match="stored sample has format version None; this lagbot reads 3"):
        SAMPLE.decode('{"name":"a","colour":"red"}')


def test_an_upgrader_that_cannot_read_an_old_document_is_the_same_error_and_a_caller_may_name_it() -> None:
    with pytest.raises(StoredFormatError) as refused:
        SAMPLE.decode('{"v":1,"colour":"red"}', kind="stored sample s1")  # version 1 without its title
    assert str(refused.value) == "stored sample s1 of format version 1 is not one lagbot wrote"


LABELLED = codec.Codec(
    "stored label", Tagged, 1, {codec.UNVERSIONED: lambda d: d}, omit_defaults=True, plain=lambda v: {"label": v}
)
"""Tagged, as once kept plain: the label alone, a JSON string (a payload stored before it had a type)."""


def test_a_plain_document_is_version_0_through_the_codecs_reader_of_it_and_refused_by_any_other() -> None:
    assert LABELLED.decode('"old"') == Tagged("old")
    assert LABELLED.from_document("old") == Tagged("old")
    assert LABELLED.decode('{"label":"older"}') == Tagged("older")  # version 0 as an object still reads
    with pytest.raises(StoredFormatError) as refused:
        LABELLED.decode("3")  # plain, but not what version 0 held
    assert str(refused.value) == "stored label is not one lagbot wrote: label: Input should be a valid string"
    with pytest.raises(StoredFormatError, match=r"^stored tag is not a JSON object$"):
        TAGGED.decode('"old"')  # no reader of a plain document: refused as before
    with pytest.raises(ValueError, match="stored label: a plain document is version 0, which needs an upgrader"):
        codec.register(codec.Codec("stored label", Level, 1, plain=lambda v: {"label": v}))


def test_a_versioned_document_kept_inside_another_carries_its_version_and_reads_back() -> None:
    tag = Tagged("a", Level.HIGH)
    assert LABELLED.versioned(tag) == {"v": 1, "label": "a", "level": "HIGH"}
    assert json.dumps(LABELLED.versioned(tag), sort_keys=True, separators=(",", ":")) == LABELLED.encode(tag)
    assert LABELLED.from_document(LABELLED.versioned(tag)) == tag
    with pytest.raises(StoredFormatError, match=r"^stored label has format version 2; this lagbot reads 1$"):
        LABELLED.from_document({"v": 2, "label": "a"})
