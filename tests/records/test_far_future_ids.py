"""A record whose id spells a time past the year 9999 is listed, as its push was accepted.

An id is 48 bits of milliseconds and 80 random bits; any 26 characters of that shape are
an id (the shape is all a path, a cursor or a push is checked for), and 48 bits of
milliseconds reach the year 10889. A record file that does not say when it was created
takes the id's time, and one past the year 9999 made ``records list`` of the whole
namespace fail ``unavailable``. Such a time reads as the last one a date can hold.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gitmem import GitFileStore
from gitmem.records import RecordStore
from gitmem.records.rules import _RANDOM_BITS, _encode, id_time, is_record_id, parse_record, record_path


def _far_id() -> str:
    millis = (1 << 48) - 1  # the largest clock an id holds: the year 10889
    rid = _encode((millis << _RANDOM_BITS) | 12345)
    assert is_record_id(rid)
    return rid


def test_the_time_of_an_id_past_the_year_9999_is_the_last_a_date_holds() -> None:
    last = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert id_time(_far_id()) == last
    assert parse_record(_far_id(), f"---\nid: {_far_id()}\n---\nfar\n").created == last


def test_a_namespace_holding_such_a_record_lists_and_searches(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "rec.git", kind="record").sync
    records = RecordStore(store, namespace="people")
    near = records.add("near future")
    rid = _far_id()
    store.write(record_path(records.folder, rid), f"---\nid: {rid}\n---\nfar future\n", expected=None)
    page = records.list(limit=10)
    assert [r.id for r in page.records] == [near.id, rid]
    assert [r.id for r in records.search("far future")][:1] == [rid]
