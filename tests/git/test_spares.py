"""The spare-file pool (``gitmem.git.spares``): a commit renames spares instead of creating files.

Behaviour, not timing: with a filled pool a write allocates no inode outside the
pool's folder, the pool shrinks by the three files a commit takes, and every way
the pool can be unusable (empty, no ``RENAME_NOREPLACE``, another file system, a
spare that is not empty) falls back to creating the file, never failing the write.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem import GitFileStore
from gitmem.git import spares


def _fsck(repo: Path) -> None:
    done = subprocess.run(
        ["git", "-C", str(repo), "fsck", "--strict", "--no-progress", "--no-dangling"], capture_output=True, text=True
    )
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Any]:
    repo = tmp_path / "m.git"
    made = GitFileStore.init(repo).sync
    made.write("a.md", "one\n", expected=None)
    made.repo.settle()
    yield made
    made.repo.settle()


def _created(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths opened with ``O_CREAT`` from now on (every inode a write allocates goes through ``os.open``)."""
    created: list[str] = []
    real = os.open

    def counting(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if flags & os.O_CREAT and "/gitmem/spare/" not in os.fspath(path):
            created.append(os.fspath(path))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", counting)
    return created


def _no_filler(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the background filler from topping the pool up while a test counts it."""
    monkeypatch.setattr(spares, "BACKGROUND", False)


def _full_pool(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's pool for ``path`` holds :data:`spares.HIGH` spares, and no filler runs from now on."""
    _no_filler(monkeypatch)
    assert spares.fill(path) == spares.HIGH  # after the thread's pass under way, if any


def test_a_write_with_spares_creates_no_file_and_takes_three(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = store.repo.path
    _full_pool(path, monkeypatch)
    created = _created(monkeypatch)
    store.write("b.md", "two\n", expected=None)
    assert [p for p in created if "objects" in p or "refs" in p] == []
    assert spares.available(path) == spares.HIGH - 3  # the .pack, the index and main.lock
    assert len(_spare_files(path)) == spares.HIGH - 3
    pack = Path(path) / "objects" / "pack"
    for name in os.listdir(pack):
        assert os.stat(pack / name).st_mode & 0o777 == 0o444 & ~_umask(), name  # as git makes packs
    assert not (Path(path) / "refs" / "heads" / "main.lock").exists()
    assert store.read("b.md").text == "two\n"
    _fsck(Path(path))
    assert "garbage: 0" in subprocess.run(
        ["git", "-C", path, "count-objects", "-v"], capture_output=True, text=True, check=True
    ).stdout


def _spare_files(path: str) -> list[str]:
    """The files in the pool's folder and its subfolders, relative to it."""
    folder = os.path.join(path, spares.SPARE_DIR)
    return [os.path.relpath(os.path.join(d, n), folder) for d, _, names in os.walk(folder) for n in names]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_without_spares_a_write_creates_its_files(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_filler(monkeypatch)
    monkeypatch.setattr(spares, "_pools", {})
    created = _created(monkeypatch)
    store.write("b.md", "two\n", expected=None)
    assert len([p for p in created if p.endswith(".pack")]) == 1
    assert len([p for p in created if "tmp_idx_" in p]) == 1
    assert len([p for p in created if p.endswith("main.lock")]) == 1
    assert store.read("b.md").text == "two\n"


def test_no_rename_noreplace_falls_back_for_the_exclusive_files(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = store.repo.path
    _full_pool(path, monkeypatch)
    monkeypatch.setattr(spares, "_RENAMEAT2", None)
    created = _created(monkeypatch)
    store.write("b.md", "two\n", expected=None)
    assert len([p for p in created if p.endswith("main.lock")]) == 1
    assert spares.available(path) == spares.HIGH  # every spare was given back
    assert store.read("b.md").text == "two\n"
    _fsck(Path(path))


def test_claim_is_exclusive_and_gives_the_spare_back(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = store.repo.path
    _full_pool(path, monkeypatch)
    taken = Path(path) / "taken"
    taken.write_text("someone else's\n")
    with pytest.raises(FileExistsError):
        spares.claim(path, str(taken), exclusive=True)
    assert taken.read_text() == "someone else's\n"
    assert spares.available(path) == spares.HIGH
    with pytest.raises(FileNotFoundError):  # the target's folder is missing
        spares.claim(path, os.path.join(path, "no", "such", "folder"), exclusive=True)
    assert spares.available(path) == spares.HIGH
    fd = spares.claim(path, os.path.join(path, "mine"), exclusive=True)
    assert fd is not None
    os.write(fd, b"x")
    os.close(fd)
    assert (Path(path) / "mine").read_bytes() == b"x"
    assert spares.available(path) == spares.HIGH - 1


def test_a_spare_that_is_not_empty_is_never_written_into(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = store.repo.path
    _full_pool(path, monkeypatch)
    folder = os.path.join(path, spares.SPARE_DIR)
    for n, spare in enumerate(sorted(_spare_files(path))):
        if n % 2:
            with open(os.path.join(folder, spare), "wb") as out:  # written: not a fresh spare
                out.write(b"data\n")
        else:
            os.link(os.path.join(folder, spare), os.path.join(path, f"other-name-{n}"))  # someone else's file
    assert spares.claim(path, os.path.join(path, "target"), exclusive=True) is None
    assert not os.path.exists(os.path.join(path, "target"))
    assert all(os.path.getsize(os.path.join(path, n)) == 0 for n in os.listdir(path) if n.startswith("other-name-"))
    store.write("b.md", "two\n", expected=None)  # the write creates its files instead
    assert store.read("b.md").text == "two\n"
    store.gc()  # removes the spare names that are not fresh spares; the other names stay
    for spare in _spare_files(path):
        st = os.stat(os.path.join(folder, spare))
        assert st.st_size == 0 and st.st_nlink == 1, spare
    assert len([n for n in os.listdir(path) if n.startswith("other-name-")]) == (spares.HIGH + 1) // 2
    _fsck(Path(path))


def test_another_file_system_falls_back(store: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(store.repo.path).st_dev:
        pytest.skip("needs a second file system")
    path = store.repo.path
    _full_pool(path, monkeypatch)
    target = shm / f"gitmem-spare-test-{os.getpid()}"
    try:
        assert spares.claim(path, str(target), exclusive=False) is None  # EXDEV
        assert spares.available(path) == spares.HIGH
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


def test_spares_of_other_processes_are_adopted_and_gc_trims(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = store.repo.path
    _full_pool(path, monkeypatch)
    folder = Path(path) / spares.SPARE_DIR
    (folder / "deadbeef00-1").mkdir()
    for n in range(5):
        (folder / "deadbeef00-1" / str(n)).touch()  # a dead process's pool
    before = set(_spare_files(path))
    script = "import sys; from gitmem.git import spares; spares.BACKGROUND = False; print(spares.fill(sys.argv[1], 3))"
    out = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, check=True).stdout
    after = set(_spare_files(path))
    assert int(out) == 3
    assert len(after) == len(before)  # three spares renamed to the new process's names, none created
    assert len(before - after) == 3
    (folder / "deadbeef01-1").mkdir()
    for n in range(3 * spares.KEEP):
        (folder / "deadbeef01-1" / str(n)).touch()
    (folder / "deadbeef02-1").mkdir()  # an emptied subfolder
    store.gc()
    assert len(_spare_files(path)) == spares.KEEP
    assert not (folder / "deadbeef02-1").exists()
    store.write("b.md", "two\n", expected=None)  # this process's pool may have lost spares: still writes
    _fsck(Path(path))


def test_spares_are_made_in_rotating_subfolders(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = store.repo.path
    _full_pool(path, monkeypatch)
    monkeypatch.setattr(spares, "ROTATE", 4)
    made: list[str] = []
    real_mkdir = os.mkdir

    def mkdir(folder: Any, *args: Any) -> None:
        made.append(os.fspath(folder))
        real_mkdir(folder, *args)

    monkeypatch.setattr(os, "mkdir", mkdir)
    for n in range(20):  # 60 spares taken, refilled in subfolders of 4
        store.write(f"n{n}.md", f"{n}\n", expected=None)
        spares.fill(path)
    assert len([m for m in made if os.path.dirname(m) == os.path.join(path, spares.SPARE_DIR)]) >= 60 // 4
    folder = Path(path) / spares.SPARE_DIR
    assert len(list(folder.iterdir())) <= spares.HIGH // 4 + 3  # emptied earlier subfolders are removed
    assert len(_spare_files(path)) == spares.HIGH
    _fsck(Path(path))


def test_a_forked_child_has_its_own_pool(store: Any) -> None:
    path = store.repo.path
    spares.fill(path, 6)
    pid = os.fork()
    if pid == 0:  # the child: the parent's pool and filler are not its own
        code = 1
        try:
            if spares.available(path) == 0:
                GitFileStore.open(path).sync.write("child.md", "from the child\n", expected=None)
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store.read("child.md").text == "from the child\n"
    store.write("parent.md", "from the parent\n", expected=None)  # stolen spares are skipped
    _fsck(Path(path))


def test_durable_commit_from_spares_syncs_before_each_step(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With durability on and a full pool: each file is synced after it left the pool and before it is published."""
    import threading

    from gitmem.git import repo as gitrepo

    path = store.repo.path
    _full_pool(path, monkeypatch)
    monkeypatch.setattr(gitrepo, "_durable", [True])
    events: list[tuple[str, str]] = []
    guard = threading.Lock()
    real_fsync, real_rename, real_claim_rename = os.fsync, os.rename, spares.rename_noreplace

    def fsync(fd: int) -> None:
        real_fsync(fd)
        with guard:
            events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))

    def rename(src: str, dst: str) -> None:
        with guard:
            events.append(("rename", os.fspath(dst)))
        real_rename(src, dst)

    def claim_rename(src: str, dst: str) -> None:
        real_claim_rename(src, dst)
        with guard:
            events.append(("claim", dst))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(spares, "rename_noreplace", claim_rename)
    store.write("a/b.md", "durable\n", expected=None)
    monkeypatch.undo()
    kinds = [(kind, os.path.basename(p)) for kind, p in events]
    claimed = {name: i for i, (k, name) in enumerate(kinds) if k == "claim"}
    assert len(claimed) == 3 and "main.lock" in claimed, kinds  # the pack, the temp index, the ref lock
    pack = next(n for n in claimed if n.endswith(".pack"))
    tmp_idx = next(n for n in claimed if n.startswith("tmp_idx_"))
    synced = {name: i for i, (k, name) in enumerate(kinds) if k == "fsync"}
    idx_renamed = next(i for i, (k, name) in enumerate(kinds) if k == "rename" and name.endswith(".idx"))
    pack_dir = next(i for i, (k, p) in enumerate(events) if k == "fsync" and p.endswith("objects/pack"))
    ref_renamed = next(i for i, (k, name) in enumerate(kinds) if k == "rename" and name == "main")
    ref_dir = next(i for i, (k, p) in enumerate(events) if k == "fsync" and p.endswith("refs/heads"))
    assert claimed[pack] < synced[pack] < idx_renamed and claimed[tmp_idx] < synced[tmp_idx] < idx_renamed
    assert idx_renamed < pack_dir < claimed["main.lock"] < synced["main.lock"] < ref_renamed < ref_dir
    assert store.read("a/b.md").text == "durable\n"
