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
    assert reader.catalogue.resumed_from_snapshot and len(reader) == 6
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
        # The erasure ledger's ref is left out: its patch is blob ids, where any digits can occur.
        done = subprocess.run(
            ["git", "-C", repo, "log", "--exclude=refs/gitmem/erasures", "--all", *args],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout

    messages = git_log("--format=%B")
    assert secret.id in messages and "vault" not in messages and "4417" not in messages
    assert "vault" in git_log("-p")  # the file's history holds it until forget
    memory.store.forget(entry.path)
    assert "vault" not in git_log("-p", "--format=%B") and "4417" not in git_log("-p", "--format=%B")
    ledger = subprocess.run(
        ["git", "-C", repo, "show", "refs/gitmem/erasures:entries.jsonl"], capture_output=True, text=True, check=True
    ).stdout
    assert "vault" not in ledger and entry.path not in ledger


def test_a_rebuild_reads_the_items_folder_in_one_walk_and_finds_what_reads_by_path_find(tmp_path: Path) -> None:
    """A git store's first load uses ``read_under`` (no read per path) and sees exactly what
    a store without it sees when each item is read on its own: items, merged ids, skipped files."""
    from gitmem.session.catalogue import Catalogue

    memory = open_session_memory(tmp_path / "m")
    first = memory.remember("a lesson worth keeping about tea and biscuits", tags=["keep"])
    memory.remember("A lesson worth keeping about TEA and biscuits")  # an exact duplicate: merged
    memory.remember("another lesson, about the nightly build", importance=0.9)
    hidden = memory.remember("an old lesson about the daily build, later replaced")
    memory.supersede(hidden.id, first.id)
    memory.store.write("items/zz/broken.json", "{not json", expected=None)
    memory.store.write("notes/elsewhere.md", "not an item\n", expected=None)
    store = memory.store

    class PathByPath:
        """The same store without ``read_under``: every item is read by path."""

        def __init__(self) -> None:
            self.reads = 0

        def changes(self, since: str | None) -> object:
            return store.changes(since)

        def list(self) -> object:
            return store.list()

        def read(self, path: str) -> object:
            self.reads += 1
            return store.read(path)

    reads: list[str] = []
    real_read = store.read

    def counting(path: str, rev: str | None = None) -> object:
        reads.append(path)
        return real_read(path, rev)

    store.read = counting  # type: ignore[method-assign]
    bulk = Catalogue(store)
    bulk.refresh()
    assert reads == []  # one walk of items/, no read per path
    slow_store = PathByPath()
    slow = Catalogue(slow_store)  # type: ignore[arg-type]
    slow.refresh()
    assert slow_store.reads == 4
    assert sorted(bulk.entries(), key=lambda e: e.path) == sorted(slow.entries(), key=lambda e: e.path)
    assert len(bulk) == 3  # the broken file is skipped, not an item
    assert bulk.skipped == slow.skipped and set(bulk.skipped) == {"items/zz/broken.json"}
    assert bulk.find(first.id) == slow.find(first.id)
    for query in ("tea biscuits", "nightly build", "daily build replaced"):
        assert bulk.search(query, limit=5, min_score=0.0, ranking="coverage") == slow.search(
            query, limit=5, min_score=0.0, ranking="coverage"
        )
    replaced = bulk.search("daily build replaced", limit=5, min_score=0.0, ranking="coverage")
    assert hidden.id not in {h.id for h in replaced}


def _row_spoilt(index: int, value: object) -> object:
    """Set field ``index`` of the first snapshot row (0 path, 1 version, 2 id, 3 content, 4 timestamp, ...)."""

    def spoil(p: Path) -> None:
        body = json.loads(p.read_text())
        body["items"][0][index] = value
        p.write_text(json.dumps(body))

    return spoil


@pytest.mark.parametrize(
    "spoil",
    [
        _row_spoilt(0, "notes/not-an-item.md"),
        _row_spoilt(2, "has spaces and / slashes"),
        _row_spoilt(3, 42),
        _row_spoilt(4, "2024-01-01T00:00:00Z"),
        _row_spoilt(4, float("inf")),
        _row_spoilt(4, 10**400),  # no float holds it: OverflowError went out of the first call
        _row_spoilt(4, 1e300),  # finite, but no date: every answer naming the item failed
        _row_spoilt(4, 253402300800.0),  # the first second of the year 10000
        _row_spoilt(4, 1e18),
        _row_spoilt(5, 7.5),
        _row_spoilt(6, ["ok", 3]),
        _row_spoilt(7, "dream"),
        _row_spoilt(8, ["not", "a", "mapping"]),
        lambda p: p.write_text(
            json.dumps({**json.loads(p.read_text()), "items": [json.loads(p.read_text())["items"][0]] * 2})
        ),
        lambda p: p.write_text(
            json.dumps({**json.loads(p.read_text()), "items": [json.loads(p.read_text())["items"][0][:-1]]})
        ),
    ],
)
def test_a_snapshot_row_that_fails_an_item_check_means_a_rebuild(folder: Path, spoil: object) -> None:
    spoil(snapshot_of(folder))  # type: ignore[operator]
    memory = open_session_memory(folder)
    assert len(memory) == 5 and not memory.catalogue.resumed_from_snapshot
    assert {i.content for i in memory.items()} == {f"a lesson worth keeping, number {n}" for n in range(5)}


def test_a_resumed_catalogue_holds_what_the_files_hold_and_still_merges_duplicates(tmp_path: Path) -> None:
    """The snapshot keeps decoded fields, not file texts: a resume must equal a decode of every file,
    and the fingerprint lookup (made on first use after a resume) must still find an exact duplicate."""
    from gitmem.session.items import decode_item

    memory = open_session_memory(tmp_path / "m")
    kept = memory.remember(
        "the deploy key lives in the team vault, ask ops", tags=["Ops", "deploy"], importance=0.3,
        memory_type="procedural", metadata={"source": {"ticket": 12, "seen": [1.5, None, True]}},
    )  # fmt: skip
    old = memory.remember("the nightly build runs at two in the morning")
    memory.supersede(old.id, memory.remember("the nightly build runs at three in the morning").id)
    memory.remember("ok")  # too short for a fingerprint: stored under its id
    assert len(memory) == 4
    resumed = open_session_memory(tmp_path / "m")
    resumed.refresh()
    assert resumed.catalogue.resumed_from_snapshot
    for entry in resumed.catalogue.entries():
        assert entry.item == decode_item(resumed.store.read(entry.path).text)
    assert [h.item.id for h in resumed.recall_similar("nightly build", 5)] != [old.id]
    assert old.id not in {h.item.id for h in resumed.recall_similar("nightly build", 5)}
    again = resumed.remember("The deploy key lives in the team VAULT, ask ops")
    assert again.id == kept.id and len(resumed) == 4


def test_a_resumed_catalogue_finds_a_duplicate_kept_at_a_path_of_its_own(tmp_path: Path) -> None:
    """Only the fingerprint lookup (not the path a fingerprint names) finds an item imported elsewhere."""
    from gitmem.session.items import encode_item, make_item

    memory = open_session_memory(tmp_path / "m")
    moved = make_item("the staging database is rebuilt every friday", now=1_700_000_000.0)
    memory.store.write("items/00/imported.json", encode_item(moved), expected=None)
    assert len(memory) == 1  # saves the snapshot
    resumed = open_session_memory(tmp_path / "m")
    resumed.refresh()
    assert resumed.catalogue.resumed_from_snapshot
    assert resumed.remember("The staging database is rebuilt every Friday").id == moved.id
    assert len(resumed) == 1 and resumed.catalogue.at("items/00/imported.json") is not None


WORDS = ["deploy", "key", "vault", "the", "team", "office", "build", "night", "tea", "green", "数据库", "迁移"]


def _many(tmp_path: Path) -> Path:
    import random

    rng = random.Random(7)
    memory = open_session_memory(tmp_path / "m")
    for n in range(60):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        memory.remember(f"note {n}: {words} {words.split()[0]}", importance=rng.choice([0.2, 0.5, 0.9]))
    assert len(memory) == 60  # saved the snapshot
    return tmp_path / "m"


def _answers(folder: Path) -> tuple[bool, list[list[tuple[str, float]]]]:
    memory = open_session_memory(folder)
    memory.refresh()
    out = []
    for query in ("the team office", "deploy key", "green tea night", "数据库", "vault the build key team", "note 3"):
        for ranking in ("coverage", "bm25", "fused"):
            hits = memory.catalogue.search(query, limit=50, min_score=0.0, ranking=ranking)  # type: ignore[arg-type]
            out.append([(h.id, h.score) for h in hits])
    return memory.catalogue._index.restored, out


def test_recall_answers_the_same_from_the_snapshot_and_without_it(tmp_path: Path) -> None:
    folder = _many(tmp_path)
    restored, from_snapshot = _answers(folder)
    assert restored  # the tokenised form was used, not the texts
    snapshot_of(folder).unlink()
    rebuilt, without = _answers(folder)
    assert not rebuilt and snapshot_of(folder).is_file()
    assert from_snapshot == without and any(from_snapshot)


@pytest.mark.parametrize(
    "spoil",
    [
        lambda body: body["recall"]["postings"].__setitem__("team", "0 0"),  # found bad only when decoded
        lambda body: body["recall"]["ids"].__setitem__(0, "mem-not-an-item"),  # does not fit the items
        lambda body: body["recall"]["lengths"].__setitem__(0, "7"),
        lambda body: body.__setitem__("recall", None),
    ],
)
def test_a_spoilt_tokenised_form_changes_no_answer(tmp_path: Path, spoil: object) -> None:
    folder = _many(tmp_path)
    _, want = _answers(folder)
    body = json.loads(snapshot_of(folder).read_text())
    spoil(body)  # type: ignore[operator]
    snapshot_of(folder).write_text(json.dumps(body))
    memory = open_session_memory(folder)
    memory.refresh()
    assert memory.catalogue.resumed_from_snapshot  # the items were still usable
    assert _answers(folder)[1] == want
