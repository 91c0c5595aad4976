"""The one opener's own promises: bounded JSON nesting, strict reads that name a planted file, SQLite without links.

Each planted thing (a FIFO, a link out of the folder, a huge or deep file) must end
in ``None``/a skip or a clear ``MemoryStoreError`` within a moment, never a hang,
a ``RecursionError`` or a write outside the folder.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.localfile import (
    JSON_DEPTH,
    RefusedFile,
    connect_local_sqlite,
    json_nesting_within,
    load_local_json,
    parse_json,
    read_local_head,
    read_local_strict,
    write_private,
)


def nested(levels: int, open_: str = "[", close: str = "]") -> str:
    return open_ * levels + close * levels


@pytest.mark.parametrize("levels", [1, 2, JSON_DEPTH])
def test_json_nested_up_to_the_limit_parses(levels: int) -> None:
    assert parse_json(nested(levels)) is not None
    assert parse_json('{"a": ' * (levels - 1) + "{}" + "}" * (levels - 1)) is not None


@pytest.mark.parametrize(
    "text",
    [
        nested(JSON_DEPTH + 1),
        nested(30_000),
        "[" * 30_000,  # never closed: the decoder would still recurse into each
        '{"a": ' * 30_000 + "1" + "}" * 30_000,
        "[{" * 51 + "}]" * 51,
        "[[],[[],[[]," * 40 + "]]" * 40 + "]" * 40,  # deep without a long run of openers
    ],
)
def test_deeper_json_is_invalid_file_at_once(text: str) -> None:
    started = time.monotonic()
    with pytest.raises(MemoryStoreError) as refused:
        parse_json(text, what="item.json")
    assert refused.value.code == "invalid_file" and "item.json" in refused.value.message
    assert time.monotonic() - started < 5.0  # a scan that is not linear takes minutes


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"note": "[" * 5000 + '\\"{' * 100, "list": [["]]]"]]})
    assert json_nesting_within(text, 3)
    assert parse_json(text)["list"] == [["]]]"]]


@pytest.mark.parametrize(
    "text",
    ["{not json", b"\xff\xfe[1]", "1" * 5000, "[1, 2", "", "  "],
)
def test_anything_else_that_is_not_json_is_invalid_file(text: str | bytes) -> None:
    with pytest.raises(MemoryStoreError) as refused:
        parse_json(text)
    assert refused.value.code == "invalid_file"


def test_a_size_limit_is_checked_before_parsing() -> None:
    with pytest.raises(MemoryStoreError) as refused:
        parse_json("[" + "1," * 100 + "1]", limit=50)
    assert refused.value.code == "invalid_file"
    assert parse_json("[1]", limit=50) == [1]


def test_lenient_reads_answer_missing_for_deep_json(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    path.write_text(nested(5000))
    assert load_local_json(path, 1 << 20) is None
    path.write_text('{"ok": [1]}')
    assert load_local_json(path, 1 << 20) == {"ok": [1]}


def plant(kind: str, path: Path, outside: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        outside.write_text('{"secret": "outside the mount"}')
        path.symlink_to(outside)
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge":
        with open(path, "wb") as out:
            out.truncate(100 << 20)  # sparse: 100 MB as far as a reader can tell


@pytest.mark.parametrize("kind", ["fifo", "link", "folder", "huge"])
def test_strict_reads_name_a_planted_file_without_blocking(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "record.json"
    plant(kind, path, tmp_path / "elsewhere.json")
    started = time.monotonic()
    with pytest.raises(RefusedFile) as refused:
        read_local_strict(path, 1 << 20)
    assert refused.value.code == "unavailable" and str(path) in refused.value.message
    assert load_local_json(path, 1 << 20) is None
    if kind != "huge":  # a prefix of a huge file is readable; nothing of the others is
        assert read_local_head(path, 10) is None
    assert time.monotonic() - started < 5.0  # a blocking open never returns


def test_strict_reads_tell_missing_from_refused(tmp_path: Path) -> None:
    assert read_local_strict(tmp_path / "none", 10) is None


# -- SQLite --------------------------------------------------------------------------------------------


def test_sqlite_opens_and_creates_a_regular_file(tmp_path: Path) -> None:
    db = connect_local_sqlite(tmp_path / "side.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    db.execute("INSERT INTO t VALUES (1)")
    db.close()
    again = connect_local_sqlite(tmp_path / "side.sqlite3")
    assert again.execute("SELECT x FROM t").fetchall() == [(1,)]
    again.close()


@pytest.mark.parametrize("kind", ["link-to-database", "link-to-empty", "dangling-link", "fifo", "folder"])
def test_sqlite_refuses_a_planted_database_and_writes_nothing_outside(tmp_path: Path, kind: str) -> None:
    mount = tmp_path / "mount.git" / "gitmem"
    mount.mkdir(parents=True)
    outside = tmp_path / "outside.sqlite3"
    path = mount / "vectors.sqlite3"
    if kind == "link-to-database":
        other = sqlite3.connect(outside)
        other.execute("CREATE TABLE mine (x)")
        other.commit()
        other.close()
        path.symlink_to(outside)
    elif kind == "link-to-empty":
        outside.touch()
        path.symlink_to(outside)
    elif kind == "dangling-link":
        path.symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    before = outside.read_bytes() if outside.exists() else None
    started = time.monotonic()
    with pytest.raises(RefusedFile) as refused:
        connect_local_sqlite(path, within=tmp_path / "mount.git")
    assert refused.value.code == "unavailable" and "vectors.sqlite3" in refused.value.message
    assert time.monotonic() - started < 5.0
    assert (outside.read_bytes() if outside.exists() else None) == before
    assert not any(p.name.startswith("outside.sqlite3-") for p in tmp_path.iterdir())


@pytest.mark.parametrize("companion", ["-wal", "-journal", "-shm"])
def test_sqlite_refuses_a_link_planted_as_its_journal(tmp_path: Path, companion: str) -> None:
    target = tmp_path / "elsewhere"
    target.touch()
    (tmp_path / f"db.sqlite3{companion}").symlink_to(target)
    with pytest.raises(RefusedFile):
        connect_local_sqlite(tmp_path / "db.sqlite3")
    assert target.read_bytes() == b""


def test_sqlite_refuses_a_linked_folder_on_its_way_within_the_mount(tmp_path: Path) -> None:
    mount = tmp_path / "mount.git"
    (mount / "gitmem").mkdir(parents=True)
    (tmp_path / "away").mkdir()
    (mount / "gitmem" / "semantic").symlink_to(tmp_path / "away")
    with pytest.raises(RefusedFile) as refused:
        connect_local_sqlite(mount / "gitmem" / "semantic" / "vectors.sqlite3", within=mount)
    assert "semantic" in refused.value.message
    assert list((tmp_path / "away").iterdir()) == []


def test_threads_opening_one_new_database_in_wal_mode_at_once_all_succeed(tmp_path: Path) -> None:
    """Switching a new database to WAL from several connections at once meets SQLite's deadlock
    avoidance ("database is locked" at once, no busy wait): the opener tries again (an agent's
    threads opening a fresh durable ledger together failed one turn on it)."""
    import threading

    for n in range(30):
        path = tmp_path / f"ledger{n}.sqlite3"
        barrier = threading.Barrier(8)
        modes: list[str] = []
        errors: list[BaseException] = []

        def open_it(
            path: Path = path,
            barrier: threading.Barrier = barrier,
            modes: list[str] = modes,
            errors: list[BaseException] = errors,
        ) -> None:
            barrier.wait()
            try:
                db = connect_local_sqlite(path, root=tmp_path, wal=True, timeout=30.0, isolation_level=None)
                try:
                    modes.append(db.execute("PRAGMA journal_mode").fetchone()[0])
                finally:
                    db.close()
            except BaseException as exc:  # recorded for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not errors and modes == ["wal"] * 8


def test_a_file_with_a_second_name_is_refused_before_anything_cuts_it(tmp_path: Path) -> None:
    """A state file planted as a hard link to someone's file: ``O_TRUNC`` at the open would empty that file."""
    theirs = tmp_path / "theirs.txt"
    theirs.write_text("not gitmem's to cut\n")
    planted = tmp_path / "state"
    os.link(theirs, planted)
    with pytest.raises(MemoryStoreError) as caught:
        write_private(planted, "gitmem's state\n")
    assert caught.value.code == "unavailable"
    assert theirs.read_text() == "not gitmem's to cut\n"
    single = tmp_path / "single"
    single.write_text("a longer old text\n")
    write_private(single, "new\n")  # a file of one name is still cut and rewritten
    assert single.read_text() == "new\n"
