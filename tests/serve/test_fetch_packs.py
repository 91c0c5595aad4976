"""Fetches from ``gitmem serve`` when the mount holds several packs, with and without a bitmap."""

from __future__ import annotations

from pathlib import Path

from .support import Mount, Served, commit_all, git, seed, write


def packs(mount: Path) -> tuple[int, int]:
    folder = mount / "objects" / "pack"
    return len(list(folder.glob("*.pack"))), len(list(folder.glob("*.bitmap")))


def test_incremental_fetches_work_after_gc_and_a_push(served: Served, mount: Mount, tmp_path: Path) -> None:
    seed(mount.store)
    for i in range(5):
        mount.store.sync.write(f"n{i}.md", f"note {i}\n", expected=None)
    reader = tmp_path / "reader"
    git("clone", "-q", served.url(mount.name), str(reader))
    mount.store.sync.gc()
    assert packs(mount.path)[1] == 1, "gc wrote no bitmap: this test would not test the bitmap path"

    writer = tmp_path / "writer"
    git("clone", "-q", served.url(mount.name), str(writer))
    for round_ in range(2):
        git("pull", "-q", "--rebase", "origin", "main", cwd=writer)
        write(writer, f"pushed{round_}.md", f"pushed {round_}\n")
        pushed = commit_all(writer, f"push {round_}")
        git("push", "-q", "origin", "main", cwd=writer)
        mount.store.sync.write(f"agent{round_}.md", f"agent {round_}\n", expected=None)
        assert packs(mount.path)[0] >= 2

        done = git("fetch", "origin", cwd=reader, check=False)
        assert done.returncode == 0, done.stderr
        head = mount.store.sync.head()
        assert git("rev-parse", "origin/main", cwd=reader).stdout.strip() == head
        assert git("merge-base", "--is-ancestor", pushed, head, cwd=reader).returncode == 0
        git("fsck", "--strict", cwd=reader)
    # A fresh clone works too.
    git("clone", "-q", served.url(mount.name), str(tmp_path / "fresh"))
