"""The semantic index's files are input from whoever can write the mount's folder.

The refresh log, its lock, the SQLite index (and its ``-wal``), LanceDB's side
table and lock, and the folders that hold them are derived state under the
mount. A planted FIFO must not hang ``health`` or ``refresh``; a planted link
must not make a refresh write its tables into a database (or an empty file)
outside the mount; and an index that cannot be read, or holds damaged vectors,
is reported by health as ``damaged`` with the reason, never ``ready``. Calls
that could hang run in a child process with a time-out.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.durable import DurableRepository
from gitmem.errors import MemoryStoreError

from .support import NS, activate, change, fsck
from .test_semantic_refresh import repo_with, seed, semantic_for

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
sys.path.insert(0, {tests!r})
from durable.test_semantic_refresh import semantic_for
from durable.support import NS
from gitmem.durable import DurableRepository
from gitmem.errors import MemoryStoreError
repo = DurableRepository.open({root!r}, "team", semantic_recall=semantic_for({kind!r}))
out = {{}}
for name, call in (("refresh", lambda: repo.refresh_semantic_recall(NS).outcome), ("health", lambda: repo.semantic_health(NS).state)):
    try:
        out[name] = call()
    except MemoryStoreError as exc:
        out[name] = exc.code + ": " + exc.message
print(json.dumps(out))
"""


def in_child(root: Path, kind: str = "sqlite") -> dict[str, str]:
    """Refresh and health in a fresh process: a hang fails the test (time-out), not the suite."""
    code = CHILD.format(tests=str(ROOT / "tests"), root=str(root), kind=kind)
    # A hang never ends; 60 s was exceeded by a healthy child (lancedb's import and a refresh,
    # ~3 s of CPU) on a 2-core machine at load 10+, so the bound leaves room for a loaded CI.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, str] = json.loads(done.stdout)
    return result


def semantic_folder(tmp_path: Path) -> Path:
    return tmp_path / "root" / "team.git" / "gitmem" / "derived" / "semantic"


def published(tmp_path: Path, kind: str = "sqlite") -> tuple[DurableRepository, Path]:
    repo = repo_with(tmp_path, kind=kind)
    seed(repo)
    assert repo.refresh_semantic_recall(NS).outcome == "published"
    repo.semantic_recall.index.close()  # type: ignore[union-attr]
    return repo, semantic_folder(tmp_path)


@pytest.mark.parametrize("which", ["log", "lock"])
def test_a_fifo_as_the_refresh_log_or_its_lock_hangs_neither_health_nor_refresh(tmp_path: Path, which: str) -> None:
    _, folder = published(tmp_path)
    (log,) = folder.glob("refresh-*.json")
    target = log if which == "log" else Path(str(log) + ".lock")
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    got = in_child(tmp_path / "root")
    assert got == {"refresh": "unchanged", "health": "ready"}
    if which == "log":  # the log is derived: the next record replaces the FIFO with a file
        assert log.is_file() and json.loads(log.read_text())["last_outcome"] == "unchanged"
    fsck(tmp_path / "root" / "team.git")


def outside_database(tmp_path: Path) -> tuple[Path, bytes]:
    victim = tmp_path / "outside" / "theirs.sqlite3"
    victim.parent.mkdir()
    db = sqlite3.connect(victim)
    db.execute("CREATE TABLE precious (x TEXT)")
    db.execute("INSERT INTO precious VALUES ('keep me')")
    db.commit()
    db.close()
    return victim, victim.read_bytes()


def test_a_linked_index_never_gets_tables_or_a_journal_mode_written_into_another_database(tmp_path: Path) -> None:
    _, folder = published(tmp_path)
    victim, before = outside_database(tmp_path)
    for name in ("vectors.sqlite3", "vectors.sqlite3-wal", "vectors.sqlite3-shm"):
        (folder / name).unlink(missing_ok=True)
    (folder / "vectors.sqlite3").symlink_to(victim)
    got = in_child(tmp_path / "root")
    assert got["refresh"].startswith("unavailable: ") and "symbolic link" in got["refresh"]
    assert got["health"] == "damaged"
    assert victim.read_bytes() == before  # no tables, no journal-mode switch
    assert sorted(p.name for p in victim.parent.iterdir()) == ["theirs.sqlite3"]  # no -wal, no -shm beside it
    (folder / "vectors.sqlite3").unlink()
    assert in_child(tmp_path / "root") == {"refresh": "published", "health": "ready"}  # rebuilt once it is gone
    fsck(tmp_path / "root" / "team.git")


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_a_linked_write_ahead_log_is_refused(tmp_path: Path, suffix: str) -> None:
    _, folder = published(tmp_path)
    victim = tmp_path / "outside.bin"
    victim.write_bytes(b"")
    (folder / ("vectors.sqlite3" + suffix)).unlink(missing_ok=True)
    (folder / ("vectors.sqlite3" + suffix)).symlink_to(victim)
    got = in_child(tmp_path / "root")
    assert got["refresh"].startswith("unavailable: ") and got["health"] == "damaged"
    assert victim.read_bytes() == b""


def test_a_link_to_an_empty_file_gets_no_database_written_into_it(tmp_path: Path) -> None:
    victim = tmp_path / "empty.txt"
    victim.write_bytes(b"")
    folder = semantic_folder(tmp_path)
    repo = repo_with(tmp_path)
    seed(repo)
    folder.mkdir(parents=True)
    (folder / "vectors.sqlite3").symlink_to(victim)
    with pytest.raises(MemoryStoreError) as refused:
        repo.refresh_semantic_recall(NS)
    assert refused.value.code == "unavailable" and "symbolic link" in refused.value.message
    assert victim.read_bytes() == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["empty.txt", "root"]
    health = repo.semantic_health(NS)
    assert health.state == "damaged" and health.problem is not None and "symbolic link" in health.problem


def test_a_linked_derived_folder_is_not_followed(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    seed(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    derived = tmp_path / "root" / "team.git" / "gitmem" / "derived"
    if derived.exists():
        os.rename(derived, tmp_path / "old-derived")
    derived.symlink_to(elsewhere)
    fresh = DurableRepository.open(tmp_path / "root", "team", semantic_recall=semantic_for("sqlite"))
    with pytest.raises(MemoryStoreError) as refused:
        fresh.refresh_semantic_recall(NS)
    assert refused.value.code == "unavailable"
    assert list(elsewhere.iterdir()) == []  # neither an index nor a refresh log out there
    assert fresh.semantic_health(NS).state == "damaged"
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("plant", ["garbage", "deep_json", "sparse", "fifo"])
def test_an_index_that_is_not_a_database_is_damaged_not_ready(tmp_path: Path, plant: str) -> None:
    _, folder = published(tmp_path)
    index = folder / "vectors.sqlite3"
    for name in ("vectors.sqlite3", "vectors.sqlite3-wal", "vectors.sqlite3-shm"):
        (folder / name).unlink(missing_ok=True)
    if plant == "garbage":
        index.write_bytes(os.urandom(8192))
    elif plant == "deep_json":
        index.write_text("[" * 30_000 + "]" * 30_000)
    elif plant == "sparse":
        with index.open("wb") as out:
            out.truncate(100 << 20)
    else:
        os.mkfifo(index)
    got = in_child(tmp_path / "root")
    assert got["refresh"].startswith("unavailable: ") and got["health"] == "damaged"


def test_health_names_damaged_vectors_and_pages(tmp_path: Path) -> None:
    repo, folder = published(tmp_path)
    assert repo.semantic_health(NS).state == "ready"
    db = sqlite3.connect(folder / "vectors.sqlite3")
    db.execute("UPDATE vectors SET vector = x'0000' WHERE node_id = 'a'")  # a short vector: queries cannot load it
    db.commit()
    db.close()
    health = repo.semantic_health(NS)
    assert health.state == "damaged" and health.problem is not None and "not 3-dimensional" in health.problem
    assert health.as_dict()["problem"] == health.problem
    repo.semantic_recall.index.close()  # type: ignore[union-attr]
    data = bytearray((folder / "vectors.sqlite3").read_bytes())
    for name in ("vectors.sqlite3-wal", "vectors.sqlite3-shm"):
        (folder / name).unlink(missing_ok=True)
    page = 4096
    assert len(data) >= 3 * page
    data[2 * page : 3 * page] = os.urandom(page)  # a table's page, the header intact
    (folder / "vectors.sqlite3").write_bytes(bytes(data))
    health = DurableRepository.open(tmp_path / "root", "team").semantic_health(NS)
    assert health.state == "damaged" and health.problem


def test_a_refresh_log_with_wrong_types_is_dropped_not_raised(tmp_path: Path) -> None:
    repo, folder = published(tmp_path)
    (log,) = folder.glob("refresh-*.json")
    log.write_text(json.dumps({"failures": "many", "refreshes": True, "last_refresh_at": "now", "last_outcome": 7}))
    health = repo.semantic_health(NS)
    assert (health.state, health.failures, health.refreshes, health.last_outcome) == ("ready", 0, 0, None)
    for past in (10**400, 1e17):  # no float holds the first; the second is no date (the CLI showed it as one)
        log.write_text(json.dumps({"last_refresh_at": past, "last_outcome": "published"}))
        health = repo.semantic_health(NS)  # math.isfinite raised OverflowError out of the health call
        assert (health.state, health.last_refresh_at, health.last_outcome) == ("ready", None, "published")


def test_lance_side_table_and_lock_are_not_followed(tmp_path: Path) -> None:
    _, folder = published(tmp_path, "lance")
    victim, before = outside_database(tmp_path)
    side = folder / "lancedb" / "revisions.sqlite3"
    for name in ("revisions.sqlite3", "revisions.sqlite3-wal", "revisions.sqlite3-shm"):
        (folder / "lancedb" / name).unlink(missing_ok=True)
    side.symlink_to(victim)
    got = in_child(tmp_path / "root", "lance")
    assert got["refresh"].startswith("unavailable: ") and got["health"] == "damaged"
    assert victim.read_bytes() == before and sorted(p.name for p in victim.parent.iterdir()) == ["theirs.sqlite3"]


def test_a_fifo_as_the_lance_write_lock_never_blocks(tmp_path: Path) -> None:
    repo, folder = published(tmp_path, "lance")
    repo.apply(change("act", activate("c", 1)))  # the head moves on: a refresh has work to publish
    lock = folder / "lancedb" / "write.lock"
    lock.unlink(missing_ok=True)
    os.mkfifo(lock)
    got = in_child(tmp_path / "root", "lance")
    assert got["refresh"].startswith("unavailable: ") and "not a regular file" in got["refresh"]
    assert got["health"] == "failing"


@pytest.mark.parametrize("victim_bytes", [b"", b"precious\n"])
def test_a_linked_ledger_gets_no_database_written_through_it(tmp_path: Path, victim_bytes: bytes) -> None:
    """The admissions ledger is a SQLite file of the mount too: a link there is refused, an empty target stays empty."""
    from datetime import UTC, datetime

    from gitmem.durable.ledger import AccessEvent

    repo = repo_with(tmp_path)
    seed(repo)
    victim = tmp_path / "outside" / "ledger"
    victim.parent.mkdir()
    victim.write_bytes(victim_bytes)
    ledger = tmp_path / "root" / "team.git" / "gitmem" / "durable-ledger.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(str(ledger) + suffix).unlink(missing_ok=True)
    ledger.symlink_to(victim)
    fresh = DurableRepository.open(tmp_path / "root", "team")
    node = fresh.node(NS, "a")
    with pytest.raises(MemoryStoreError) as refused:
        fresh.record_admission(AccessEvent("e1", NS, "a", node.revision, datetime.now(UTC)))
    assert refused.value.code == "unavailable" and "symbolic link" in refused.value.message
    assert victim.read_bytes() == victim_bytes and [p.name for p in victim.parent.iterdir()] == ["ledger"]
