"""Spare files under kills and against a foreign git holding ``main.lock`` (``gitmem.git.spares``).

A commit renames three spares out of ``gitmem/spare/``: to its ``.pack``, to its
temp index and to ``refs/heads/main.lock``. A writer SIGKILLed with a spare open
but not yet renamed, or renamed and not yet written, must leave a memory that
``git fsck --strict``, ``git gc`` and ``clone`` accept, with the unacknowledged
write not on ``main`` and the next writer not blocked: an empty ``main.lock``
renamed from a spare is cleared as a crashed writer's lock, exactly as one made
with ``O_EXCL``. And the lock stays exclusive both ways against real git.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from race_support import Worker, assert_fsck_clean, git, head_files, wait_stopped

from gitmem import GitFileStore
from gitmem.git import spares

pytestmark = pytest.mark.slow

LIVENESS = 120.0  # a deadlock guard, not a performance bound


def _spare_dir(repo: Path) -> Path:
    return repo / "gitmem" / "spare"


def _spare_files(repo: Path) -> list[Path]:
    return [Path(d, n) for d, _, names in os.walk(_spare_dir(repo)) for n in names]


def _write_in_thread(store: object, path: str, text: str, expected: str | None) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []

    def write() -> None:
        try:
            out.append(store.write(path, text, expected=expected))  # type: ignore[attr-defined]
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    return thread, out


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("nth", [0, 1, 2])
def test_writer_killed_at_each_spare_step(tmp_path: Path, nth: int, when: str) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    version = store.write("a.md", "one\n", expected=None)
    before = git(repo, "rev-parse", "main").strip()
    stopped = Worker(tmp_path, "stop_in_spare", repo=str(repo), nth=nth, when=when)
    name = stopped.wait_for("in-spare")[1]
    wait_stopped(stopped.pid)
    pack_dir = repo / "objects" / "pack"
    lock = repo / "refs" / "heads" / "main.lock"
    if when == "before":  # the spare is open, still in the pool, still empty
        assert (_spare_dir(repo) / name).stat().st_size == 0
    elif nth == 0:  # an empty .pack under its final name, no index: git ignores it
        assert name.endswith(".pack") and (pack_dir / name).stat().st_size == 0
        assert not (pack_dir / (name[:-5] + ".idx")).exists()
    elif nth == 1:  # an empty temp index next to the written pack
        assert name.startswith("tmp_idx_") and (pack_dir / name).stat().st_size == 0
    else:  # the ref lock, claimed from a spare, the new value not written yet
        assert name == "main.lock" and lock.exists() and lock.stat().st_size == 0
    stopped.kill()
    assert git(repo, "rev-parse", "main").strip() == before
    assert "stopped.md" not in head_files(repo)
    assert_fsck_clean(repo)
    # Were the dead writer's main.lock taken for a live foreign git's, this would wait ten minutes.
    store.repo.stale_lock_seconds = 600.0
    writer, out = _write_in_thread(store, "a.md", "two\n", version)
    writer.join(timeout=LIVENESS)
    assert not writer.is_alive(), "the killed writer's main.lock was treated as a live foreign lock"
    assert out and not isinstance(out[0], BaseException), out
    assert not lock.exists()
    assert store.read("a.md").text == "two\n"
    for spare in _spare_files(repo):  # every file left in the pool is still an empty spare
        assert spare.stat().st_size == 0 and spare.stat().st_nlink == 1, spare
    assert "garbage: 0" in git(repo, "count-objects", "-v")
    store.gc()
    assert len(_spare_files(repo)) <= spares.KEEP
    assert_fsck_clean(repo)
    git(repo, "gc", "--quiet")
    assert_fsck_clean(repo)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    assert (clone / "a.md").read_text() == "two\n"


def test_a_foreign_git_holding_main_lock_blocks_a_write_from_spares(tmp_path: Path) -> None:
    """``git update-ref --stdin`` prepared (``main.lock`` held): our spare cannot replace it; we wait, then land."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    version = store.write("a.md", "one\n", expected=None)
    spares.fill(str(repo))
    old = git(repo, "rev-parse", "main").strip()
    blob = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input="foreign\n", capture_output=True, text=True, check=True
    ).stdout.strip()
    tree = subprocess.run(
        ["git", "-C", str(repo), "mktree"], input=f"100644 blob {blob}\tforeign.md\n", capture_output=True, text=True, check=True
    ).stdout.strip()
    base = git(repo, "ls-tree", "main").strip()
    merged = subprocess.run(
        ["git", "-C", str(repo), "mktree"], input=f"{base}\n100644 blob {blob}\tforeign.md\n", capture_output=True, text=True, check=True
    ).stdout.strip()
    assert tree
    env = {**os.environ, "GIT_AUTHOR_NAME": "git", "GIT_AUTHOR_EMAIL": "g@x", "GIT_COMMITTER_NAME": "git", "GIT_COMMITTER_EMAIL": "g@x"}
    commit = subprocess.run(
        ["git", "-C", str(repo), "commit-tree", merged, "-p", old, "-m", "foreign"], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()
    foreign = subprocess.Popen(
        ["git", "-C", str(repo), "update-ref", "--stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert foreign.stdin is not None and foreign.stdout is not None
    try:
        foreign.stdin.write(f"start\nupdate refs/heads/main {commit} {old}\nprepare\n")
        foreign.stdin.flush()
        assert foreign.stdout.readline().strip() == "start: ok"
        assert foreign.stdout.readline().strip() == "prepare: ok"
        lock = repo / "refs" / "heads" / "main.lock"
        assert lock.exists()
        held = lock.stat().st_ino
        pool = spares.available(str(repo))
        writer, out = _write_in_thread(store, "a.md", "two\n", version)
        time.sleep(0.5)  # not a bound: while git holds the lock the write must not land, however long it waits
        assert writer.is_alive() and not out, out
        assert lock.stat().st_ino == held  # our spare did not replace git's lock
        assert spares.available(str(repo)) < pool  # the pack and its index came from spares
        foreign.stdin.write("commit\n")
        foreign.stdin.flush()
        assert foreign.stdout.readline().strip() == "commit: ok"
        foreign.stdin.close()
        assert foreign.wait(timeout=LIVENESS) == 0
    finally:
        if foreign.poll() is None:
            foreign.kill()
            foreign.wait()
        foreign.stdout.close()
    writer.join(timeout=LIVENESS)
    assert not writer.is_alive()
    assert out and not isinstance(out[0], BaseException), out
    files = head_files(repo)
    assert "foreign.md" in files and store.read("a.md").text == "two\n"  # the foreign commit and ours, in turn
    assert commit in git(repo, "rev-list", "main")
    assert_fsck_clean(repo)


def test_a_gitmem_writer_holding_a_spare_main_lock_blocks_git_update_ref(tmp_path: Path) -> None:
    """The other way round: ``main.lock`` renamed from a spare is a lock to git too."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("a.md", "one\n", expected=None)
    old = git(repo, "rev-parse", "main").strip()
    stopped = Worker(tmp_path, "stop_in_spare", repo=str(repo), nth=2, when="after")
    stopped.wait_for("in-spare")
    wait_stopped(stopped.pid)
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "update-ref", "refs/heads/main", old, old], capture_output=True, text=True, check=False
        )
        assert done.returncode != 0 and "main.lock" in done.stderr, done.stderr
    finally:
        stopped.kill()
    assert_fsck_clean(repo)
