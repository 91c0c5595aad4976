"""Session memory (and record memory) meeting files they did not write: skipped with the reason, or a clear error.

An item file nested 30,000 deep, a record file whose id is a YAML alias bomb, a
FIFO planted as the statistics log or its lock: each ends in a skip the memory
lists or a clear ``MemoryStoreError`` within a moment, and every other item
still answers.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.memstore import InMemoryFileStore
from gitmem.records import RecordStore
from gitmem.records.rules import record_path
from gitmem.session.location import open_session_memory
from gitmem.session.stats import FileAccessStats

DEEP = "[" * 30_000 + "]" * 30_000
ITEM_DEEP = '{"schema": "x", "metadata": ' + DEEP + "}"


@pytest.mark.parametrize("text", [DEEP, ITEM_DEEP, '{"id": ' + "[" * 900 + "]" * 900 + "}"])
def test_a_deep_item_file_is_skipped_with_its_reason_and_recall_goes_on(tmp_path: Path, text: str) -> None:
    memory = open_session_memory(tmp_path / "m")
    kept = memory.remember("always run the linter before a commit", tags=["lesson"])
    memory.store.write("items/zz/deep.json", text, expected=None)
    fresh = open_session_memory(tmp_path / "m")
    assert [hit.item.id for hit in fresh.recall_similar("linter before a commit", 3)] == [kept.id]
    assert "items/zz/deep.json" in fresh.skipped and "JSON" in fresh.skipped["items/zz/deep.json"]
    assert [i.id for i in fresh.items()] == [kept.id]


def test_a_record_file_with_an_alias_bomb_for_an_id_is_a_clear_error_at_once() -> None:
    backend = InMemoryFileStore()
    store = RecordStore(backend, "alice")
    good = store.add("prefers green tea")
    bad = store.add("placeholder")
    levels = "".join(
        f"{c}: &{c} [" + ", ".join([f"*{p}"] * 9) + "]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x]\n" + levels + "id: *i\n---\nplaceholder\n"
    path = record_path("alice", bad.id)
    backend.write(path, bomb, expected=backend.read(path).version)
    started = time.monotonic()
    with pytest.raises(MemoryStoreError) as refused:
        RecordStore(backend, "alice").get(bad.id)
    assert refused.value.code == "unavailable" and "not text" in refused.value.message
    assert time.monotonic() - started < 5  # the expansion would take minutes
    assert RecordStore(backend, "alice").get(good.id).text == "prefers green tea"


@pytest.mark.parametrize("planted", ["log-fifo", "lock-fifo", "log-link", "lock-link"])
def test_a_planted_statistics_file_is_a_clear_error_not_a_hang(tmp_path: Path, planted: str) -> None:
    log = tmp_path / "session-stats"
    outside = tmp_path / "outside"
    outside.write_text("mine\n")
    target = log if planted.startswith("log") else tmp_path / "session-stats.lock"
    if planted.endswith("fifo"):
        os.mkfifo(target)
    else:
        target.symlink_to(outside)
    stats = FileAccessStats(log)
    started = time.monotonic()
    with pytest.raises(MemoryStoreError) as refused:
        stats.record(["a"], 1.0)
    assert refused.value.code == "unavailable" and "session-stats" in refused.value.message
    try:
        assert stats.snapshot() == {}  # no log yet: nothing to read, nothing locked
    except MemoryStoreError as error:
        assert error.code == "unavailable" and "session-stats" in error.message
    assert time.monotonic() - started < 5
    assert outside.read_text() == "mine\n"


def test_a_huge_statistics_log_is_refused_not_loaded(tmp_path: Path) -> None:
    log = tmp_path / "session-stats"
    with open(log, "wb") as out:
        out.truncate(100 << 20)
    with pytest.raises(MemoryStoreError) as refused:
        FileAccessStats(log).snapshot()
    assert refused.value.code == "unavailable"


@pytest.mark.parametrize("line", ["a {t} {id} $", "s {id} 3 {t} $"])
@pytest.mark.parametrize("moment", ["1e300", "253402300800.5", "-1e15"])
def test_a_statistics_line_with_a_time_no_date_holds_is_skipped(tmp_path: Path, line: str, moment: str) -> None:
    # The log's times were only required to be finite: 1e300 (or a second past the year 9999)
    # became the item's last_accessed, and every answer formatting it failed (recent, recall).
    import json
    import subprocess
    import sys

    memory = open_session_memory(tmp_path / "m")
    kept = memory.remember("always run the linter before a commit", tags=["lesson"])
    memory.recall_similar("linter", 3)  # one access, logged
    log = tmp_path / "m" / "session.git" / "gitmem" / "session-stats"
    with open(log, "a", encoding="utf-8") as out:
        out.write("\n" + line.format(t=moment, id=kept.id) + "\n")
    code = "from gitmem.adapters.cli import main; main()"
    for args in (["recent"], ["recall", "linter commit"], ["tags", "lesson"]):
        done = subprocess.run(
            [sys.executable, "-c", code, "session", *args, "--memory-dir", str(tmp_path / "m"), "--json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-1500:]
        found = json.loads(done.stdout)
        items = found.get("items") or found.get("results")
        assert items[0]["id"] == kept.id and items[0]["last_accessed"].startswith(("19", "20"))
