"""After a forget in another process, a long-lived reader process whose next read names an old commit
(``read(path, rev=...)``, ``gitmem cat --rev`` in a server, an MCP read at a version) serves the erased
file no more: resolving a revision asks the history mark first (libgit2 would keep the deleted packs open)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gitmem import GitFileStore, Origin

ADMIN = Origin("run-1", "admin", "call-1")
SECRET = "the vault code is 4711\n"

READER = r"""
import json, sys
from gitmem import GitFileStore, MemoryStoreError
store = GitFileStore.open(sys.argv[1]).sync
for line in sys.stdin:
    path, rev = json.loads(line)
    try:
        out = store.read(path, rev=rev).text
    except MemoryStoreError as exc:
        out = "ERR " + exc.code
    print(json.dumps(out), flush=True)
"""


def test_a_forget_elsewhere_is_not_served_to_a_reader_naming_an_old_commit(tmp_path: Path) -> None:
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    writer = GitFileStore.open(path).sync
    writer.write("ops/secret.md", SECRET, expected=None)
    old = writer.head()
    writer.write("keep.md", "keep\n", expected=None)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(
        [sys.executable, "-c", READER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdin and proc.stdout
    try:
        def ask(p: str, rev: str) -> str:
            proc.stdin.write(json.dumps([p, rev]) + "\n")
            proc.stdin.flush()
            return json.loads(proc.stdout.readline())

        assert ask("keep.md", old[:12]) == "ERR not_found"  # handle open, packs listed
        assert ask("ops/secret.md", old) == SECRET
        done = subprocess.run(
            [sys.executable, "-c", f"from gitmem import GitFileStore, Origin; GitFileStore.open({path!r}).sync.forget('ops/secret.md', origin=Origin('r','admin','c'))"],
            env=env, capture_output=True, text=True,
        )
        assert done.returncode == 0, done.stderr
        fresh = subprocess.run(
            [sys.executable, "-c", READER, path], input=json.dumps(["ops/secret.md", old]) + "\n",
            capture_output=True, text=True, env=env,
        )
        print("a new process answers:", fresh.stdout.strip())
        assert SECRET not in fresh.stdout
        answer = ask("ops/secret.md", old)
        print("the long-lived reader answers:", repr(answer))
        assert answer != SECRET
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()
