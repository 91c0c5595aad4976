"""gitmem's own writers under a mount write into the folder they looked at, not one swapped in after.

The hooks log, a session's binding records, the semantic health log and the derived caches
(the quick listing) checked that no folder from the mount down was a link, then opened their
file by its path: a folder renamed away and replaced by a link between the two had the file
written wherever the link pointed. Each now opens its file through a descriptor of the folder
it checked, so a swap after the look changes nothing of what is written where.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest


def _swap_after_look(monkeypatch: pytest.MonkeyPatch, folder: Path, outside: Path) -> list[bool]:
    """Once ``folder`` has been looked at (stat'ed or opened, by path or by name in a parent), it is
    renamed away and a link to ``outside`` put in its place: what another writer of the mount can do."""
    swapped: list[bool] = []
    target = str(folder)
    busy: list[bool] = []

    def looked_at(path: Any, dir_fd: int | None) -> bool:
        if isinstance(path, (bytes, int)):
            return False
        name = os.fspath(path)
        if dir_fd is None:
            return os.path.abspath(name) == target
        return name == folder.name and os.path.realpath(f"/proc/self/fd/{dir_fd}") == str(folder.parent.resolve())

    def wrap(real: Callable[..., Any]) -> Callable[..., Any]:
        def hooked(path: Any, *args: Any, **kwargs: Any) -> Any:
            found = real(path, *args, **kwargs)
            if swapped or busy:
                return found
            busy.append(True)
            try:
                if looked_at(path, kwargs.get("dir_fd")) and not folder.is_symlink():
                    swapped.append(True)
                    os.rename(folder, folder.with_name(folder.name + ".old"))
                    os.symlink(outside, folder)
            finally:
                busy.clear()
            return found

        return hooked

    for name in ("lstat", "stat", "open"):
        monkeypatch.setattr(os, name, wrap(getattr(os, name)))
    return swapped


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    return outside


def test_the_hooks_log_is_not_written_through_a_folder_swapped_after_its_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.hooks import log_line

    repo = tmp_path / "m.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    outside = _outside(tmp_path)
    swapped = _swap_after_look(monkeypatch, repo / "gitmem", outside)
    log_line(str(repo), "post-receive: a line")
    assert swapped
    assert list(outside.iterdir()) == []


def test_a_session_binding_is_not_written_through_a_folder_swapped_after_its_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.errors import MemoryStoreError
    from gitmem.session.resume import SCHEMA, SessionBindings

    mount = tmp_path / "m.git"
    (mount / "gitmem" / "session-bindings").mkdir(parents=True)
    outside = _outside(tmp_path)
    records = SessionBindings.of_store(SimpleNamespace(path=str(mount)))
    swapped = _swap_after_look(monkeypatch, mount / "gitmem" / "session-bindings", outside)
    try:
        records.resume("s1", {"schema": SCHEMA, "durable": []})
    except MemoryStoreError as exc:
        assert exc.code == "unavailable"
    assert swapped
    assert list(outside.iterdir()) == []


def test_the_semantic_health_log_is_not_written_through_a_folder_swapped_after_its_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.durable.semantic import RefreshLog

    mount = tmp_path / "m.git"
    folder = mount / "gitmem" / "semantic"
    folder.mkdir(parents=True)
    outside = _outside(tmp_path)
    log = RefreshLog(str(folder), root=str(mount))
    swapped = _swap_after_look(monkeypatch, folder, outside)
    log.record("p", "published", None, 1.0)
    assert swapped
    assert list(outside.iterdir()) == []


def test_a_derived_cache_is_not_written_through_a_folder_swapped_after_its_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem import derived
    from gitmem.catchup import publish_json

    mount = tmp_path / "m.git"
    folder = mount / "gitmem" / "recall"
    folder.mkdir(parents=True)
    (mount / "gitmem" / "generation").write_text("g1\n")
    outside = _outside(tmp_path)
    seen = derived.Generation.read(str(mount / "gitmem" / "generation"))
    swapped = _swap_after_look(monkeypatch, folder, outside)
    publish_json(folder / "cache.json", {"a": 1}, seen)
    assert swapped
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("compacted", [False, True])
def test_the_access_statistics_are_not_written_through_a_folder_swapped_after_its_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compacted: bool
) -> None:
    """The append went through the folder checked; its lock file and the compaction it may end in went by path."""
    from gitmem.session.stats import FileAccessStats

    mount = tmp_path / "m.git"
    folder = mount / "gitmem" / "stats"
    folder.mkdir(parents=True)
    (mount / "gitmem" / "generation").write_text("g1\n")
    outside = _outside(tmp_path)
    stats = FileAccessStats(folder / "access.log", compact_bytes=1 if compacted else 1 << 20,
                            stamp=str(mount / "gitmem" / "generation"))  # fmt: skip
    swapped = _swap_after_look(monkeypatch, folder, outside)
    stats.record(["a", "b"], 1.0)
    assert swapped
    assert list(outside.iterdir()) == []


def test_a_compaction_folds_the_log_of_the_folder_it_writes_not_the_one_swapped_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compaction an append ends in wrote through the folder the append checked but read the log by its
    path: with that folder swapped for a link, it folded whatever log the link led to (none here) and
    replaced this memory's log with that, its counts lost."""
    from gitmem.session.stats import FileAccessStats

    mount = tmp_path / "m.git"
    folder = mount / "gitmem" / "stats"
    folder.mkdir(parents=True)
    (mount / "gitmem" / "generation").write_text("g1\n")
    stamp = str(mount / "gitmem" / "generation")
    FileAccessStats(folder / "access.log", stamp=stamp).record(["a"], 1.0)  # a count already in the log
    outside = _outside(tmp_path)
    stats = FileAccessStats(folder / "access.log", compact_bytes=1, stamp=stamp)
    swapped = _swap_after_look(monkeypatch, folder, outside)
    stats.record(["b"], 2.0)
    assert swapped
    monkeypatch.undo()
    kept = FileAccessStats(folder.with_name("stats.old") / "access.log", stamp=stamp)
    assert kept.snapshot() == {"a": (1, 1.0), "b": (1, 2.0)}


def test_a_listing_that_fails_to_save_is_not_removed_through_a_folder_swapped_after_its_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick listing written through the folder checked, but a failed write removed ``listing`` by its
    path: with the folder swapped for a link meanwhile, the file of that name wherever the link led."""
    from gitmem import derived, quickread

    repo = tmp_path / "m.git"
    folder = repo / "gitmem" / "derived"
    folder.mkdir(parents=True)
    (repo / "gitmem" / "generation").write_text("g1\n")
    outside = _outside(tmp_path)
    (outside / quickread.LISTING_FILE).write_text("someone else's file\n")
    seen = derived.Generation.read(str(repo / "gitmem" / "generation"))

    def full(*args: object, **kwargs: object) -> bool:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(quickread, "replace_file", full)
    swapped = _swap_after_look(monkeypatch, folder, outside)
    quickread._save(str(repo), "m", "0" * 40, [], seen)
    assert swapped
    assert (outside / quickread.LISTING_FILE).read_text() == "someone else's file\n"
