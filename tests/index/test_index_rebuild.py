"""A rebuild's memory stays flat: it never opens the segments it has written.

Opening a Whoosh segment copies its postings and term table into memory, so a
rebuild that opened its ~50 batch segments at the end (to replace the stamp, or
to report its status) peaked at ~3x its steady memory at 100k files. And a
rebuild killed for real between two batches leaves segments without a stamp:
no search uses them, every answer equals a scan, and the next rebuild is clean.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from gitmem import SyncGitFileStore
from gitmem.index import mount as mount_index
from tests.index.test_index_fallback import ODD, PATTERNS, corpus, full_scan

FILES = 150


@pytest.fixture
def store(tmp_path: os.PathLike[str]) -> SyncGitFileStore:
    store = SyncGitFileStore.init(os.path.join(tmp_path, "big.git"))
    store.apply(corpus(FILES))
    return store


def test_a_rebuild_opens_none_of_the_segments_it_wrote(
    store: SyncGitFileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from whoosh.reading import SegmentReader

    monkeypatch.setattr(mount_index, "REBUILD_BATCH", 40)
    opened: list[object] = []
    real_init = SegmentReader.__init__

    def counting_init(self: Any, storage: Any, schema: Any, segment: Any, **kw: Any) -> None:
        opened.append(segment)
        real_init(self, storage, schema, segment, **kw)

    monkeypatch.setattr(SegmentReader, "__init__", counting_init)
    status = store.rebuild_index()
    assert opened == []
    total = FILES + len(ODD)
    assert status.state == "current" and status.documents == total and status.deleted == 0
    assert status.segments == total // 40 + 1
    assert status.commit == status.head == store.repo.head()
    monkeypatch.setattr(SegmentReader, "__init__", real_init)
    assert store.index_status() == status  # what the searcher counts, the table of contents said
    for pattern, kw in PATTERNS:
        assert store.search(pattern, **kw) == full_scan(store, pattern, **kw), pattern


def test_a_rebuild_of_an_empty_mount_is_current(tmp_path: os.PathLike[str]) -> None:
    store = SyncGitFileStore.init(os.path.join(tmp_path, "empty.git"))
    status = store.rebuild_index()
    assert (status.state, status.documents, status.deleted, status.segments) == ("current", 0, 0, 1)
    assert store.index_status() == status


KILLED_REBUILD = textwrap.dedent(
    """
    import sys
    from gitmem import SyncGitFileStore
    from gitmem.index import engine, mount

    mount.REBUILD_BATCH = 40
    real_apply = engine.apply

    def apply_then_wait(writer, docs, commit, **kw):
        real_apply(writer, docs, commit, **kw)
        print("batch", flush=True)
        sys.stdin.readline()  # the test kills this process here

    engine.apply = apply_then_wait
    SyncGitFileStore.open(sys.argv[1]).rebuild_index()
    """
)


@pytest.mark.parametrize("batches", [1, 3])
def test_a_rebuild_killed_between_batches_leaves_no_usable_index(store: SyncGitFileStore, batches: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_REBUILD, store.path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for _ in range(batches):
            assert proc.stdout.readline() == "batch\n"
            if _ < batches - 1:
                proc.stdin.write("\n")
                proc.stdin.flush()
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    fresh = SyncGitFileStore.open(store.path)
    status = fresh.index_status()
    assert status.state == "missing" and status.segments == batches  # segments, but no stamp
    for pattern, kw in PATTERNS:
        assert fresh.search(pattern, **kw) == full_scan(fresh, pattern, **kw), pattern
    assert fresh.rebuild_index().state == "current"
    assert fresh.search("zeppelin") == full_scan(fresh, "zeppelin")
    subprocess.run(["git", "fsck", "--strict"], cwd=store.path, check=True, capture_output=True)
