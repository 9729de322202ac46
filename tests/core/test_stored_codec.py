"""The one codec for what lagbot keeps in Redis: versioned JSON documents and rows, one error."""

from __future__ import annotations

import pytest

from lagbot.core.stored import StoredFormatError, check_version, decode, decode_row, encode


def test_a_document_round_trips_with_its_version_under_v() -> None:
    raw = encode(3, {"b": [1, None], "a": "x"})
    assert raw == '{"a":"x","b":[1,null],"v":3}'
    assert decode("thing", 3, raw) == {"a": "x", "b": [1, None]}
    assert decode("thing", 3, raw.encode()) == {"a": "x", "b": [1, None]}  # Redis replies are bytes


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"v":2,"a":1}', "thing has format version 2; this lagbot reads 3"),
        ('{"a":1}', "thing has format version None; this lagbot reads 3"),
        ("[3, 1]", "thing has format version None; this lagbot reads 3"),
        ("not json", "thing is not JSON"),
        (b"\xff\xfe", "thing is not JSON"),
    ],
)
def test_anything_else_is_refused_by_name_never_guessed_at(raw: str | bytes, problem: str) -> None:
    with pytest.raises(StoredFormatError) as refused:
        decode("thing", 3, raw)
    assert str(refused.value) == problem


def test_an_older_version_is_read_only_when_named() -> None:
    assert decode("thing", 2, '{"v":1,"a":1}', also=(1,)) == {"a": 1}
    with pytest.raises(StoredFormatError):
        decode("thing", 2, '{"v":0,"a":1}', also=(1,))


def test_rows_carry_their_version_first_and_hashes_as_text() -> None:
    assert decode_row("point", 1, "[1,2.5,null]") == [2.5, None]
    with pytest.raises(StoredFormatError, match="point has format version 2; this lagbot reads 1"):
        decode_row("point", 1, "[2,2.5]")
    check_version("proposal p1", 1, "1")
    with pytest.raises(StoredFormatError, match="proposal p1 has format version '2'; this lagbot reads 1"):
        check_version("proposal p1", 1, "2")
