"""A folder of a mount's derived state planted as a link: nothing is written through it.

The opener refuses a link in place of a file, but a derived file's *folder* was
reached through whatever stood there: ``gitmem/recall`` made a link to a folder
elsewhere had every recall snapshot (record texts) written there, and
``gitmem/derived`` the quick listing (names and descriptions). Each workload runs
in a child process with a time-out, against a mount whose folder was replaced by
a link to a folder outside the root; it must answer as usual and leave that folder
as it was (the derived file is a cache: not saving it costs only speed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from contract.support import assert_fsck_clean

ROOT = Path(__file__).resolve().parents[2]

SETUP = """
import sys
sys.path.insert(0, {root!r})
from gitmem.root import Root
from gitmem.records import RecordStore
root = Root({mounts!r})
"""

CASES = {
    # the records' recall snapshot, under gitmem/recall (StoreRecall, through gitmem.catchup)
    "gitmem/recall": (
        "store = root.mount('m', create=True, kind='record').sync\nRecordStore(store, 'u').add('hello apples')\n",
        "store = root.mount('m').sync\n"
        "records = RecordStore(store, 'u')\n"
        "records.add('more apples')\n"
        "print(sorted(r.text for r in records.search('apples', limit=5)))\n"
        "records._recall_index().save_snapshot()\n",
        "['hello apples', 'more apples']",
    ),
    # the quick ls's listing, under gitmem/derived
    "gitmem/derived": (
        "root.mount('m', create=True).sync.write('a.md', 'alpha\\n', expected=None)\n",
        "from gitmem import quickread\n"
        "print([e.path for e in quickread.list_files(root, 'm')])\n"
        "print([e.path for e in quickread.list_files(root, 'm')])\n",
        "['a.md']\n['a.md']",
    ),
}


@pytest.mark.parametrize("folder", sorted(CASES))
def test_nothing_is_written_through_a_linked_state_folder(tmp_path: Path, folder: str) -> None:
    mounts, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.txt").write_text("a file outside the root\n")
    make, use, answer = CASES[folder]
    head = SETUP.format(root=str(ROOT), mounts=str(mounts))
    subprocess.run([sys.executable, "-c", head + make], check=True, capture_output=True, timeout=60)
    repo = mounts / "m.git"
    linked = repo / folder
    if linked.exists():
        shutil.rmtree(linked)
    linked.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, linked)
    try:
        done = subprocess.run(
            [sys.executable, "-c", head + use], capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"a workload hung on {folder} planted as a link")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == answer
    assert sorted(os.listdir(outside)) == ["kept.txt"], f"written through the link at {folder}"
    assert (outside / "kept.txt").read_text() == "a file outside the root\n"
    os.unlink(linked)
    assert_fsck_clean(repo)


STATE = """
from gitmem import MemoryStoreError
try:
    root.mount('m').sync.write('b.md', 'beta\\n', expected=None)
    print('wrote')
except MemoryStoreError as exc:
    print(exc.code, 'is a link' in exc.message)
"""


@pytest.mark.parametrize("folder", ["gitmem", "objects", "refs", "objects/pack", "objects/info", "refs/heads"])
def test_a_folder_gitmem_writes_in_planted_as_a_link_is_refused(tmp_path: Path, folder: str) -> None:
    """``gitmem/`` (its write lock, the last commit's copy: the memory's texts), ``objects`` and its folders
    (every commit's pack) and ``refs`` and its folders: each was written through a link planted in its
    place, to wherever it pointed."""
    mounts, outside = tmp_path / "root", tmp_path / "outside"
    head = SETUP.format(root=str(ROOT), mounts=str(mounts))
    make = "root.mount('m', create=True).sync.write('a.md', 'alpha\\n', expected=None)\n"
    subprocess.run([sys.executable, "-c", head + make], check=True, capture_output=True, timeout=60)
    repo = mounts / "m.git"
    shutil.copytree(repo / folder, outside)
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    shutil.rmtree(repo / folder)
    os.symlink(outside, repo / folder)
    done = subprocess.run([sys.executable, "-c", head + STATE], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["unavailable", "True"], done.stdout + done.stderr
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
    os.unlink(repo / folder)
    shutil.copytree(outside, repo / folder)
    assert_fsck_clean(repo)
