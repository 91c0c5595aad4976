"""One tool call looks its mount up once and leaves a path to the store's check, with the store's codes.

The store is the gate every surface reaches (the tools, the CLI's ``edit``, the
MCP server), so the write tools do not check a path again; a refused path must
still be ``invalid_path`` with nothing written, on every kind of store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.model import Origin
from gitmem.tools import FileMemoryCapability, FileMount, ops
from gitmem.tools.mounts import FileMount as Mount

from .support import KINDS, new_store

BAD_PATHS = ("../x.md", "a//b.md", "/abs.md", ".git/config", "a\\b.md", "", "x" * 300)


class Counting(FileMemoryCapability):
    lookups = 0

    def mount_for(self, tool: str, memory: str) -> Mount:
        type(self).lookups += 1
        return super().mount_for(tool, memory)


@pytest.mark.parametrize("kind", KINDS)
def test_one_call_looks_its_mount_up_once(kind: str, tmp_path: Path) -> None:
    store = new_store(kind, tmp_path)
    store.write("a.md", "hello world\n", expected=None)
    memory = Counting([FileMount("m", store)])
    calls: list[tuple[str, dict[str, Any]]] = [
        ("memory_file_view", {"path": "a.md"}),
        ("memory_file_edit", {"path": "a.md", "old_string": "hello", "new_string": "bye"}),
        ("memory_file_append", {"path": "a.md", "content": "more"}),
        ("memory_file_create", {"path": "b.md", "content": "new"}),
    ]
    for name, args in calls:
        Counting.lookups = 0
        answer = memory.call(name, {"memory": "m", **args})
        assert "error" not in answer, answer
        assert Counting.lookups == 1, name
    assert store.read("a.md").text == "bye world\nmore"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("path", BAD_PATHS)
def test_a_refused_path_is_the_stores_invalid_path_and_nothing_is_written(kind: str, path: str, tmp_path: Path) -> None:
    store = new_store(kind, tmp_path)
    store.write("a.md", "hello\n", expected=None)
    before = [(e.path, e.version) for e in store.list()]
    memory = FileMemoryCapability([FileMount("m", store)])
    for name, args in (
        ("memory_file_edit", {"path": path, "old_string": "hello", "new_string": "bye"}),
        ("memory_file_create", {"path": path, "content": "new"}),
        ("memory_file_append", {"path": path, "content": "more"}),
        ("memory_file_delete", {"path": path, "version": "0" * 40}),
    ):
        answer = memory.call(name, {"memory": "m", **args})
        assert answer["error"] == "invalid_path", (name, answer)
    with pytest.raises(MemoryStoreError) as raised:  # the CLI's edit calls the tool's rule directly
        ops.edit(store, path, "hello", "bye", fmt=store.format, retries=1, origin=Origin())
    assert raised.value.code == "invalid_path"
    assert [(e.path, e.version) for e in store.list()] == before


def test_a_wrong_memory_is_still_reported_before_bad_arguments(tmp_path: Path) -> None:
    memory = FileMemoryCapability([FileMount("m", new_store("memory", tmp_path))])
    answer = memory.call("memory_file_edit", {"memory": "nope", "path": 7, "extra": True})
    assert answer["error"] == "unknown_memory"
    answer = memory.call("memory_file_edit", {"memory": "m", "path": 7})
    assert answer["error"] == "invalid_arguments"


@pytest.mark.parametrize("tool", ["create", "append", "edit", "delete"])
def test_the_callers_path_rules_hold_when_they_are_stricter_than_the_stores(tool: str) -> None:
    """Limits with a shorter path cap than the store's: every write tool refuses the long path, as move does."""
    from gitmem.fileformat import FileFormat
    from gitmem.memstore import InMemoryFileStore
    from gitmem.tools.mounts import FileMemoryLimits

    store = InMemoryFileStore()
    long = "notes/" + "x" * 40 + ".md"
    version = store.write(long, "hi\n", expected=None)
    cap = FileMemoryCapability(
        [FileMount("m", store, "write")], limits=FileMemoryLimits(format=FileFormat(max_path_bytes=20))
    )
    args: dict[str, Any] = {
        "create": {"path": "other/" + "y" * 40 + ".md", "content": "x\n"},
        "append": {"path": long, "content": "more\n"},
        "edit": {"path": long, "old_string": "hi", "new_string": "ho"},
        "delete": {"path": long, "version": version},
    }[tool]
    answer = cap.call(f"memory_file_{tool}", {"memory": "m", **args})
    assert answer["error"] == "invalid_path", answer
    assert [e.path for e in store.list()] == [long] and store.read(long).text == "hi\n"


def test_retries_exhausted_carry_none_when_the_file_is_gone() -> None:
    """The last lost race was a delete: ``current`` is null, not an older version of a gone file."""
    from gitmem.memstore import InMemoryFileStore

    store = InMemoryFileStore()
    store.write("a.md", "one\n", expected=None)
    real_write = store.write

    def racing_write(path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        current = store.read(path)
        real_write(path, current.text + "x\n", expected=current.version)  # another writer first...
        if expected is not None and store.read(path).text.count("x") >= 2:
            store.delete(path, expected=store.read(path).version)  # ...and at last it removes the file
        return real_write(path, text, expected=expected, origin=origin)

    store.write = racing_write  # type: ignore[method-assign]
    with pytest.raises(MemoryStoreError) as caught:
        ops.append(store, "a.md", "mine\n", fmt=store.format, retries=1, origin=Origin())
    assert caught.value.code == "conflict_retries_exhausted" and caught.value.current is None
