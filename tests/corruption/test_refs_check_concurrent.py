"""`control.check_refs_of` runs before every git process, while other writers move refs.

A writer (gitmem's loose-ref swap, git itself) creates ``<ref>.lock`` and renames it over the
ref: an entry listed a moment ago may be gone when it is looked at. That is no planted file, and
a git call (a pull, a push, a fold) must not fail on it, neither with a raw ``FileNotFoundError``
nor with ``unavailable``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from gitmem.git import control
from gitmem.git.cli import run_git
from gitmem.root import Root


def _mount(tmp_path: Path) -> Path:
    root = Root(tmp_path / "root")
    store = root.mount("user", create=True).sync
    store.write("a.md", "one\n", expected=None)
    return Path(root.existing_folder("user"))


def test_a_ref_lock_renamed_away_between_listing_and_look_is_no_error(tmp_path: Path, monkeypatch) -> None:
    repo = _mount(tmp_path)
    heads = repo / "refs" / "heads"
    lock = heads / "main.lock"
    lock.write_text((heads / "main").read_text())
    real = os.scandir

    def listed_then_renamed(path):  # the listing sees main.lock; the writer renames it over main right after
        with real(path) as found:
            entries = list(found)
        if os.fspath(path) == str(heads) and lock.exists():
            os.replace(lock, heads / "main")
        return iter(entries)

    monkeypatch.setattr(os, "scandir", listed_then_renamed)
    control.check_refs_of(str(repo))  # raised FileNotFoundError from the entry's stat


def test_git_runs_while_another_thread_swaps_a_ref(tmp_path: Path) -> None:
    repo = _mount(tmp_path)
    heads = repo / "refs" / "heads"
    for i in range(300):  # a mount with proposals: the listing takes a while
        (heads / f"p{i:03}").write_text((heads / "main").read_text())
    value = (heads / "main").read_text()
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            lock = heads / "main.lock"
            lock.write_text(value)
            os.replace(lock, heads / "main")

    swapper = threading.Thread(target=swap)
    swapper.start()
    failures: list[BaseException] = []
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                control.check_refs_of(str(repo))
            except BaseException as exc:
                failures.append(exc)
                break
    finally:
        stop.set()
        swapper.join()
    assert not failures, failures
    assert run_git(["rev-parse", "main"], git_dir=str(repo), check=True).stdout.strip() == value.strip()
    assert run_git(["fsck", "--strict"], git_dir=str(repo)).returncode == 0
