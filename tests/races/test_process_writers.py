"""Several processes writing one memory at once: nothing acknowledged is lost.

Each worker is a real Python process (``race_worker.py``) that appends an ack
line only after ``write`` returned. The parent then checks the repository with
the git CLI, not with gitmem, so a bug in gitmem's own reads cannot hide a loss.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from race_support import (
    Worker,
    assert_fsck_clean,
    assert_linear,
    commit_count,
    head_files,
    history_blobs,
    run_all,
)

from gitmem import GitFileStore

pytestmark = pytest.mark.slow

WORKERS = 4


def test_processes_writing_distinct_files_lose_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    go = tmp_path / "go"
    writes = 200
    workers = [
        Worker(tmp_path, "distinct", repo=str(repo), wid=w, writes=writes, files=10, go=str(go)) for w in range(WORKERS)
    ]
    elapsed = run_all(workers, go)

    acked = [line for worker in workers for line in worker.lines()]
    assert len(acked) == WORKERS * writes
    last: dict[str, tuple[int, str]] = {}
    for path, version, seq in acked:
        if path not in last or int(seq) > last[path][0]:
            last[path] = (int(seq), version)

    files = head_files(repo)
    assert set(files) == set(last)
    for path, (seq, version) in last.items():
        assert files[path] == version
        wid = path.split("/")[0][1:]
        assert store.read(path).text == f"worker {wid} seq {seq}\n"
    history = history_blobs(repo)
    missing = [(p, v) for p, v, _ in acked if (p, v) not in history]
    assert missing == []
    assert commit_count(repo) == len(acked) + 1  # one commit per change, plus the root
    assert_linear(repo)
    assert_fsck_clean(repo)
    print(
        f"\n[distinct] {len(acked)} CAS writes by {WORKERS} processes in {elapsed:.2f}s: {len(acked) / elapsed:.0f}/s"
    )


def test_processes_incrementing_one_counter_lose_no_update(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("counter.txt", "0\n", expected=None)
    go = tmp_path / "go"
    increments = 50
    workers = [
        Worker(tmp_path, "counter", repo=str(repo), wid=w, writes=increments, go=str(go)) for w in range(WORKERS)
    ]
    elapsed = run_all(workers, go)

    acked = [line for worker in workers for line in worker.lines()]
    values = sorted(int(value) for value, _, _ in acked)
    # Every increment saw a distinct value: two acks of one value would be a lost update.
    assert values == list(range(1, WORKERS * increments + 1))
    assert store.read("counter.txt").text == f"{WORKERS * increments}\n"
    history = history_blobs(repo)
    assert all(("counter.txt", version) in history for _, version, _ in acked)
    assert commit_count(repo) == WORKERS * increments + 2  # root, the creation, one per increment
    assert_linear(repo)
    assert_fsck_clean(repo)
    conflicts = sum(int(c) for _, _, c in acked)
    print(
        f"\n[counter] {len(acked)} increments by {WORKERS} processes in {elapsed:.2f}s: "
        f"{len(acked) / elapsed:.0f}/s, {conflicts} version_mismatch retries"
    )
