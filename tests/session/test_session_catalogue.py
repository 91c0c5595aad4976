"""The catalogue snapshot: a new process resumes from it and catches up; a bad one means a rebuild."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitmem.session.location import CATALOGUE_FILE, open_session_memory


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    memory = open_session_memory(tmp_path / "m")
    for n in range(5):
        memory.remember(f"a lesson worth keeping, number {n}", tags=["lesson"])
    memory.store.write("items/zz/broken.json", "{not json", expected=None)
    assert len(memory) == 5  # the first refresh rebuilds and saves the snapshot
    return tmp_path / "m"


def snapshot_of(folder: Path) -> Path:
    return folder / "session.git" / "gitmem" / "derived" / CATALOGUE_FILE


def test_a_new_handle_resumes_and_catches_up(folder: Path) -> None:
    assert snapshot_of(folder).is_file()
    writer = open_session_memory(folder)
    late = writer.remember("written after the snapshot was saved")
    reader = open_session_memory(folder)
    assert {i.content for i in reader.items()} >= {late.content, "a lesson worth keeping, number 0"}
    assert reader.catalogue.resumed and len(reader) == 6
    assert "items/zz/broken.json" in reader.skipped
    assert [r.item.id for r in reader.recall_similar("written after the snapshot", 1)] == [late.id]


@pytest.mark.parametrize(
    "spoil",
    [
        lambda p: p.write_text("{torn"),
        lambda p: p.write_text(json.dumps({"format": "other"})),
        lambda p: p.write_text(
            json.dumps({**json.loads(p.read_text()), "cursor": "0" * 40})  # a commit this memory never had
        ),
        lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "items": [[1, 2, 3]]})),
    ],
)
def test_a_spoilt_snapshot_means_a_rebuild(folder: Path, spoil: object) -> None:
    spoil(snapshot_of(folder))  # type: ignore[operator]
    memory = open_session_memory(folder)
    assert len(memory) == 5
    assert {i.content for i in memory.items()} == {f"a lesson worth keeping, number {n}" for n in range(5)}


def test_a_snapshot_from_before_a_purge_is_not_trusted(folder: Path) -> None:
    stale = snapshot_of(folder).read_text()
    open_session_memory(folder).store.purge()
    snapshot_of(folder).parent.mkdir(parents=True, exist_ok=True)
    snapshot_of(folder).write_text(stale)  # as if a session process saved it just before the purge
    memory = open_session_memory(folder)
    assert len(memory) == 0 and not memory.skipped


def test_purge_and_forget_delete_the_snapshot_it_holds_item_text(folder: Path) -> None:
    memory = open_session_memory(folder)
    memory.refresh()
    path = memory.catalogue.entries()[0].path
    memory.store.forget(path)
    assert not snapshot_of(folder).exists()
    assert len(open_session_memory(folder)) == 4
    assert snapshot_of(folder).exists()
    open_session_memory(folder).store.purge()
    assert not snapshot_of(folder).exists()


def test_forget_leaves_no_item_text_in_any_commit_message(tmp_path: Path) -> None:
    """forget keeps commit messages, so a message quoting an item would outlive its erasure."""
    memory = open_session_memory(tmp_path / "m")
    secret = memory.remember("the vault code is 4417 behind the blue painting", importance=0.4)
    memory.remember("the vault code is 4417 behind the blue painting", importance=0.9)  # merged: a second commit
    memory.refresh()
    entry = memory.catalogue.find(secret.id)
    assert entry is not None
    memory.delete(secret.id)
    repo = str(tmp_path / "m" / "session.git")

    def git_log(*args: str) -> str:
        return subprocess.run(["git", "-C", repo, "log", "--all", *args], capture_output=True, text=True, check=True).stdout

    messages = git_log("--format=%B")
    assert secret.id in messages and "vault" not in messages and "4417" not in messages
    assert "vault" in git_log("-p")  # the file's history holds it until forget
    memory.store.forget(entry.path)
    assert "vault" not in git_log("-p", "--format=%B") and "4417" not in git_log("-p", "--format=%B")
