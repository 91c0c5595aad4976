"""`gitmem push` loads none of the pull side: every CLI call is a new process, and importing
the quarantine, the commit checks, merge and conflict proposals cost a push more than its work.
A push of `main` alone (no erasure ledger to send) loads neither libgit2 nor click
(`remotepush.push_named` reads what it needs with the peek; the quick path runs it), nor the
path rules.

A real `gitmem push` process (through the entry point) sends a new note to a bare repository;
what it imported is read from its `sys.modules`. How long the import takes is measured by
bench/bench_forge.py, never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from serve.support import git

from gitmem import Root, remotes

#: Modules only a pull (or a merge, a review, a server) needs.
PULL_SIDE = (
    "gitmem.git.pull",
    "gitmem.git.merge",
    "gitmem.git.conflict",
    "gitmem.git.quarantine",
    "gitmem.git.pushcheck",
    "gitmem.git.review",
    "gitmem.remotes",
    "gitmem.review",
)

ENTRY = """
import json, os, sys
from gitmem.adapters.cli import main
leave = os._exit  # a push ends its process at once (quick.leave): list the modules first
os._exit = lambda code: (print(json.dumps(sorted(sys.modules)), file=sys.stderr), leave(code))
main()
"""


def pushed(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, "--root", str(tmp_path / "mem"), "push", "user"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "refs/heads/main" in done.stdout
    return done, set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_a_push_process_pushes_without_loading_the_pull_side(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    store = root.mount("user", create=True)
    hosting = tmp_path / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    remotes.add(store, "origin", str(hosting))
    store.sync.write("notes/a.md", "first note\n", expected=None)

    _, loaded = pushed(tmp_path)

    assert git("--git-dir", str(hosting), "rev-parse", "main").stdout.strip() == store.sync.head()
    assert "gitmem.git.transport" in loaded
    heavy = (
        "pygit2",
        "click",
        "gitmem.git.remote",
        "gitmem.gitstore",
        "gitmem.fileformat",
        "typing",  # types are the type checker's: a push loads no typing, builds no dataclass
        "dataclasses",
    )
    assert sorted(m for m in (*PULL_SIDE, *heavy) if m in loaded) == []

    # After a forget the mount has an erasure ledger: the push goes through the store, which
    # sends the ledger with main (and leases the rewrite over what the remote held before).
    store.sync.write("notes/b.md", "a secret to erase\n", expected=None)
    remotes.push(store)
    store.sync.forget("notes/b.md")
    _, loaded = pushed(tmp_path)
    refs = git("--git-dir", str(hosting), "for-each-ref", "--format=%(refname) %(objectname)").stdout.split("\n")
    assert f"refs/heads/main {store.sync.head()}" in refs
    assert any(line.startswith("refs/gitmem/erasures ") for line in refs)
    assert "gitmem.git.remote" in loaded
    assert sorted(m for m in PULL_SIDE if m in loaded) == []
