"""Every write is read back; ``write_unconfirmed`` only when the outcome is truly unknown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from contract.support import error_of

from gitmem import InMemoryFileStore
from gitmem.errors import MemoryStoreError
from gitmem.model import Applied, Edit, FileText, Origin
from gitmem.records import RecordStore


class FaultyStore(InMemoryFileStore):
    """The twin, failing writes on demand: before or after the change lands, or dropping it.

    With ``batch=False`` it hides ``apply``, so the record store's single-file path
    (``write``/``delete``) is tested too.
    """

    def __init__(self, batch: bool = True) -> None:
        super().__init__()
        if not batch:
            self.apply = None  # type: ignore[assignment,method-assign]
        self.fault: str | None = None  # "before", "after", "after-unreadable", "drop", "oserror-after"
        self.unreadable = False

    def _maybe_fail(self, change: Any) -> Any:
        fault = self.fault
        if fault == "before":
            raise MemoryStoreError("unavailable", "lock timeout before anything was written")
        if fault == "drop":
            return "0" * 40
        result = change()
        if fault in ("after", "after-unreadable"):
            self.unreadable = fault == "after-unreadable"
            raise MemoryStoreError("unavailable", "failed after the ref moved")
        if fault == "oserror-after":
            raise OSError("disk went away")
        return result

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        return self._maybe_fail(lambda: super(FaultyStore, self).write(path, text, expected=expected, origin=origin))  # type: ignore[no-any-return]

    def apply(self, edits: Sequence[Edit], **kwargs: Any) -> Applied:
        if self.fault == "drop":
            return Applied(None, tuple(None for _ in edits))
        return self._maybe_fail(lambda: super(FaultyStore, self).apply(edits, **kwargs))  # type: ignore[no-any-return]

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        self._maybe_fail(lambda: super(FaultyStore, self).delete(path, expected=expected, origin=origin))

    def read(self, path: str) -> FileText:
        if self.unreadable:
            raise MemoryStoreError("unavailable", "cannot read now")
        return super().read(path)


@pytest.fixture(params=[True, False], ids=["batch", "single"])
def faulty(request: pytest.FixtureRequest) -> FaultyStore:
    return FaultyStore(batch=request.param)


@pytest.mark.parametrize("fault", ["after", "oserror-after"])
def test_a_failure_after_the_change_landed_is_settled_by_reading(faulty: FaultyStore, fault: str) -> None:
    store = RecordStore(faulty, "alice")
    faulty.fault = fault
    record = store.add("prefers green tea")
    update = store.update(record.id, "prefers oolong tea")
    store.delete(record.id)
    faulty.fault = None
    assert update.text == "prefers oolong tea"
    assert store.list().records == ()


def test_a_failure_before_anything_landed_stands_and_nothing_changed(faulty: FaultyStore) -> None:
    store = RecordStore(faulty, "alice")
    record = store.add("prefers green tea")
    faulty.fault = "before"
    assert error_of(store.add, "another").code == "unavailable"
    assert error_of(store.update, record.id, "changed").code == "unavailable"
    assert error_of(store.delete, record.id).code == "unavailable"
    faulty.fault = None
    assert [r.text for r in store.list().records] == ["prefers green tea"]


def test_an_outcome_nobody_can_read_is_write_unconfirmed(faulty: FaultyStore) -> None:
    store = RecordStore(faulty, "alice")
    record = store.add("prefers green tea")
    for call, args in ((store.add, ("x",)), (store.update, (record.id, "changed")), (store.delete, (record.id,))):
        faulty.fault = "after-unreadable"
        faulty.unreadable = False
        error = error_of(call, *args)
        assert error.code == "write_unconfirmed" and "search" in error.message
        faulty.unreadable = False


def test_a_write_the_store_claims_but_does_not_show_is_write_unconfirmed(faulty: FaultyStore) -> None:
    store = RecordStore(faulty, "alice")
    record = store.add("prefers green tea")
    faulty.fault = "drop"
    assert error_of(store.add, "lost").code == "write_unconfirmed"
    assert error_of(store.update, record.id, "lost").code == "write_unconfirmed"
    assert error_of(store.delete, record.id).code == "write_unconfirmed"
    faulty.fault = None
    assert [r.text for r in store.list().records] == ["prefers green tea"]
