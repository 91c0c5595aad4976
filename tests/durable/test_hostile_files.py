"""Durable memory meeting files it did not write: node and key files pushed by someone, planted local files.

A node file nested 30,000 deep is skipped by recall (the good nodes still
answer) and a clear ``invalid_file`` when read by id; a session binding record
or ledger that is a FIFO, a link out of the mount or deep JSON fails closed
(``forbidden``/``unavailable``) within a moment and writes nothing outside.
"""

from __future__ import annotations

import os
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gitmem.durable.binding import DurableBinding
from gitmem.durable.ledger import AccessEvent
from gitmem.durable.node import Evidence
from gitmem.durable.nodefile import key_path, node_path
from gitmem.durable.repository import DurableRepository
from gitmem.errors import MemoryStoreError

from .support import NS, change, create, fsck

DEEP = "[" * 30_000 + "]" * 30_000


@pytest.fixture
def repo(tmp_path: Path) -> DurableRepository:
    repo = DurableRepository.open(tmp_path, "durable", create=True)
    repo.apply(change("seed", create("tabs", "Indent Go code with tabs.")))
    repo.activate(NS, "tabs", 1, [Evidence("review://x", "sha256:1", "manual")])
    return repo


def mount(repo: DurableRepository) -> Path:
    return Path(repo.store.path)  # type: ignore[attr-defined]


def test_a_deep_node_file_is_skipped_by_recall_and_a_clear_error_by_id(repo: DurableRepository) -> None:
    good = repo.store.read(node_path(NS, "tabs")).text
    bad = "\n".join(f"labels: {DEEP}" if line.startswith("labels: ") else line for line in good.split("\n")).replace(
        "tabs", "spaces"
    )
    repo.store.write(node_path(NS, "spaces"), bad, expected=None)
    fresh = DurableRepository.open(mount(repo).parent, "durable")
    assert [hit.node.id for hit in fresh.recall(NS, "indent go code").hits] == ["tabs"]
    with pytest.raises(MemoryStoreError) as refused:
        fresh.get(NS, "spaces")
    assert refused.value.code == "invalid_file" and "spaces" in refused.value.message
    fsck(mount(repo))


def test_a_deep_idempotency_record_is_a_clear_error_not_a_crash(repo: DurableRepository) -> None:
    repo.store.write(key_path(NS, "turn-9"), DEEP, expected=None)
    head = repo.store.head()
    with pytest.raises(MemoryStoreError) as refused:
        repo.apply(change("turn-9", create("other", "Prefer rebase over merge.")))
    assert refused.value.code == "invalid_file"
    assert repo.store.head() == head


def bindings_folder(repo: DurableRepository) -> Path:
    return mount(repo) / "gitmem" / "durable-sessions"


def record_of(repo: DurableRepository, session_id: str) -> Path:
    import hashlib

    return bindings_folder(repo) / (hashlib.sha256(session_id.encode()).hexdigest()[:40] + ".json")


@pytest.mark.parametrize("kind", ["fifo", "link", "deep", "huge"])
def test_a_planted_binding_record_fails_closed_at_once(repo: DurableRepository, tmp_path: Path, kind: str) -> None:
    DurableBinding.for_session(repo, "s-1", NS)  # creates the folder
    path = record_of(repo, "s-2")
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        path.symlink_to(outside)
    elif kind == "deep":
        path.write_text(DEEP)
    else:
        with open(path, "wb") as out:
            out.truncate(100 << 20)
    started = time.monotonic()
    with pytest.raises(MemoryStoreError) as refused:
        DurableBinding.for_session(repo, "s-2", NS)
    assert refused.value.code == "forbidden"
    assert time.monotonic() - started < 5
    assert outside.read_text() == "{}"
    assert DurableBinding.for_session(repo, "s-1", NS) is not None  # the other session resumes as before


def test_a_planted_binding_lock_is_refused_not_followed(repo: DurableRepository, tmp_path: Path) -> None:
    DurableBinding.for_session(repo, "s-1", NS)
    outside = tmp_path / "outside.lock"
    Path(str(record_of(repo, "s-3")) + ".lock").symlink_to(outside)
    with pytest.raises(MemoryStoreError) as refused:
        DurableBinding.for_session(repo, "s-3", NS)
    assert refused.value.code == "unavailable" and not outside.exists()


@pytest.mark.parametrize("kind", ["link-to-database", "link-to-empty", "fifo"])
def test_a_planted_ledger_is_refused_and_nothing_outside_changes(tmp_path: Path, kind: str) -> None:
    repo = DurableRepository.open(tmp_path / "root", "durable", create=True)
    repo.apply(change("seed", create("n", "Prefer rebase over merge.")))
    repo.activate(NS, "n", 1, [Evidence("review://x", "sha256:1", "manual")])
    ledger = mount(repo) / "gitmem" / "durable-ledger.sqlite3"
    ledger.parent.mkdir(exist_ok=True)
    ledger.unlink(missing_ok=True)
    outside = tmp_path / "theirs.sqlite3"
    if kind == "link-to-database":
        db = sqlite3.connect(outside)
        db.execute("CREATE TABLE mine (x)")
        db.commit()
        db.close()
    elif kind == "link-to-empty":
        outside.touch()
    if kind == "fifo":
        os.mkfifo(ledger)
    else:
        ledger.symlink_to(outside)
    before = outside.read_bytes() if outside.exists() else None
    fresh = DurableRepository.open(tmp_path / "root", "durable")
    started = time.monotonic()
    with pytest.raises(MemoryStoreError) as refused:
        fresh.record_admission(AccessEvent("e1", NS, "n", 2, datetime.now(UTC) + timedelta(seconds=1)))
    assert refused.value.code == "unavailable" and "durable-ledger" in refused.value.message
    assert time.monotonic() - started < 5
    assert (outside.read_bytes() if outside.exists() else None) == before
    assert [hit.node.id for hit in fresh.recall(NS, "rebase").hits] == ["n"]  # the memory itself still answers


def test_recall_passes_over_a_damaged_related_node(tmp_path: Path) -> None:
    from gitmem.durable.recall import RecallPolicy

    from .support import MANUAL, TURN

    repo = DurableRepository.open(tmp_path, "durable", create=True)
    repo.apply(
        change(
            "seed",
            create(
                "spaces",
                "Python code is indented with four spaces.",
                status="active",
                evidence=[TURN, MANUAL],
                relations=[{"kind": "related_to", "target": "tabs"}],
            ),
            create(
                "tabs",
                "Indent Go code with tabs.",
                status="active",
                evidence=[TURN, MANUAL],
                relations=[{"kind": "related_to", "target": "spaces"}],
            ),
        )
    )
    policy = RecallPolicy(related_lookups=5)
    assert {hit.node.id for hit in repo.recall(NS, "indent go code", policy).hits} == {"tabs", "spaces"}
    path = node_path(NS, "spaces")
    good = repo.store.read(path).text
    bad = "\n".join(f"labels: {DEEP}" if line.startswith("labels: ") else line for line in good.split("\n"))
    repo.store.write(path, bad, expected=repo.store.read(path).version)
    fresh = DurableRepository.open(tmp_path, "durable")
    assert [hit.node.id for hit in fresh.recall(NS, "indent go code", policy).hits] == ["tabs"]
