"""The item file's fast encoder writes byte for byte what ``json.dumps(indent=2, sort_keys=True)`` writes."""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.session.items import MemoryItem, decode_item, encode_item, iso, new_item_id

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["", "a\"b", "back\\slash", "tab\tnew\nline", "\x00\x1f\x7f", "é中😀", "\u2028\u2029"]
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def reference(item: MemoryItem) -> str:
    record = {
        "schema": "gitmem.session.item.v1",
        "id": item.id,
        "content": item.content,
        "timestamp": iso(item.timestamp),
        "importance": item.importance,
        "memory_type": item.memory_type,
        "tags": list(item.tags),
        "metadata": item.metadata,
    }
    return json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


@settings(max_examples=150)  # every encoder fault tried (ascii quoting, key order, bools, floats, indents) fails by 50
@given(
    content=TEXT.filter(lambda t: t.strip() != ""),
    importance=st.floats(0, 1),
    tags=st.lists(TEXT, max_size=3),
    metadata=st.dictionaries(TEXT, JSON_VALUES, max_size=4),
)
def test_the_fast_encoder_writes_what_json_writes(
    content: str, importance: float, tags: list[str], metadata: dict[str, Any]
) -> None:
    item = MemoryItem("mem-1", content, 1_700_000_000.123456, importance, tuple(tags), "semantic", metadata)
    assert encode_item(item) == reference(item)


@settings(max_examples=100)
@given(
    content=TEXT.filter(lambda t: t.strip() != ""),
    importance=st.floats(0, 1),
    tags=st.lists(TEXT, max_size=3),
    metadata=st.dictionaries(TEXT, JSON_VALUES, max_size=4),
    timestamp=st.floats(0.0, 253_402_300_799.0, allow_nan=False),  # iso() writes years before 1000 unpadded
)
def test_a_snapshot_row_through_json_gives_back_the_item_its_file_gives(
    content: str, importance: float, tags: list[str], metadata: dict[str, Any], timestamp: float
) -> None:
    """The catalogue snapshot keeps rows, not file texts: a row read back must equal a decode of the file."""
    from gitmem.session.items import item_from_row, item_row, to_micros

    item = MemoryItem("mem-1", content, to_micros(timestamp), importance, tuple(tags), "working", metadata)
    from_file = decode_item(encode_item(item))
    row = json.loads(json.dumps(item_row(from_file), ensure_ascii=False, separators=(",", ":")))
    assert item_from_row(row) == from_file


@pytest.mark.parametrize(
    "metadata",
    [
        {2: "an int key"},  # json turns the key into text: the encoder leaves that to json
        {"t": (1, 2)},
        {"deep": {"z": [1, {"b": None, "a": True}], "a": []}},
    ],
)
def test_values_json_converts_are_left_to_json(metadata: dict[Any, Any]) -> None:
    item = MemoryItem("mem-1", "text", 1.0, 0.5, (), "episodic", metadata)
    assert encode_item(item) == reference(item)
    assert decode_item(encode_item(item)).content == "text"


@pytest.mark.parametrize("bad", [math.nan, math.inf, object()])
def test_what_json_refuses_is_refused_the_same_way(bad: object) -> None:
    item = MemoryItem("mem-1", "text", 1.0, 0.5, (), "episodic", {"x": bad})
    with pytest.raises((ValueError, TypeError)) as ours:
        encode_item(item)
    with pytest.raises((ValueError, TypeError)) as theirs:
        reference(item)
    assert type(ours.value) is type(theirs.value)


@settings(max_examples=600)
@given(st.floats(-62_135_596_800.0, 253_402_300_799.0, allow_nan=False))
def test_iso_writes_what_strftime_writes_with_a_four_digit_year(t: float) -> None:
    assert iso(t) == padded_strftime(t)


def padded_strftime(t: float) -> str:
    d = datetime.fromtimestamp(t, UTC)
    return f"{d.year:04d}" + d.strftime("-%m-%dT%H:%M:%S.%fZ")  # glibc's %Y leaves years < 1000 unpadded


@pytest.mark.parametrize(
    ("content", "importance", "tags", "kind"),
    [(7, 0.5, (), "episodic"), ("text", True, (), "episodic"), ("text", 1, ("a",), "semantic"), ("t", 0.5, (), 3)],
)
def test_fields_of_other_types_are_encoded_as_json_encodes_them(
    content: Any, importance: Any, tags: tuple[str, ...], kind: Any
) -> None:
    item = MemoryItem("mem-1", content, 1.0, importance, tags, kind, {})
    assert encode_item(item) == reference(item)


def test_new_ids_are_random_version_4_uuids() -> None:
    ids = {new_item_id() for _ in range(200)}
    assert len(ids) == 200
    for item_id in ids:
        assert item_id.startswith("mem-")
        parsed = uuid.UUID(item_id[4:])
        assert parsed.hex == item_id[4:] and parsed.version == 4 and parsed.variant == uuid.RFC_4122


@pytest.mark.parametrize(
    "t",
    [0.0, -0.0000005, -1.5, 1_700_000_000.0000005, 1_700_000_000.0000015, 1_700_000_000.9999995, 1_699_999_999.9999996,
     1_700_000_000.123456, 253_402_300_798.5, -62_135_596_800.0],
)
def test_iso_rounds_the_microseconds_as_fromtimestamp_does(t: float) -> None:
    assert iso(t) == padded_strftime(t)
    assert iso(t + 1) == padded_strftime(t + 1)  # the next second


@given(
    tags=st.lists(st.sampled_from(["superseded", "tombstoned", "keep", "x"]), max_size=3, unique=True),
    metadata=st.sampled_from(
        [{}, {"superseded_by": "mem-2"}, {"superseded_by": []}, {"tombstoned": True}, {"status": "tombstoned"}, {"a": 1}]
    ),
)
def test_recallable_without_metadata_answers_what_the_full_rule_answers(tags: list[str], metadata: dict[str, Any]) -> None:
    item = MemoryItem("mem-1", "text", 0.0, tags=tuple(tags), metadata=metadata)
    assert item.recallable == (not (item.superseded or item.tombstoned))


@pytest.mark.parametrize("year", [1, 9, 99, 999, 1000, 1970, 2400])
def test_iso_pads_the_year_and_from_iso_reads_back_what_iso_wrote(year: int) -> None:
    from datetime import UTC, datetime

    from gitmem.session.items import from_iso, iso

    at = datetime(year, 3, 4, 5, 6, 7, 250_000, tzinfo=UTC).timestamp()
    written = iso(at)
    assert written == f"{year:04d}-03-04T05:06:07.250000Z"
    assert from_iso(written) == pytest.approx(at, abs=1e-6)
    assert iso(from_iso(written)) == written
