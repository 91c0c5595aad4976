"""Everything gitmem reads from a mount's folder is input from whoever can write that folder.

Each kind of file gitmem keeps under a mount is planted in a hostile form: a
symbolic link out of the mount, a FIFO (which would block a plain ``open``),
names that are paths, a live pack's name in the list of packs to delete, JSON
nested thousands deep, a file far bigger than gitmem writes. A bad file is
refused with a store error, or skipped and rebuilt; never a write or a
deletion outside the mount, never a hang, never a raw exception. Operations
that could hang run in a child process with a time-out, so a regression fails
here instead of stopping the suite. ``git fsck --strict`` after each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from contract.support import assert_fsck_clean

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git import engine, packwrite
from gitmem.git.repo import GitRepo

ROOT = Path(__file__).resolve().parents[2]


def _store(tmp_path: Path) -> tuple[Path, GitFileStore]:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo)
    store.sync.write("a.md", "one\n", expected=None)
    return repo, store


def _head_and_tree(repo: Path) -> tuple[str, str]:
    run = lambda *a: subprocess.run(["git", "--git-dir", str(repo), *a], check=True, capture_output=True, text=True)  # noqa: E731
    return run("rev-parse", "main").stdout.strip(), run("rev-parse", "main^{tree}").stdout.strip()


def _in_child(code: str, repo: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (with ``repo`` as ``REPO``) in a fresh interpreter; a hang fails the test, not the suite."""
    prelude = f"import sys; sys.path.insert(0, {str(ROOT)!r}); REPO = {str(repo)!r}\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_a_linked_write_lock_is_refused_and_nothing_outside_is_written(tmp_path: Path) -> None:
    repo, _ = _store(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    before = _head_and_tree(repo)
    lock = repo / "gitmem" / "write.lock"
    lock.unlink()
    lock.symlink_to(victim)
    fresh = GitFileStore.open(repo).sync  # a new process's handle: no descriptor open yet
    with pytest.raises(MemoryStoreError) as refused:
        fresh.write("b.md", "two\n", expected=None)
    assert refused.value.code == "unavailable" and "symbolic link" in refused.value.message
    assert victim.read_text() == "precious\n"
    assert _head_and_tree(repo) == before
    lock.unlink()
    assert fresh.write("b.md", "two\n", expected=None)
    assert_fsck_clean(repo)


@pytest.mark.parametrize("name", ["write.lock", "fold.lock"])
def test_a_fifo_in_place_of_a_lock_never_blocks(tmp_path: Path, name: str) -> None:
    repo, _ = _store(tmp_path)
    before = _head_and_tree(repo)
    lock = repo / "gitmem" / name
    lock.unlink(missing_ok=True)
    os.mkfifo(lock)
    done = _in_child(
        "from gitmem import GitFileStore, MemoryStoreError\n"
        "from gitmem.git import engine\n"
        "engine.MAX_PACKS = 0\n"  # every write folds: the fold lock is opened too
        "try:\n"
        "    GitFileStore.open(REPO).sync.write('b.md', 'two\\n', expected=None)\n"
        "    print('written')\n"
        "except MemoryStoreError as exc:\n"
        "    print(exc.code, exc.message)\n",
        repo,
    )
    assert done.returncode == 0, done.stderr
    if name == "write.lock":
        assert done.stdout.startswith("unavailable") and "not a regular file" in done.stdout
        assert _head_and_tree(repo) == before
    else:  # a fold that cannot take its lock leaves the packs as they are; the write is committed
        assert done.stdout.strip() == "written"
    assert_fsck_clean(repo)


def test_the_folded_pack_list_is_names_not_paths_and_never_deletes_a_live_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "MAX_PACKS", 1_000)  # this test folds by hand
    repo, store = _store(tmp_path)
    for n in range(5):
        store.sync.write(f"f{n}.md", f"{n}\n", expected=None)
    victim = tmp_path / "victim"
    victim.mkdir()
    for ext in (".pack", ".idx", ".rev"):
        (victim / f"thesis{ext}").write_text("not gitmem's\n")
    live = sorted(p.name[:-4] for p in (repo / "objects" / "pack").glob("*.idx"))
    lines = [
        f"{os.path.relpath(victim / 'thesis', repo / 'objects' / 'pack')} 0",
        "../../../../victim/thesis 0",
        f"{live[0]} 0",  # a live pack: its objects are nowhere else
        f"{live[1]} nan",
        "pack-" + "z" * 40 + " 0",
        "garbage",
        "[" * 5000,
    ]
    (repo / packwrite.FOLDED).write_text("\n".join(lines) + "\n")
    with store.sync.repo.lock.hold():
        store.sync.repo.compact()
    for ext in (".pack", ".idx", ".rev"):
        assert (victim / f"thesis{ext}").read_text() == "not gitmem's\n"
    assert GitFileStore.open(repo).sync.read("f4.md").text == "4\n"
    assert_fsck_clean(repo)


def test_a_listed_pack_whose_objects_another_pack_holds_is_still_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "MAX_PACKS", 1_000)
    monkeypatch.setattr(packwrite, "GRACE_SECONDS", 0.0)
    repo, store = _store(tmp_path)
    for n in range(6):
        store.sync.write(f"f{n}.md", f"{n}\n", expected=None)
    with store.sync.repo.lock.hold():
        store.sync.repo.compact()  # folds, lists the folded packs
    folded = set(packwrite._folded(str(repo)))
    assert folded
    with store.sync.repo.lock.hold():
        store.sync.repo.compact()  # their grace is over: deleted, since the fold's pack holds them
    left = {p.name[:-4] for p in (repo / "objects" / "pack").glob("*.idx")}
    assert not folded & left
    assert_fsck_clean(repo)


def test_a_fifo_or_link_in_place_of_derived_state_is_rebuilt_not_read(tmp_path: Path) -> None:
    repo, store = _store(tmp_path)
    store.sync.write("notes/cats.md", "a memory about cats\n", expected=None)
    derived = repo / "gitmem" / "derived"
    derived.mkdir(exist_ok=True)
    os.mkfifo(derived / "listing")
    (repo / "gitmem" / "generation").symlink_to(tmp_path / "nowhere")
    done = _in_child(
        "from gitmem import quickread\n"
        "from gitmem.root import Root\n"
        "import os\n"
        "root = Root(os.path.dirname(REPO))\n"
        "print(sorted(e.path for e in quickread.list_files(root, 'm')))\n",
        repo,
    )
    assert done.returncode == 0, done.stderr
    assert "'a.md'" in done.stdout and "'notes/cats.md'" in done.stdout
    assert_fsck_clean(repo)


def test_deeply_nested_or_huge_recall_snapshots_are_rebuilt(tmp_path: Path) -> None:
    from gitmem.records import RecordStore

    repo = tmp_path / "r.git"
    records = RecordStore(GitFileStore.init(repo, kind="record").sync, "alice")
    records.add("prefers green tea")
    assert [r.text for r in records.search("tea")] == ["prefers green tea"]
    snapshot = Path(records.snapshot or "")
    assert snapshot.parent.is_dir()
    for bad in ("[" * 100_000, '{"format": ' * 50_000):
        snapshot.write_text(bad)
        again = RecordStore(GitFileStore.open(repo).sync, "alice")
        assert [r.text for r in again.search("tea")] == ["prefers green tea"]
    snapshot.unlink()
    os.mkfifo(snapshot)
    done = _in_child(
        "from gitmem import GitFileStore\n"
        "from gitmem.records import RecordStore\n"
        "print([r.text for r in RecordStore(GitFileStore.open(REPO).sync, 'alice').search('tea')])\n",
        repo,
    )
    assert done.returncode == 0, done.stderr
    assert "prefers green tea" in done.stdout


def test_a_fifo_in_place_of_main_or_a_loose_object_is_a_store_error(tmp_path: Path) -> None:
    repo, store = _store(tmp_path)
    blob = store.sync.read("a.md").version
    from tests.loosen import loosen

    loosen(repo)
    loose = repo / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.unlink()
    os.mkfifo(loose)
    done = _in_child(
        "from gitmem import GitFileStore, MemoryStoreError\n"
        "try:\n"
        "    print(GitFileStore.open(REPO).sync.read('a.md').text)\n"
        "except MemoryStoreError as exc:\n"
        "    print(exc.code)\n",
        repo,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "unavailable"
    loose.unlink()
    main = repo / "refs" / "heads" / "main"
    main.unlink()
    os.mkfifo(main)
    started = time.monotonic()
    with pytest.raises(MemoryStoreError) as refused:
        GitRepo(str(repo)).head()
    assert refused.value.code == "unavailable" and time.monotonic() - started < 30


def test_a_fifo_in_place_of_the_generation_stamp_never_blocks_a_derived_write(tmp_path: Path) -> None:
    """Every writer of derived state reads the stamp first: a FIFO there reads as unreadable, never blocks."""
    from gitmem.records import RecordStore

    repo = tmp_path / "r.git"
    RecordStore(GitFileStore.init(repo, kind="record").sync, "alice").add("prefers green tea")
    stamp = repo / "gitmem" / "generation"
    stamp.unlink(missing_ok=True)
    os.mkfifo(stamp)
    done = _in_child(
        "from gitmem import GitFileStore\n"
        "from gitmem.records import RecordStore\n"
        "print([r.text for r in RecordStore(GitFileStore.open(REPO).sync, 'alice').search('tea')])\n",
        repo,
    )
    assert done.returncode == 0, done.stderr
    assert "prefers green tea" in done.stdout


def test_a_planted_tokenised_form_in_a_recall_snapshot_is_not_trusted(tmp_path: Path) -> None:
    """The snapshot's saved postings are decoded only when a query needs them: bad ones there are dropped, never used."""
    import json

    from gitmem.records import RecordStore

    repo = tmp_path / "r.git"
    records = RecordStore(GitFileStore.init(repo, kind="record").sync, "alice")
    for text in ("prefers green tea", "drinks black coffee", "green walls in the office"):
        records.add(text)
    want = sorted(r.text for r in records.search("green"))
    snapshot = Path(records.snapshot or "")
    body = json.loads(snapshot.read_text())
    for bad in ("0 0", "9", "x", "1;1:1", 7):
        body["tokens"]["postings"]["green"] = bad
        snapshot.write_text(json.dumps(body))
        again = RecordStore(GitFileStore.open(repo).sync, "alice")
        assert sorted(r.text for r in again.search("green")) == want
    body["tokens"] = {"ids": "not a list"}
    snapshot.write_text(json.dumps(body))
    assert sorted(r.text for r in RecordStore(GitFileStore.open(repo).sync, "alice").search("green")) == want
    assert_fsck_clean(repo)



def test_a_fifo_planted_as_a_pack_index_is_refused_before_anything_lists_the_pack_folder(tmp_path: Path) -> None:
    """The pack folder is checked where it is listed, not at every read: a reader whose handle is open and
    must list the folder again to find another process's commit, a handle that opens, a write and a git
    process all refuse a FIFO planted as ``pack-*.idx`` with ``unavailable`` naming it, instead of blocking."""
    repo, store = _store(tmp_path)
    planted = str(repo / "objects" / "pack" / ("pack-" + "ab" * 20))
    done = _in_child(
        "import os\n"
        "from gitmem import GitFileStore, MemoryStoreError\n"
        "reader = GitFileStore.open(REPO).sync\n"
        "reader.repo.written.enabled = False\n"  # no copy of the new pack: libgit2 must list the folder
        "print(reader.read('a.md').text.strip())\n"
        "GitFileStore.open(REPO).sync.write('b.md', 'two\\n', expected=None)\n"  # another handle's new pack
        f"open({planted + '.pack'!r}, 'wb').close()\n"
        f"os.mkfifo({planted + '.idx'!r})\n"
        "calls = [lambda: reader.read('b.md'), lambda: reader.log('b.md'), lambda: GitFileStore.open(REPO).sync.list(),\n"
        "         lambda: GitFileStore.open(REPO).sync.write('c.md', 'x', expected=None)]\n"
        "for call in calls:\n"
        "    try:\n"
        "        print(call())\n"
        "    except MemoryStoreError as exc:\n"
        "        print(exc.code, 'pack-abab' in str(exc))\n",
        repo,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["one"] + ["unavailable True"] * 4, done.stdout
    from gitmem.git import cli

    with pytest.raises(MemoryStoreError) as refused:
        cli.run_git(["count-objects"], git_dir=str(repo))
    assert refused.value.code == "unavailable"
    os.unlink(planted + ".idx")
    os.unlink(planted + ".pack")
    assert store.sync.read("b.md").text == "two\n"
    assert_fsck_clean(repo)
