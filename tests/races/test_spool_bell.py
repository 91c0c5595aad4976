"""The spool's bell: a holder lists the spool only when a request may be queued, and never misses one.

A slot moving into ``queued`` appends a byte to ``<spool>/bell``; a holder whose
last scan left nothing queued and whose bell size has not changed skips the scan
(:func:`gitmem.git.spool.take`). Slots are planted here as a live waiter would
leave them (this process holds their ``.live`` flock), so each case is exact.
"""

from __future__ import annotations

import fcntl
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from race_support import assert_fsck_clean

from gitmem import GitFileStore
from gitmem.fileformat import DEFAULT_FORMAT
from gitmem.git import spool, spoolcodec
from gitmem.git.batch import BatchSpec
from gitmem.git.locks import process_token
from gitmem.model import Origin
from gitmem.store import write_batch


class Planted:
    """A queued request in the spool, as a waiting process leaves it."""

    count = 0

    def __init__(self, repo: Path, path: str, *, ring: bool = True) -> None:
        Planted.count += 1
        folder = Path(spool.spool_dir(str(repo)))
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = f"{spool.VERSION}-{900000 + Planted.count}-{process_token()}"
        self.live = os.open(folder / f"{name}.live", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.live, fcntl.LOCK_EX)
        batch, self.version = write_batch(path, f"{path}\n", None, DEFAULT_FORMAT)
        raw = spoolcodec.encode_request([BatchSpec(DEFAULT_FORMAT, batch, Origin())])
        header = spool._encode(spool.Header("queued", 1, len(raw), zlib.crc32(raw), 0, 0, ""))
        self.slot = folder / f"{name}.slot"
        self.slot.write_bytes(header.ljust(spool._HEADER, b"\0") + raw)
        if ring:
            spool.announce(str(folder))

    def state(self) -> str:
        header = spool._decode(self.slot.read_bytes()[:160])
        return header.state if header is not None else "?"

    def close(self) -> None:
        os.close(self.live)


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "m.git"
    GitFileStore.init(path)
    yield path
    assert_fsck_clean(path)


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every listing of a spool folder, by repository."""
    seen: list[str] = []
    original = spool._slots

    def counted(repo_path: str, own: spool.Slot | None) -> list[spool.Slot]:
        seen.append(repo_path)
        return original(repo_path, own)

    monkeypatch.setattr(spool, "_slots", counted)
    return seen


def test_writes_with_nothing_queued_never_list_the_spool(repo: Path, scans: list[str]) -> None:
    store = GitFileStore.open(repo).sync
    store.write("a.md", "a\n", expected=None)
    assert scans == []  # no spool at all: one stat says so
    Planted(repo, "p.md").close()  # a spool exists now; its waiter is gone
    store.write("b.md", "b\n", expected=None)  # the bell rang: one scan (it drops the dead slot)
    assert len(scans) == 1
    for i in range(5):
        store.write(f"c{i}.md", "c\n", expected=None)
    assert len(scans) == 1  # the bell is silent: no more listings


def test_a_queued_request_is_taken_once_the_bell_rings(repo: Path, scans: list[str]) -> None:
    store = GitFileStore.open(repo).sync
    for queued, own in (("first.md", "a.md"), ("second.md", "b.md")):  # the second rings an emptied bell
        planted = Planted(repo, queued)
        try:
            store.write(own, "x\n", expected=None)
            assert planted.state() == "done" and store.read(queued).version == planted.version
        finally:
            planted.close()


def test_a_request_that_did_not_ring_waits_for_the_next_ring_not_forever(repo: Path, scans: list[str]) -> None:
    """The bell is a hint: a silent request is not taken, and a later ring brings every queued one in."""
    store = GitFileStore.open(repo).sync
    store.write("warm.md", "w\n", expected=None)
    silent = Planted(repo, "silent.md", ring=False)
    loud: Planted | None = None
    try:
        store.write("a.md", "a\n", expected=None)
        assert silent.state() == "queued"  # its own waiter would commit it when it gets the lock
        loud = Planted(repo, "loud.md")
        store.write("b.md", "b\n", expected=None)
        assert silent.state() == "done" and loud.state() == "done"
    finally:
        silent.close()
        if loud is not None:
            loud.close()


def test_a_request_put_back_in_the_queue_rings_again(repo: Path) -> None:
    """A round that did not land marks its slots queued again (recovery): that is a ring too."""
    store = GitFileStore.open(repo).sync
    planted = Planted(repo, "p.md")
    try:
        store.write("a.md", "a\n", expected=None)
        assert planted.state() == "done"
        slot = spool.Slot(str(planted.slot), os.open(planted.slot, os.O_RDWR), None)
        before = os.stat(Path(spool.spool_dir(str(repo))) / "bell").st_size
        slot.mark("queued")
        assert os.stat(Path(spool.spool_dir(str(repo))) / "bell").st_size == before + 1
        os.close(slot.fd)
    finally:
        planted.close()


def test_the_bell_is_emptied_by_the_holder_that_drains_it_and_nothing_is_lost(
    repo: Path, scans: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bell holds a byte per request queued since the last scan, not one per request ever queued."""
    truncated: list[str] = []
    truncate = os.truncate

    def counted(path: str, length: int) -> None:
        truncated.append(path)
        truncate(path, length)

    monkeypatch.setattr(os, "truncate", counted)
    store = GitFileStore.open(repo).sync
    bell = Path(spool.spool_dir(str(repo))) / "bell"
    for round_ in range(3):
        planted = [Planted(repo, f"r{round_}-{i}.md") for i in range(4)]
        assert bell.stat().st_size == 4
        try:
            store.write(f"own-{round_}.md", "own\n", expected=None)
            assert [p.state() for p in planted] == ["done"] * 4
            assert all(store.read(f"r{round_}-{i}.md").version == p.version for i, p in enumerate(planted))
        finally:
            for p in planted:
                p.close()
        assert bell.stat().st_size == 0
    listed, emptied = len(scans), len(truncated)
    for i in range(5):  # nothing queued: one stat of the bell, no listing, no truncation
        store.write(f"quiet-{i}.md", "q\n", expected=None)
    assert (len(scans), len(truncated)) == (listed, emptied) and emptied == 3
    late = Planted(repo, "late.md")  # a ring after the bell was emptied is heard
    try:
        store.write("after.md", "a\n", expected=None)
        assert late.state() == "done" and store.read("late.md").version == late.version
    finally:
        late.close()
    assert bell.stat().st_size == 0
