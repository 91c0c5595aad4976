"""Every operation that makes libgit2 list ``objects/pack`` refuses a planted index, after its handle is cached.

libgit2 only takes a ``pack-*.idx`` whose ``.pack`` is a regular file beside
it, and opens the index on first lookup with a blocking open: so a regular
``.pack`` and a FIFO ``.idx`` (newer than every other pack, so it is tried
first) would hang forever whatever lists the folder and then looks an object
up. A handle already open when they land must answer ``unavailable`` naming
the index (forget, purge, read_under, a pull that merges, a write through the
handle's object database), change nothing, and never hang. Each call runs in a
child process with a time-out, so a hang fails the test instead of the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from contract.support import assert_fsck_clean

ROOT = Path(__file__).resolve().parents[2]
NAME = "pack-" + "1" * 40

CALLS = {
    "forget": "store.forget('a.md')",
    "purge": "store.purge()",
    "read_under": "store.read_under('')",
    "pull": "remotes.pull(store, 'origin')",
    "handle write": (
        "from gitmem.git.snapshot import translate_errors\n"
        "    with translate_errors(REPO):\n"
        "        store.repo.repo.create_blob(b'a blob no pack holds')"
    ),
}

CHILD = """
import faulthandler, os, sys
faulthandler.dump_traceback_later(40, exit=True)  # a hang prints where, then fails
sys.path.insert(0, {root!r})
from gitmem import GitFileStore, MemoryStoreError, remotes
REPO, OTHER = {repo!r}, {other!r}
store = GitFileStore.init(REPO).sync
store.write("a.md", "one\\n", expected=None)
store.write("b.md", "two\\n", expected=None)
other = GitFileStore.init(OTHER).sync
other.write("c.md", "three\\n", expected=None)
remotes.add(store, "origin", OTHER)
store.read_under("")  # the handle (and its pack reader) are cached
pack = os.path.join(REPO, "objects", "pack", {name!r})
with open(pack + ".pack", "wb") as fh:  # a regular pack: libgit2 takes the index beside it
    fh.write(b"PACK\\x00\\x00\\x00\\x02\\x00\\x00\\x00\\x00" + bytes(20))
os.utime(pack + ".pack", (2e9, 2e9))  # the newest pack is searched first
os.mkfifo(pack + ".idx")
print("planted", store.head(), flush=True)
try:
    {call}
    print("answered", flush=True)
except MemoryStoreError as exc:
    print(exc.code, {name!r} in exc.message, flush=True)
"""


@pytest.mark.parametrize("what", sorted(CALLS))
def test_a_planted_index_is_refused_by_a_cached_handle(tmp_path: Path, what: str) -> None:
    repo, other = tmp_path / "m.git", tmp_path / "other.git"
    code = CHILD.format(root=str(ROOT), repo=str(repo), other=str(other), name=NAME, call=CALLS[what])
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} hung on a FIFO planted as a pack index")
    assert done.returncode == 0, done.stdout + done.stderr
    planted, answer = done.stdout.splitlines()
    assert answer == "unavailable True", done.stdout + done.stderr
    main = subprocess.run(
        ["git", "--git-dir", str(repo), "rev-parse", "main"], capture_output=True, text=True, check=True
    ).stdout.strip()
    os.unlink(repo / "objects" / "pack" / f"{NAME}.idx")
    os.unlink(repo / "objects" / "pack" / f"{NAME}.pack")
    assert planted == f"planted {main}"  # nothing moved
    assert_fsck_clean(repo)


def test_an_entry_planted_within_the_clock_tick_of_a_check_is_still_found(tmp_path: Path) -> None:
    """The kernel stamps a folder from a coarse clock: an index planted in the same tick as the last check leaves
    the folder's mtime as it was, and must not pass as the clean folder that check saw."""
    from gitmem import MemoryStoreError
    from gitmem.git.control import check_pack_folder

    folder = tmp_path / "objects" / "pack"
    folder.mkdir(parents=True)
    (folder / f"{NAME}.pack").write_bytes(b"PACK")
    check_pack_folder(str(folder))
    seen = folder.stat()
    os.mkfifo(folder / f"{NAME}.idx")
    os.utime(folder, ns=(seen.st_atime_ns, seen.st_mtime_ns))  # the same tick: the stamp did not move
    with pytest.raises(MemoryStoreError) as refused:
        check_pack_folder(str(folder))
    assert refused.value.code == "unavailable" and NAME in refused.value.message
