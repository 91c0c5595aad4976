"""Durability belongs to the mount: set once (``gitmem config NAME gitmem.durable true``), honoured by every process.

A writer in another process that opened the memory without asking for
durability must still fsync the commit's pack, its index, the pack folder, the
ref and the ref folder before its write returns: the child records every fsync
and the moment ``write`` returned, and the parent checks the order.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from contract.support import assert_fsck_clean, traced_syncs

from gitmem import GitFileStore

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, os, sys
sys.path.insert(0, ROOT)
from gitmem import GitFileStore
events = []
real = os.fsync
def fsync(fd):
    real(fd)
    events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
os.fsync = fsync
store = GitFileStore.open(REPO).sync  # no durable=True here: the mount says so
store.write(f"b{os.getpid()}.md", "durable\\n", expected=None)
events.append(("returned", ""))
print(json.dumps(events))
"""


def _child(repo: Path) -> list[list[str]]:
    code = f"ROOT = {str(ROOT)!r}; REPO = {str(repo)!r}\n" + CHILD
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return [list(e) for e in json.loads(done.stdout)]


def _assert_main_synced_in_order(repo: Path, tmp_path: Path) -> None:
    """Under strace (where the machine has it): main.lock is fsynced before it is renamed over main,
    and refs/heads after (seen from the kernel side, whichever code makes the calls)."""
    events = traced_syncs(f"ROOT = {str(ROOT)!r}; REPO = {str(repo)!r}\n" + CHILD, tmp_path / "strace.txt")
    if events is None:
        return
    moved = events.index(("rename", str(repo / "refs" / "heads" / "main")))
    assert ("fsync", str(repo / "refs" / "heads" / "main.lock")) in events[:moved], events
    assert any(k == "fsync" and p.endswith("refs/heads") for k, p in events[moved + 1 :]), events


def test_a_durable_mount_is_fsynced_by_a_writer_that_did_not_ask(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    GitFileStore.init(repo).sync.write("a.md", "one\n", expected=None)
    assert [k for k, _ in _child(repo)] == ["returned"]  # not durable: no fsync at all
    subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(tmp_path), "config", "m", "gitmem.durable", "true"],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    events = _child(repo)
    returned = events.index(["returned", ""])
    synced = [path for kind, path in events[:returned] if kind == "fsync"]
    names = [Path(p).name for p in synced]
    assert any(n.endswith(".pack") for n in names), names
    assert any(n.startswith("tmp_idx_") for n in names), names
    assert any(p.endswith("objects/pack") for p in synced), synced
    moved = [p for p in synced if p.endswith("refs/heads/main.lock")]
    assert moved and synced.index(moved[0]) < len(synced) - 1 and synced[-1].endswith("refs/heads"), synced
    _assert_main_synced_in_order(repo, tmp_path)
    assert len(events) == returned + 1  # nothing is synced after the write returned
    assert GitFileStore.open(repo).sync.durable
    config = (repo / "config").read_text()
    assert "durable = true" in config and "fsync = committed" in config  # the git CLI honours it too
    assert_fsck_clean(repo)
