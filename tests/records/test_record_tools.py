"""The memory_record_* tools and the <memory-recall> blocks, over both stores."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.records import MemoryRecord, RecordPage, RecordStore
from gitmem.tools.recall_blocks import RECALL_INPUT_CHARS, render_block
from gitmem.tools.records import RecordMemoryCapability, RecordMemoryLimits, RecordMount


def cap(backend: Any, access: str = "write", **kwargs: Any) -> RecordMemoryCapability:
    return RecordMemoryCapability([RecordMount("facts", RecordStore(backend, "alice"), access)], **kwargs)  # type: ignore[arg-type]


def call(capability: RecordMemoryCapability, tool: str, **args: Any) -> dict[str, Any]:
    return capability.call(tool, {"memory": "facts", **args}, tool_call_id="call-1")


def test_add_search_list_update_delete_through_the_tools(backend: Any) -> None:
    memory = cap(backend)
    added = call(memory, "memory_record_add", text="prefers green tea")["record"]
    assert added["text"] == "prefers green tea" and added["updated_at"].endswith("Z")
    found = call(memory, "memory_record_search", query="what tea?")["records"]
    assert [r["id"] for r in found] == [added["id"]] and found[0]["score"] > 0
    listed = call(memory, "memory.record.list")
    assert [r["id"] for r in listed["records"]] == [added["id"]] and listed["next_cursor"] is None
    updated = call(memory, "memory_record_update", id=added["id"], text="prefers oolong tea")["record"]
    assert updated["text"] == "prefers oolong tea"
    assert call(memory, "memory_record_delete", id=added["id"]) == {"deleted": added["id"]}
    assert call(memory, "memory_record_search", query="oolong tea")["records"] == []
    json.dumps(listed)  # every answer is JSON-ready


def test_limits_of_search_and_list(backend: Any) -> None:
    memory = cap(backend)
    for i in range(25):
        call(memory, "memory_record_add", text=f"tea fact {i}")
    assert len(call(memory, "memory_record_search", query="tea fact")["records"]) == 5
    assert len(call(memory, "memory_record_search", query="tea fact", limit=20)["records"]) == 20
    assert len(call(memory, "memory_record_list")["records"]) == 20
    for bad in (0, 21):
        assert call(memory, "memory_record_search", query="tea", limit=bad)["error"] == "invalid_arguments"
    for bad in (0, 101):
        assert call(memory, "memory_record_list", limit=bad)["error"] == "invalid_arguments"
    page = call(memory, "memory_record_list", limit=100)
    assert len(page["records"]) == 25 and page["next_cursor"] is None
    assert call(memory, "memory_record_list", cursor="nope")["error"] == "invalid_cursor"


def test_failures_are_json_with_a_code_and_a_message(backend: Any) -> None:
    memory = cap(backend)
    for tool, args, code in [
        ("memory_record_add", {"text": ""}, "invalid_text"),
        ("memory_record_add", {"text": "x" * 8001}, "invalid_text"),
        ("memory_record_add", {"text": "key sk-abcdefghijklmnopqrstuvwxyz123456"}, "invalid_text"),
        ("memory_record_add", {}, "invalid_arguments"),
        ("memory_record_update", {"id": "01JDQ6Z5V6R7XKQ3M8T2B4N9CW", "text": "x"}, "record_not_found"),
        ("memory_record_delete", {"id": "../other/record"}, "record_not_found"),
        ("memory_record_search", {"query": ""}, "invalid_arguments"),
        ("memory_record_search", {"query": "tea", "extra": 1}, "invalid_arguments"),
        ("memory_record_add", {"text": 5}, "invalid_arguments"),
    ]:
        answer = call(memory, tool, **args)
        assert answer["error"] == code, (tool, args, answer)
        assert set(answer) == {"error", "message", "current"} and answer["message"] and answer["current"] is None
    unknown = memory.call("memory_record_list", {"memory": "nope"})
    assert unknown["error"] == "unknown_memory"
    assert memory.call("memory_file_view", {"memory": "facts"})["error"] == "forbidden"
    assert backend.list() == []  # nothing was written by any of them


def test_the_record_limit_of_the_capability_applies(backend: Any) -> None:
    memory = cap(backend, limits=RecordMemoryLimits(record_chars=10))
    assert call(memory, "memory_record_add", text="x" * 11)["error"] == "invalid_text"
    assert "record" in call(memory, "memory_record_add", text="x" * 10)


def test_a_read_mount_offers_search_and_list_only(backend: Any) -> None:
    memory = cap(backend, access="read")
    history = ["memory_record_history"] if callable(getattr(backend, "log", None)) else []
    assert [d.name for d in memory.offered()] == ["memory_record_search", "memory_record_list", *history]
    assert call(memory, "memory_record_add", text="x")["error"] == "forbidden"
    assert "read only" in memory.instructions


def test_tools_narrow_every_mount(backend: Any) -> None:
    memory = cap(backend, tools=("search", "add"))
    definitions = memory.offered()
    assert [d.permission for d in definitions] == ["memory.record.search", "memory.record.add"]
    assert definitions[0].input_schema["properties"]["memory"]["enum"] == ["facts"]
    assert definitions[0].input_schema["properties"]["limit"]["maximum"] == 20
    assert call(memory, "memory_record_delete", id="x")["error"] == "forbidden"
    with pytest.raises(ValueError):
        cap(backend, tools=("search", "purge"))


def test_a_file_mount_is_refused_by_the_record_tools(tmp_path: Any) -> None:
    from gitmem import Root

    files = Root(tmp_path).mount("notes", create=True)
    head = files.sync.head()
    # Refused where the record store is opened, so neither tools nor plain Python reach the files.
    with pytest.raises(MemoryStoreError) as caught:
        RecordStore(files.sync, "alice")
    assert caught.value.code == "wrong_kind" and "file memory" in caught.value.message

    # The tools keep their own check for a record store whose backend changed under it.
    records = RecordStore(Root(tmp_path).mount("facts", create=True, kind="record").sync, "alice")
    records.store = files.sync
    memory = RecordMemoryCapability([RecordMount("facts", records)])
    answer = memory.call("memory_record_list", {"memory": "facts"})
    assert answer["error"] == "wrong_kind"
    assert asyncio.run(files.list()) == [] and files.sync.head() == head


def test_write_unconfirmed_tells_the_model_to_search_first(backend: Any) -> None:
    class Unsure(RecordStore):
        def add(self, text: str, **kwargs: Any) -> MemoryRecord:
            raise MemoryStoreError("write_unconfirmed", "the store did not answer")

    memory = RecordMemoryCapability([RecordMount("facts", Unsure(backend, "alice"))])
    answer = memory.call("memory_record_add", {"memory": "facts", "text": "x"})
    assert answer["error"] == "write_unconfirmed" and "search" in answer["message"]
    assert "search before" in memory.instructions


# --- recall ------------------------------------------------------------------------------


def test_one_recall_block_per_mount_with_the_closest_records(backend: Any) -> None:
    alice, bob = RecordStore(backend, "alice"), RecordStore(backend, "bob")
    alice.add("prefers green tea")
    alice.add("lives in Berlin")
    bob.add("bob likes <b>bold</b> tea & cake")
    memory = RecordMemoryCapability(
        [RecordMount("facts", alice), RecordMount("shared", bob, "read"), RecordMount("off", alice, recall=False)]
    )
    report = asyncio.run(memory.recall("What tea should I order?"))
    assert report.status == {"facts": "recalled", "shared": "recalled"}
    assert [b.memory for b in report.blocks] == ["facts", "shared"]
    first = report.blocks[0].text
    assert first.startswith('<memory-recall memory="facts" trust="untrusted">\n') and first.endswith("</memory-recall>")
    payload = json.loads(first.splitlines()[2])
    assert [r["text"] for r in payload["records"]] == ["prefers green tea"]
    assert "<b>" not in report.blocks[1].text and "&" not in report.blocks[1].text.splitlines()[2]
    assert json.loads(report.blocks[1].text.splitlines()[2])["records"][0]["text"] == "bob likes <b>bold</b> tea & cake"


def test_recall_limit_and_byte_budget(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    for i in range(8):
        store.add(f"tea fact {i} " + "x" * 200)
    mount = RecordMount("facts", store)
    report = asyncio.run(RecordMemoryCapability([mount]).recall("tea fact"))
    assert len(report.blocks[0].records) == 5
    small = RecordMemoryCapability([mount], limits=RecordMemoryLimits(recall_bytes=900))
    (block,) = asyncio.run(small.recall("tea fact")).blocks
    assert block.size <= 900 and 1 <= len(block.records) < 5
    tiny = RecordMemoryCapability([mount], limits=RecordMemoryLimits(recall_bytes=200))
    assert asyncio.run(tiny.recall("tea fact")).blocks == ()


def test_render_block_drops_from_the_end_until_it_fits() -> None:
    records = [MemoryRecord(f"id{i}", "y" * 100, 1.0, None) for i in range(5)]
    sizes = [b.size for n in range(1, 6) if (b := render_block("m", records[:n], 10_000)) is not None]
    for budget in range(sizes[0] - 1, sizes[-1] + 2):
        block = render_block("m", records, budget)
        fitting = [n + 1 for n, size in enumerate(sizes) if size <= budget]
        if not fitting:
            assert block is None
        else:
            assert block is not None and len(block.records) == fitting[-1] and block.size <= budget


def test_recall_cuts_the_input_and_skips_blank_or_wordless_input(backend: Any) -> None:
    seen: list[str] = []

    class Spy(RecordStore):
        def search(self, query: str, *, limit: int = 5) -> list[MemoryRecord]:
            seen.append(query)
            return super().search(query, limit=limit)

    store = Spy(backend, "alice")
    store.add("prefers green tea")
    memory = RecordMemoryCapability([RecordMount("facts", store)])
    asyncio.run(memory.recall("tea " * 1000))
    assert len(seen[0]) == RECALL_INPUT_CHARS
    assert asyncio.run(memory.recall("   ")).blocks == ()
    assert asyncio.run(memory.recall("?!")).status == {"facts": "recalled"}


def test_a_failing_or_slow_mount_is_skipped_and_reported(backend: Any) -> None:
    good = RecordStore(backend, "alice")
    good.add("prefers green tea")
    release = threading.Event()

    class Broken(RecordStore):
        def search(self, query: str, *, limit: int = 5) -> list[MemoryRecord]:
            raise MemoryStoreError("unavailable", "the disk is gone")

    class Slow(RecordStore):
        def search(self, query: str, *, limit: int = 5) -> list[MemoryRecord]:
            release.wait(10)
            return []

        def list(self, *, limit: int = 20, cursor: str | None = None) -> RecordPage:
            return RecordPage(())

    memory = RecordMemoryCapability(
        [
            RecordMount("broken", Broken(backend, "b")),
            RecordMount("slow", Slow(backend, "s")),
            RecordMount("facts", good),
        ],
        limits=RecordMemoryLimits(recall_seconds=0.3),
    )
    try:
        report = asyncio.run(memory.recall("tea"))
        still_waiting = not release.is_set()  # the report came while the slow search was still blocked
    finally:
        release.set()
    assert still_waiting
    assert report.status == {"broken": "failed", "slow": "timeout", "facts": "recalled"}
    assert "disk is gone" in report.errors["broken"] and "slow" in report.errors
    assert [b.memory for b in report.blocks] == ["facts"]


def test_recall_reuses_its_worker_threads_and_never_queues_behind_a_hung_search(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store's git handles are per thread: a recall per run on new threads reopened every repository."""
    from gitmem.tools import recall_blocks

    # A pool of its own: a worker another test left hung rejoins the shared pool whenever it is released.
    monkeypatch.setattr(recall_blocks, "_WORKERS", recall_blocks._Workers())
    threads: list[threading.Thread] = []  # the objects themselves, so no two can share an id
    release = threading.Event()

    class Seen(RecordStore):
        def search(self, query: str, *, limit: int = 5) -> list[MemoryRecord]:
            threads.append(threading.current_thread())
            return super().search(query, limit=limit)

    class Hung(RecordStore):
        def search(self, query: str, *, limit: int = 5) -> list[MemoryRecord]:
            release.wait(10)
            return []

    seen = Seen(backend, "alice")
    seen.add("prefers green tea")
    memory = RecordMemoryCapability([RecordMount("facts", seen)])
    for _ in range(5):
        assert asyncio.run(memory.recall("tea")).status == {"facts": "recalled"}
    assert len({id(t) for t in threads}) == 1  # one worker served every recall
    stuck = RecordMemoryCapability(
        [RecordMount("hung", Hung(backend, "h")), RecordMount("facts", seen)],
        limits=RecordMemoryLimits(recall_seconds=1.0),  # room for a new thread on a loaded machine
    )
    try:
        for _ in range(3):  # each recall finds the hung worker busy and the others free
            report = asyncio.run(stuck.recall("tea"))
            assert report.status == {"hung": "timeout", "facts": "recalled"}
    finally:
        release.set()


def test_a_deleted_record_is_never_recalled(backend: Any) -> None:
    store = RecordStore(backend, "alice")
    gone = store.add("prefers green tea")
    kept = store.add("prefers tea without sugar")
    memory = RecordMemoryCapability([RecordMount("facts", store)])
    before = asyncio.run(memory.recall("which tea?"))
    assert {r.id for r in before.blocks[0].records} == {gone.id, kept.id}
    call(memory, "memory_record_delete", id=gone.id)
    after = asyncio.run(memory.recall("which tea?"))
    assert [r.id for r in after.blocks[0].records] == [kept.id]
    assert gone.id not in after.text


def test_the_file_tools_refuse_a_record_mount(tmp_path: Any) -> None:
    from gitmem import Root
    from gitmem.tools import FileMemoryCapability, FileMount

    records = Root(tmp_path).mount("facts", create=True, kind="record")
    RecordStore(records.sync, "alice").add("prefers green tea")
    files = FileMemoryCapability([FileMount("facts", records.sync, "write")])
    for tool, args in (("memory_file_view", {}), ("memory_file_create", {"path": "x.md", "content": "x"})):
        answer = files.call(tool, {"memory": "facts", **args})
        assert answer["error"] == "wrong_kind", answer
    assert [e.path.endswith(".md") for e in records.sync.list()].count(True) == 1  # nothing was written


def test_a_failing_recall_mount_is_reported_once_with_its_trace_at_debug(
    backend: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from gitmem.tools import recall_blocks

    failing = {"on": True}

    class Flaky(RecordStore):
        def search(self, query: str, *, limit: int = 5) -> list[MemoryRecord]:
            if failing["on"]:
                raise OSError("the disk is gone")
            return []

    recall_blocks._failing.pop("flaky", None)
    memory = RecordMemoryCapability([RecordMount("flaky", Flaky(backend, "f"))])
    caplog.set_level(logging.DEBUG, logger="gitmem.tools")
    for _ in range(3):
        assert asyncio.run(memory.recall("tea")).status == {"flaky": "failed"}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "flaky" in warnings[0].getMessage() and warnings[0].exc_info is None
    assert len([r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]) == 3
    failing["on"] = False  # it recovers; a later failure is news again
    assert asyncio.run(memory.recall("tea")).status == {"flaky": "recalled"}
    failing["on"] = True
    asyncio.run(memory.recall("tea"))
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_a_failing_recall_prints_no_traceback_in_a_real_process(tmp_path: Any) -> None:
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import asyncio
        from gitmem import Root
        from gitmem.records import RecordStore
        from gitmem.tools.records import RecordMemoryCapability, RecordMount

        class Broken(RecordStore):
            def search(self, query, *, limit=5):
                raise OSError("the disk is gone")

        store = Broken(Root(__import__("sys").argv[1]).mount("facts", create=True, kind="record").sync, "a")
        memory = RecordMemoryCapability([RecordMount("facts", store)])
        for _ in range(5):
            asyncio.run(memory.recall("tea"))
        """
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "mem")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("recall in memory facts failed") == 1, done.stderr
