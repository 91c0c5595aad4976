"""Times read from files and change sets someone else wrote, at the edges of what a date can be.

``9999-12-31T23:59:59-14:00`` is a valid ISO-8601 time whose UTC is in the year 10000,
and ``0001-01-01T00:00:00+14:00`` one whose UTC is before the year 1: Python's ``datetime``
parses both and then fails (``OverflowError``, or ``ValueError`` formatting the year) when
the time is turned into UTC or printed. Each kind that reads a time from outside holds it to
one rule (:func:`gitmem.recall.values.utc_time`): a change set naming one is refused with its
spec code and writes nothing; a file holding one is skipped like any damaged file, and the
rest still answers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.memstore import InMemoryFileStore
from gitmem.records import RecordStore
from gitmem.records.rules import record_path
from gitmem.session.location import open_session_memory

EDGES = ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59.9999999Z"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = "from gitmem.adapters.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, "--root", str(root), *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("moment", EDGES)
def test_a_change_set_with_a_time_past_the_dates_is_refused_and_writes_nothing(tmp_path: Path, moment: str) -> None:
    from gitmem.durable.repository import DurableRepository

    root = tmp_path / "root"
    DurableRepository.open(root, "rules", create=True)
    before = git(root / "rules.git", "rev-parse", "main")
    evidence = {"uri": "turn://43", "digest": "sha256:77aa", "kind": "session_turn", "occurred_at": moment}
    node = {"id": "style", "kind": "procedural", "content": "Use the imperative mood.", "evidence": [evidence]}
    change = {
        "namespace": {"tenant": "acme", "principal": "alice", "scope": "api"},
        "idempotency_key": "k1",
        "operations": [{"op": "create", "node": node}],
    }
    (tmp_path / "change.json").write_text(json.dumps(change))
    done = run_cli(root, "durable", "apply", "rules", str(tmp_path / "change.json"), "--principal", "alice", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1 and json.loads(done.stdout)["error"] == "invalid_change_set", done.stdout
    assert git(root / "rules.git", "rev-parse", "main") == before
    node["created_at"], evidence["occurred_at"] = moment, "2026-01-01T00:00:00Z"
    (tmp_path / "change.json").write_text(json.dumps(change))
    done = run_cli(root, "durable", "apply", "rules", str(tmp_path / "change.json"), "--principal", "alice", "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["error"] == "invalid_change_set", done.stdout
    assert git(root / "rules.git", "rev-parse", "main") == before
    subprocess.run(["git", "-C", str(root / "rules.git"), "fsck", "--strict"], check=True, capture_output=True)


@pytest.mark.parametrize("moment", EDGES)
def test_a_pushed_item_with_a_time_past_the_dates_is_skipped_and_the_rest_answers(tmp_path: Path, moment: str) -> None:
    memory = open_session_memory(tmp_path / "m")
    kept = memory.remember("always run the linter before a commit", tags=["lesson"])
    other = memory.remember("the release needs the provider base url set", tags=["lesson"])
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "m" / "session.git"), str(clone)], check=True)
    path = next(p for p in git(clone, "ls-files", "items").splitlines() if other.id in (clone / p).read_text())
    record = json.loads((clone / path).read_text())
    record["timestamp"] = moment
    (clone / path).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    git(clone, "-c", "user.name=mallory", "-c", "user.email=m@x", "commit", "-qam", "a time past the dates")
    git(clone, "push", "-q", "origin", "HEAD:main")
    done = run_cli(tmp_path / "m", "session", "recent", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    fresh = open_session_memory(tmp_path / "m")
    assert [hit.item.id for hit in fresh.recall_similar("linter before a commit", 3)] == [kept.id]
    assert [item.id for item in fresh.recent(5)] == [kept.id]
    assert path in fresh.skipped


@pytest.mark.parametrize("moment", EDGES)
def test_a_record_file_with_a_time_past_the_dates_reads_as_a_damaged_file(moment: str) -> None:
    backend = InMemoryFileStore()
    store = RecordStore(backend, "alice")
    good = store.add("prefers green tea")
    bad = store.add("works at the Berlin office")
    path = record_path("alice", bad.id)
    text = backend.read(path).text
    head, _, rest = text.partition("\nupdated: ")
    backend.write(path, f'{head}\nupdated: "{moment}"\n' + rest.split("\n", 1)[1], expected=backend.read(path).version)
    fresh = RecordStore(backend, "alice")
    try:
        got = fresh.get(bad.id)
    except MemoryStoreError:
        pass
    else:  # read as a record whose change time it does not know: a time a date can hold
        assert got.updated_at.year <= 9999
    assert [r.id for r in fresh.search("green tea")][:1] == [good.id]
    fresh.update(good.id, "prefers oolong tea")
    assert fresh.get(good.id).text == "prefers oolong tea"

