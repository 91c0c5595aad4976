"""The CLI's fast-forward pull (:mod:`gitmem.remotepull`) against what changes while it runs.

The quick path looks at the mount (its refs, the erasure ledger) before it fetches, and
lands the fetched commits under the writer lock. Whatever a concurrent writer, forget or
purge did in between must be seen under the lock: a ledger written meanwhile still keeps
what it names out, as the store's pull keeps it out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from serve.support import commit_all, git, write

from gitmem import MemoryStoreError, Origin, Root, remotepull, remotes

ADMIN = Origin("run-9", "admin", "call-9")
SECRET = "office wifi is on the third floor, ask Dana at the desk\n"


def test_a_forget_between_the_look_and_the_lock_keeps_its_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Root(tmp_path / "root")
    store = root.mount("m", create=True, hooks=False)
    sync = store.sync
    sync.write("ops/wifi.md", SECRET, expected=None)
    sync.write("keep.md", "keep\n", expected=None)
    forge = tmp_path / "forge.git"
    git("init", "-q", "--bare", "-b", "main", str(forge))
    remotes.add(store, "origin", str(forge))
    work = tmp_path / "work"
    looked = remotepull._durable

    def forget_meanwhile(folder: str, remote: str) -> bool:
        # The quick path has seen no ledger and no other ref; now a forget runs to its end, and the
        # remote (a hostile one, or a stale clone rebased on the rewritten history) brings the text back.
        sync.forget("ops/wifi.md", origin=ADMIN)
        sync.write("after.md", "an agent writes on\n", expected=None)  # main is a loose ref again
        git("push", "-q", "-f", str(forge), "main", cwd=sync.repo.path)
        git("clone", "-q", str(forge), str(work))
        write(work, "ops/wifi.md", SECRET)
        commit_all(work, "the wifi again")
        git("push", "-q", "origin", "main", cwd=work)
        return looked(folder, remote)

    monkeypatch.setattr(remotepull, "_durable", forget_meanwhile)
    with pytest.raises(MemoryStoreError) as caught:
        remotepull.pull_named(root, "m", "origin")
    assert caught.value.code == "forbidden" and "erased" in caught.value.message
    assert "ops/wifi.md" not in git("ls-tree", "-r", "--name-only", "main", cwd=sync.repo.path).stdout
