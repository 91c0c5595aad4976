"""What may keep an erased version on disk past forget's or purge's prune, and what finishes it after.

git's own ways to keep a pack out of a repack (a ``.keep`` file, the
``gc.bigPackThreshold`` setting) keep every object in it, erased or not; a
``.keep`` forget itself writes must never outlive it as something gitmem no
longer recognises. When a prune could not delete everything, the erasure stays
pending, so the next ``gc``, ``forget`` or ``purge`` prunes again.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitmem import SyncGitFileStore
from gitmem.errors import MemoryStoreError
from gitmem.git import erasures, rewrite
from gitmem.git.loose import open_repository

from .conftest import Git, secret_history


def _on_disk(git: Git, blobs: list[str]) -> list[str]:
    return [b for b in blobs if git("cat-file", "-e", b, check=False).returncode == 0]


def _the_pack(store: SyncGitFileStore) -> Path:
    [pack] = Path(store.path, "objects", "pack").glob("*.pack")
    return pack


def test_a_big_pack_threshold_in_gits_config_does_not_keep_erased_versions(store: SyncGitFileStore, git: Git) -> None:
    versions = secret_history(store, 5)
    git("gc", "--quiet")
    git("config", "gc.bigPackThreshold", "1")  # a setting for big repositories: keep every pack of 1 byte or more

    store.forget("secret.md")

    assert _on_disk(git, versions) == []


def test_a_keep_that_appears_during_a_forget_leaves_the_erasure_pending_until_a_prune_deletes_it(
    store: SyncGitFileStore, git: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    versions = secret_history(store, 5)
    git("gc", "--quiet")
    keep = _the_pack(store).with_suffix(".keep")
    real = rewrite.run_git

    def keep_appears(path: str, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
        if "gc" in args and not keep.exists():
            keep.write_text("another tool's\n")  # after forget's check, before its prune
        return real(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(rewrite, "run_git", keep_appears)
    with pytest.raises(MemoryStoreError) as err:
        store.forget("secret.md")
    assert err.value.code == "unavailable" and "could not be pruned" in err.value.message
    assert _on_disk(git, versions) == versions  # the other tool's pack keeps them, as it asked
    monkeypatch.setattr(rewrite, "run_git", real)

    keep.unlink()  # what the error asks for; then any prune finishes the erasure
    store.gc()

    assert _on_disk(git, versions) == []
    assert not os.path.exists(os.path.join(store.path, "gitmem", "forget-pending"))
    [entry] = [e for e in erasures.entries(open_repository(store.path)) if e.kind == "forget"]
    assert set(entry.blobs) == set(versions)


def test_purge_refuses_a_kept_pack_before_changing_anything(store: SyncGitFileStore, git: Git) -> None:
    versions = secret_history(store, 5)
    git("gc", "--quiet")
    keep = _the_pack(store).with_suffix(".keep")
    keep.write_text("another tool's\n")
    head = store.head()

    with pytest.raises(MemoryStoreError) as err:
        store.purge()

    assert err.value.code == "unavailable" and ".keep" in err.value.message
    assert store.head() == head and store.read("secret.md").text == "token 5\n"
    keep.unlink()
    store.purge()
    assert _on_disk(git, versions) == []


# forget in a process of its own, killed the moment it has created the file that is to be
# its pack's .keep, before gitmem's note is in it.
KILLED_AT_THE_KEEP = """
import os, signal, sys
from gitmem import GitFileStore

real = os.fdopen

def fdopen(fd, *args, **kw):
    if "keep" in os.path.basename(os.readlink(f"/proc/self/fd/{fd}")):  # the file that is to be the .keep
        os.kill(os.getpid(), signal.SIGKILL)
    return real(fd, *args, **kw)

os.fdopen = fdopen
GitFileStore.open(sys.argv[1]).sync.forget("secret.md")
"""


def test_a_forget_killed_as_it_creates_its_keep_leaves_nothing_that_blocks_the_next(
    store: SyncGitFileStore, git: Git
) -> None:
    versions = secret_history(store, 5)
    git("gc", "--quiet")
    done = subprocess.run([sys.executable, "-c", KILLED_AT_THE_KEEP, store.path], capture_output=True, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr

    store.gc()  # finishes the interrupted prune
    store.forget("notes/n1.md")  # and a later forget is not refused over what the kill left

    assert _on_disk(git, versions) == []
    assert not [n for n in os.listdir(Path(store.path, "objects", "pack")) if "keep" in n]
    assert git("fsck", "--strict", "--no-dangling").returncode == 0


FORGET = """
import shutil
import sys
import time
from gitmem import GitFileStore
GitFileStore.open(sys.argv[1]).sync.forget("secret.md")
"""


@pytest.mark.slow
def test_a_forget_killed_while_its_gc_runs_with_the_keep_in_place_is_finished_by_the_next_gc(
    store: SyncGitFileStore, git: Git, tmp_path: Path
) -> None:
    """The pruning git outlives gitmem (it holds the writer lock); its ``.keep`` stays behind."""
    versions = secret_history(store, 5)
    git("gc", "--quiet")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    slow_gc = bin_dir / "git"  # the prune's gc starts a second late: gitmem is killed before it ends
    slow_gc.write_text(f'#!/bin/sh\ncase " $* " in *" gc "*) sleep 1;; esac\nexec {shutil.which("git")} "$@"\n')
    slow_gc.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    packs = Path(store.path, "objects", "pack")
    proc = subprocess.Popen([sys.executable, "-c", FORGET, store.path], env=env)
    deadline = time.monotonic() + 30
    while not list(packs.glob("*.keep")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert list(packs.glob("*.keep")), "forget never wrote its .keep"
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    store.gc()  # waits for the pruning git to let go of the writer lock, then prunes again

    assert _on_disk(git, versions) == []
    assert not [n for n in os.listdir(packs) if "keep" in n]
    assert not os.path.exists(os.path.join(store.path, "gitmem", "forget-pending"))
    assert git("fsck", "--strict", "--no-dangling").returncode == 0
    assert store.read("notes/n1.md").text == "note 1\n"
    store.forget("notes/n2.md")


def test_a_commit_graph_a_foreign_gc_writes_while_the_prune_waits_for_it_does_not_survive(
    store: SyncGitFileStore, git: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph lists the old commits and their trees; left behind, ``git fsck`` fails on it."""
    secret_history(store, 5)
    git("gc", "--quiet")
    graph = Path(store.path, "objects", "info", "commit-graph")
    old_graph = graph.read_bytes()  # what a gc that read the refs before forget moved them writes
    running = subprocess.Popen(["sleep", "60"])  # that gc's process, named by its gc.pid
    Path(store.path, "gc.pid").write_text(f"{running.pid} {socket.gethostname()}")
    real = rewrite.run_git

    def foreign_gc_finishes(path: str, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
        done = real(path, *args, **kw)  # type: ignore[arg-type]
        if "gc" in args and "already running" in done.stderr:
            graph.write_bytes(old_graph)  # it writes its graph last, then lets go of gc.pid
            running.kill()
            running.wait()
            os.unlink(os.path.join(store.path, "gc.pid"))
        return done

    monkeypatch.setattr(rewrite, "run_git", foreign_gc_finishes)
    try:
        store.forget("secret.md")
    finally:
        running.kill()

    assert not graph.exists()
    assert git("fsck", "--strict", "--no-dangling", check=False).returncode == 0
