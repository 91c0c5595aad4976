"""The pure rules of record memory: ids, namespaces, cursors, text and the record file."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from contract.support import error_of
from hypothesis import given
from hypothesis import strategies as st

from gitmem.fileformat import encode_text, validate_path
from gitmem.records.rules import (
    IdGenerator,
    RecordFile,
    decode_cursor,
    decode_namespace,
    encode_cursor,
    encode_namespace,
    id_of_path,
    id_time,
    is_record_id,
    parse_record,
    record_path,
    render_record,
    validate_record_text,
)


def test_ids_sort_by_time_and_only_grow_even_when_the_clock_steps_back() -> None:
    now = [1_700_000_000.0]
    ids = IdGenerator(lambda: now[0])
    made = []
    for step in (0.0, 0.0, 0.001, -5.0, 0.0, 10.0):
        now[0] += step
        made.append(ids.next())
    assert made == sorted(made) and len(set(made)) == len(made)
    assert all(is_record_id(i) for i in made)
    assert abs(id_time(made[0]).timestamp() - 1_700_000_000.0) < 0.002


def test_an_id_after_another_is_greater_than_it() -> None:
    ids = IdGenerator(lambda: 1_000.0)
    later = IdGenerator(lambda: 2_000_000_000.0).next()
    assert ids.next(after=later) > later
    assert ids.next(after="garbage") > later  # an unusable floor is ignored; the generator still grows


@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=15))
def test_a_namespace_encodes_to_one_safe_segment_and_back(namespace: str) -> None:
    folder = encode_namespace(namespace)  # 15 characters fit whatever they are (4 bytes, 3 characters each)
    assert "/" not in folder and folder not in (".", "..")
    assert validate_path(f"{folder}/ab/x.md") == f"{folder}/ab/x.md"
    assert decode_namespace(folder) == namespace


def test_distinct_namespaces_get_distinct_folders() -> None:
    names = ["alice", "Alice", "alice.", "alice.2E", "alice%2E", "al/ice", "../alice", "alice_", "alice-"]
    folders = [encode_namespace(n) for n in names]
    assert len(set(folders)) == len(names)
    assert decode_namespace("not.a.name") is None and decode_namespace("UPPER") is None


def test_cursors_are_bound_to_their_namespace() -> None:
    rid = IdGenerator().next()
    cursor = encode_cursor("alice", rid)
    assert decode_cursor("alice", cursor) == rid
    assert decode_cursor("alice", None) is None
    assert error_of(decode_cursor, "bob", cursor).code == "invalid_cursor"
    assert error_of(decode_cursor, "alice", cursor[:-1] + ("0" if cursor[-1] != "0" else "1")).code == "invalid_cursor"


def test_record_paths_belong_to_one_folder_only() -> None:
    rid = IdGenerator().next()
    path = record_path("alice", rid)
    assert id_of_path("alice", path) == rid
    assert id_of_path("bob", path) is None
    assert id_of_path("alice", path.replace(".md", ".txt")) is None
    assert id_of_path("alice", f"alice/zz/{rid}.md") is None


def test_text_limits_are_counted_in_characters() -> None:
    assert validate_record_text("é" * 8000) == "é" * 8000
    assert error_of(validate_record_text, "é" * 8001).code == "invalid_text"
    assert validate_record_text("short", 5) == "short"
    assert error_of(validate_record_text, "longer", 5).code == "invalid_text"


@pytest.mark.parametrize(
    "text", ["plain", "two\nlines", "ends with newline\n", "\n\nleading blank lines", "---\nlooks: like yaml\n---\n"]
)
def test_a_record_file_round_trips_and_is_a_valid_memory_file(text: str) -> None:
    rid = IdGenerator().next()
    moment = datetime(2026, 12, 1, 10, 31, 57, 123456, tzinfo=UTC)
    record = RecordFile(rid, text, moment, moment)
    content = render_record(record)
    encode_text(content)  # the store's own rules accept it
    assert parse_record(rid, content) == record


def test_a_hand_edited_record_file_still_reads() -> None:
    rid = IdGenerator().next()
    content = f"---\nupdated: 2026-12-01T10:00:00Z\nid: {rid}\n---\nedited by a person in a pull request\n"
    parsed = parse_record(rid, content)
    assert parsed.text == "edited by a person in a pull request"
    assert parsed.updated == datetime(2026, 12, 1, 10, tzinfo=UTC) and parsed.created == id_time(rid)
    with pytest.raises(ValueError):
        parse_record(IdGenerator().next(), content)  # the file says it holds another id
    with pytest.raises(ValueError):
        parse_record(rid, f"---\nid: {rid}\n---\n\n")
