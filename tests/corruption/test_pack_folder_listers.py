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
import time
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


def test_an_entry_planted_under_a_folder_whose_mtime_is_set_back_is_still_found(tmp_path: Path) -> None:
    """Whoever can plant a file can also set its folder's mtime back (``touch -d``) to the stamp a check saw
    clean; only the change time moves whatever they do, so the check must not pass the folder as that one."""
    from gitmem import MemoryStoreError
    from gitmem.git.control import check_folder

    folder = tmp_path / "objects" / "pack"
    folder.mkdir(parents=True)
    (folder / f"{NAME}.pack").write_bytes(b"PACK")
    os.utime(folder, (1e9, 1e9))  # long ago: a stamp no clock tick can still move, so the check keeps it
    time.sleep(0.1)  # the change time the utime set is past the racy window too
    check_folder(str(folder))
    seen = folder.stat()
    os.mkfifo(folder / f"{NAME}.idx")
    os.utime(folder, ns=(seen.st_atime_ns, seen.st_mtime_ns))
    assert folder.stat().st_mtime_ns == seen.st_mtime_ns
    with pytest.raises(MemoryStoreError) as refused:
        check_folder(str(folder))
    assert refused.value.code == "unavailable" and NAME in refused.value.message


SET_BACK = """
import faulthandler, os, sys, time
faulthandler.dump_traceback_later(20, exit=True)
sys.path.insert(0, {root!r})
from gitmem import GitFileStore, MemoryStoreError
REPO = {repo!r}
store = GitFileStore.init(REPO).sync
store.write("a.md", "one\\n", expected=None)
time.sleep(0.2)  # past the racy window: the next listing's stamp is kept
store.read_under("")
folder = os.path.join(REPO, "objects", "pack")
seen = os.stat(folder)
pack = os.path.join(folder, {name!r})
with open(pack + ".pack", "wb") as fh:
    fh.write(b"PACK\\x00\\x00\\x00\\x02\\x00\\x00\\x00\\x00" + bytes(20))
os.utime(pack + ".pack", (2e9, 2e9))
os.mkfifo(pack + ".idx")
os.utime(folder, ns=(seen.st_atime_ns, seen.st_mtime_ns))  # the folder looks as the check last saw it
try:
    store.purge()
    print("answered", flush=True)
except MemoryStoreError as exc:
    print(exc.code, {name!r} in exc.message, flush=True)
"""


def test_a_process_refuses_an_index_planted_under_a_set_back_mtime(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    code = SET_BACK.format(root=str(ROOT), repo=str(repo), name=NAME)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("purge hung on a FIFO index planted under a pack folder whose mtime was set back")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["unavailable", "True"], done.stdout + done.stderr
    os.unlink(repo / "objects" / "pack" / f"{NAME}.idx")
    os.unlink(repo / "objects" / "pack" / f"{NAME}.pack")
    assert_fsck_clean(repo)
