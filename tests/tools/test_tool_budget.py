"""What listing every tool costs a model: the characters of all definitions, every kind enabled.

The number is printed (``pytest -s``) and held under a bound, so a new tool or a
longer description is a visible, deliberate cost.
"""

from __future__ import annotations

from pathlib import Path

from gitmem import Root
from gitmem.durable import DurableBinding, DurableRepository, Namespace
from gitmem.records import RecordStore
from gitmem.session import open_session_memory
from gitmem.tools import FileMemoryCapability, FileMount, ToolRegistry
from gitmem.tools.catalog import KINDS
from gitmem.tools.durable import DurableTools
from gitmem.tools.records import RecordMemoryCapability, RecordMount
from gitmem.tools.session import SessionTools

#: Every tool of every kind (27, the reviewer's durable tools included) in under this many characters (the seven file tools alone were 6.2k).
BUDGET = 16_000


def every_kind(tmp_path: Path) -> ToolRegistry:
    root = Root(tmp_path / "root")
    files = FileMemoryCapability([FileMount("user", root.mount("user", create=True).sync, "write")])
    facts = root.mount("facts", create=True, kind="record").sync
    records = RecordMemoryCapability([RecordMount("facts", RecordStore(facts, "default"))])
    session = SessionTools(open_session_memory(tmp_path / "session"))
    repository = DurableRepository.open(root.path, "durable", create=True)
    durable = DurableTools(DurableBinding(repository, Namespace("acme", "alice", "workspace")), allow_activate=True)
    return ToolRegistry.of(files, records, session, durable)


def test_all_tool_definitions_stay_small(tmp_path: Path) -> None:
    registry = every_kind(tmp_path)
    assert [t.name for t in registry] == [prefix + short for prefix, _, shorts in KINDS.values() for short in shorts], (
        "the catalogue of names matches what the kinds offer"
    )
    by_kind: dict[str, int] = {}
    for tool in registry:
        by_kind[tool.kind] = by_kind.get(tool.kind, 0) + tool.size()
    total = registry.size()
    print(f"\n{len(registry)} tools, {total} characters of definitions: {by_kind}")
    print(f"instructions: {len(registry.instructions)} characters")
    assert total == sum(by_kind.values())
    assert total < BUDGET, f"{total} characters of tool definitions (budget {BUDGET})"
    for tool in registry:
        assert tool.size() < 1500, (tool.name, tool.size())
