"""Memories are personal data: what gitmem creates is owner-only, whatever the umask.

That includes the folders it creates on the way to a root or a memory.

A child process sets the umask (it is process-wide), creates a root, mounts, a
memory made without a root, writes, builds the search index and runs a forget
(which writes the pending mark and the generation stamp); the test then checks
the modes it left.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

MAKE = r"""
import os, sys
os.umask(int(sys.argv[1], 8))
from gitmem import GitFileStore, Root
root = Root(sys.argv[2])
store = root.mount("user", create=True).sync
store.write("notes/a.md", "a memory about tea\n", expected=None)
store.write("notes/b.md", "another memory\n", expected=None)
store.forget("notes/b.md")
assert store.search("memory").matches
assert store.find("tea")
alone = GitFileStore.init(sys.argv[3]).sync
alone.write("x.md", "x\n", expected=None)
"""


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", ["0", "022", "002"])
def test_roots_mounts_and_gitmems_own_files_are_owner_only(tmp_path: Path, umask: str) -> None:
    root, alone = tmp_path / "data" / "root", tmp_path / "solo" / "deep" / "alone.git"
    subprocess.run([sys.executable, "-c", MAKE, umask, str(root), str(alone)], check=True)
    mount = root / "user.git"
    folders = [root, mount, mount / "gitmem", mount / "gitmem" / "index", alone, alone / "gitmem"]
    folders += [tmp_path / "data", tmp_path / "solo", tmp_path / "solo" / "deep"]  # made on the way
    for folder in folders:
        assert _mode(folder) == 0o700, (folder, oct(_mode(folder)))
    files = [root / ".gitmem-root.lock", mount / "gitmem" / "write.lock", mount / "gitmem" / "generation"]
    for file in files:
        assert _mode(file) & 0o077 == 0, (file, oct(_mode(file)))
    # Nothing else inside a mount can be reached by anyone else: its folder is 0700.
    for inside in mount.rglob("*"):
        assert mount in inside.parents
    assert not (mount / "gitmem" / "forget-pending").exists()


def test_an_existing_folder_keeps_its_mode(tmp_path: Path) -> None:
    """gitmem tightens what it creates; a root someone made (shared on purpose) stays as it was."""
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, 0o750)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from gitmem import Root; Root(sys.argv[1]).mount('user', create=True)",
            str(root),
        ],
        check=True,
    )
    assert _mode(root) == 0o750
    assert _mode(root / "user.git") == 0o700


WATCH = r"""
import os, sys
os.umask(0)
from gitmem.adapters.watch import watch
with watch(sys.argv[1], index=False, timeout=0.1):
    pass
"""


def test_a_root_the_watcher_creates_is_owner_only(tmp_path: Path) -> None:
    pytest.importorskip("watchdog")
    root = tmp_path / "data" / "watched"
    subprocess.run([sys.executable, "-c", WATCH, str(root)], check=True)
    assert _mode(root) == 0o700, oct(_mode(root))


FOLDERS_UNDER = r"""
import os, sys
from gitmem.localfile import local_folder_fd
os.umask(int(sys.argv[1], 8))
os.close(local_folder_fd(os.path.join(sys.argv[2], "gitmem", "derived"), root=sys.argv[2]))
"""


@pytest.mark.parametrize("umask", ["0", "0700"])
def test_folders_a_writer_makes_under_a_mount_are_owner_only_and_the_owners(tmp_path: Path, umask: str) -> None:
    # A umask may widen the mode (0) or take the owner's own rights away (0700): neither holds.
    mount = tmp_path / "m.git"
    mount.mkdir()
    subprocess.run([sys.executable, "-c", FOLDERS_UNDER, umask, str(mount)], check=True)
    for folder in (mount / "gitmem", mount / "gitmem" / "derived"):
        assert _mode(folder) == 0o700, (folder, oct(_mode(folder)))
