"""The pack write path under kills: a writer dies at every step of writing its commit's pack.

A commit's objects land as one ``.pack`` and ``.idx`` (``gitmem.git.packwrite``):
the pack under its final name, the index as a temp file renamed after it, then the ref. Whatever step a SIGKILL hits, the memory
must stay one that ``git fsck --strict`` accepts, the unacknowledged write must
not be on ``main``, and the next writer, ``git gc`` and ``git clone`` must work.
The same holds for a process killed while its fold (``git pack-objects``, or the in-process one) runs.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from race_support import Worker, assert_fsck_clean, git, head_files, wait_stopped

from gitmem import GitFileStore
from gitmem.git import engine, packwrite
from gitmem.git import repo as gitrepo

pytestmark = pytest.mark.slow


def _pack_dir(repo: Path) -> list[str]:
    return sorted(os.listdir(repo / "objects" / "pack"))


def _still_plain_git(repo: Path, tmp: Path) -> None:
    assert_fsck_clean(repo)
    git(repo, "gc", "--quiet")
    assert_fsck_clean(repo)
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    assert (clone / "a.md").read_text() == "one\n"


def _orphans(names: list[str]) -> list[str]:
    """Packs without their index (what a writer killed between its pack and its index leaves)."""
    return [n for n in names if n.endswith(".pack") and n[:-5] + ".idx" not in names]


@pytest.mark.parametrize("step", [0, 1, 2, 3])
def test_writer_killed_at_each_step_of_its_pack(tmp_path: Path, step: int) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("a.md", "one\n", expected=None)
    before = git(repo, "rev-parse", "main").strip()
    stopped = Worker(tmp_path, "stop_in_pack", repo=str(repo), step=step)
    stopped.wait_for("in-pack")
    wait_stopped(stopped.pid)
    left = _pack_dir(repo)
    stopped.kill()
    assert stopped.proc.returncode == -signal.SIGKILL, stopped.stderr()
    assert git(repo, "rev-parse", "main").strip() == before
    assert "stopped.md" not in head_files(repo)
    if step in (1, 2):  # the pack was on disk under its final name, its index not yet
        assert len(_orphans(left)) == 1, left
    if step == 2:  # and the temp index
        assert any(name.startswith("tmp_idx_") for name in left), left
    assert_fsck_clean(repo)
    store.write("b.md", "after the kill\n", expected=None)  # the next writer is not blocked
    assert store.read("b.md").text == "after the kill\n"
    if step in (1, 2):  # gitmem's gc deletes a pack without index once it is old enough
        orphans = _orphans(_pack_dir(repo))
        assert orphans, _pack_dir(repo)
        with gitrepo.GitRepo(str(repo)).maintenance("test"):
            assert packwrite.remove_orphan_packs(str(repo)) == []  # too young: a foreign git may be between renames
        assert _orphans(_pack_dir(repo)) == orphans
        for name in orphans:
            os.utime(repo / "objects" / "pack" / name, (time.time() - 2 * packwrite.ORPHAN_SECONDS,) * 2)
        store.gc()
        assert _orphans(_pack_dir(repo)) == []
        assert store.read("b.md").text == "after the kill\n"
    _still_plain_git(repo, tmp_path)


def test_writer_killed_during_compaction(tmp_path: Path) -> None:
    """A fold runs after the write, off the writer lock: writers go on while its git child is stopped or killed."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("a.md", "one\n", expected=None)
    stopped = Worker(tmp_path, "stop_in_compact", repo=str(repo))
    line = stopped.wait_for("in-compact")
    wait_stopped(stopped.pid)
    stopped.kill()
    result: list[str] = []
    writer = threading.Thread(target=lambda: result.append(store.write("b.md", "next\n", expected=None)))
    writer.start()
    writer.join(timeout=120)
    assert not writer.is_alive() and result
    try:
        os.kill(int(line[1]), 0)
        repack_alive = True
    except ProcessLookupError:
        repack_alive = False
    assert not repack_alive or _waitpid_gone(int(line[1]))
    acked = [f"c{n}.md" for n in range(10)]
    files = head_files(repo)
    assert "b.md" in files and any(name in files for name in acked)
    _still_plain_git(repo, tmp_path)


@pytest.mark.parametrize("step", ["pack", "idx", "record"])
def test_writer_killed_during_an_in_process_fold(tmp_path: Path, step: str) -> None:
    """Killed while it copies small packs into one (temp files, pack renamed, pack complete): nothing is lost."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("a.md", "one\n", expected=None)
    stopped = Worker(tmp_path, "stop_in_fold", repo=str(repo), step=step)
    stopped.wait_for("in-fold")
    wait_stopped(stopped.pid)
    stopped.kill()
    acked = [line[1] for line in stopped.lines() if line[0] == "wrote"]
    assert acked
    files = head_files(repo)
    assert all(name in files for name in acked)
    assert_fsck_clean(repo)
    version = None
    for n in range(6):  # more writes and folds after the kill: the leftovers are folded or ignored
        version = store.write("b.md", f"{n}\n", expected=version)
    with store.repo.lock.hold():
        store.repo.compact()
    assert store.read("b.md").text == "5\n" and all(store.read(name).text for name in acked)
    _still_plain_git(repo, tmp_path)


def _waitpid_gone(pid: int) -> bool:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_readers_keep_reading_while_packs_are_folded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-lived reader in another process sees every write while compactions delete the small packs."""
    monkeypatch.setattr(engine, "MAX_PACKS", 3)
    monkeypatch.setattr(packwrite, "GRACE_SECONDS", 0.0)  # folded packs go at the next compaction
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    for n in range(5):
        store.write(f"f{n}.md", "0\n", expected=None)
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from gitmem import GitFileStore\n"
            "s = GitFileStore.open(sys.argv[1]).sync\n"
            "last = {}\n"
            "end = time.monotonic() + 120\n"
            "while time.monotonic() < end:\n"
            "    for n in range(5):\n"
            "        v = int(s.read(f'f{n}.md').text)\n"
            "        assert v >= last.get(n, 0), (n, v, last)\n"
            "        last[n] = v\n"
            "    if all(v == 12 for v in last.values()) and len(last) == 5: break\n"
            "print('ok', flush=True)\n",
            str(repo),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    versions = {n: store.read(f"f{n}.md").version for n in range(5)}
    for value in range(1, 13):
        for n in range(5):
            versions[n] = store.write(f"f{n}.md", f"{value}\n", expected=versions[n])
    out, err = reader.communicate(timeout=180)
    assert reader.returncode == 0 and out.strip() == "ok", err
    # A fold starts once MAX_PACKS packs were written since the last: up to that many wait for the next.
    assert packwrite.pack_count(str(repo)) <= 2 * engine.MAX_PACKS + 4
    assert_fsck_clean(repo)


def test_folded_packs_are_let_go_by_open_handles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """libgit2 keeps every pack it opened; after a compaction handles reopen, so deleted packs free their space."""
    monkeypatch.setattr(engine, "MAX_PACKS", 3)
    monkeypatch.setattr(packwrite, "GRACE_SECONDS", 0.0)
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    reader = GitFileStore.open(repo).sync
    version = None
    for n in range(12):
        version = store.write("a.md", f"{n}\n", expected=version)
        assert reader.read("a.md").text == f"{n}\n"
    assert reader.read("a.md").text == store.read("a.md").text == "11\n"  # each handle's next call reopens it
    gc.collect()  # the handles a compaction made stale sit in reference cycles
    deleted = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if str(repo) in target and target.endswith("(deleted)"):
            deleted.append(target)
    assert deleted == []
    assert packwrite.pack_count(str(repo)) <= 2 * engine.MAX_PACKS + 4
