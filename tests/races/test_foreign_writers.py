"""gitmem writers sharing ``main`` with plain git and dulwich, while refs are packed.

Foreign writers move the ref with their own compare-and-swap (``git update-ref
NEW OLD``, dulwich ``set_if_equals``) and never take gitmem's writer lock, so
only the ref CAS keeps the writers from overwriting each other. gitmem must
rebuild its change on the foreign head; nobody's acknowledged commit may vanish.
A ``git pack-refs --all`` loop moves ``main`` between its loose file and
``packed-refs`` underneath everyone the whole time.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
from race_support import (
    Worker,
    assert_fsck_clean,
    assert_linear,
    commit_count,
    git,
    head_files,
    history_blobs,
    run_all,
)

from gitmem import GitFileStore

pytestmark = pytest.mark.slow


def pack_refs_loop(repo: Path, stop: threading.Event, runs: list[int]) -> None:
    while not stop.is_set():
        # It may fail while someone holds main.lock; that is part of the weather.
        subprocess.run(["git", "-C", str(repo), "pack-refs", "--all"], capture_output=True, check=False)
        runs.append(1)


def test_gitmem_git_cli_and_dulwich_writers_keep_every_commit(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("counter.txt", "0\n", expected=None)
    go = tmp_path / "go"
    gitmem_writes, counter_writes, foreign_writes = 120, 40, 30
    workers = [
        Worker(tmp_path, "distinct", repo=str(repo), wid=0, writes=gitmem_writes, files=6, go=str(go)),
        Worker(tmp_path, "counter", repo=str(repo), wid=1, writes=counter_writes, go=str(go)),
        Worker(tmp_path, "gitcli", repo=str(repo), writes=foreign_writes, go=str(go)),
        Worker(tmp_path, "dulwich", repo=str(repo), writes=foreign_writes, go=str(go)),
    ]
    stop, runs = threading.Event(), []
    packer = threading.Thread(target=pack_refs_loop, args=(repo, stop, runs))
    packer.start()
    try:
        elapsed = run_all(workers, go)
    finally:
        stop.set()
        packer.join()

    distinct, counter, gitcli, dul = (w.lines() for w in workers)
    *gitcli, (_, cli_retries, _) = gitcli
    *dul, (_, dul_retries, _) = dul
    assert len(distinct) == gitmem_writes and len(counter) == counter_writes
    assert len(gitcli) == len(dul) == foreign_writes

    files = head_files(repo)
    history = history_blobs(repo)
    # gitmem's writes: each is in history, and each file ends at its last acknowledged version.
    assert all((path, version) in history for path, version, _ in distinct)
    last = {path: version for path, version, _ in sorted(distinct, key=lambda line: int(line[2]))}
    assert {p: files[p] for p in last} == last
    assert store.read("counter.txt").text == f"{counter_writes}\n"
    # The foreign writers' commits are all still on main, with their files.
    for name, blob, commit in [*gitcli, *dul]:
        assert files[name] == blob
        assert subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", commit, "main"]).returncode == 0
    assert commit_count(repo) == 2 + gitmem_writes + counter_writes + 2 * foreign_writes
    assert_linear(repo)
    assert_fsck_clean(repo)
    # The memory still works for gitmem after all that packing.
    assert "g-0.md" in {entry.path for entry in store.list()}
    assert git(repo, "cat-file", "-t", "main").strip() == "commit"
    print(
        f"\n[mixed] {2 * foreign_writes + gitmem_writes + counter_writes} commits in {elapsed:.2f}s "
        f"with {len(runs)} pack-refs runs; foreign CAS retries: git {cli_retries}, dulwich {dul_retries}"
    )
