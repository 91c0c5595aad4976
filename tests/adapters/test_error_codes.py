"""One situation, one code, on every surface: the CLI's ``--json``, the agent tools over
MCP (a real ``gitmem mcp`` process and client), and the Python API (the store, and the
tools' capability) are driven into the same situations and must answer the same code.

The code each situation gets is decided once: :func:`gitmem.errors.situation`, between the
store's contract (a failed version check is ``version_mismatch``) and what the surfaces report.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitmem.adapters.cli import cli
from gitmem.errors import CODES, MemoryStoreError, VersionMismatch
from gitmem.errors import situation as named
from gitmem.records import RecordStore
from gitmem.root import Root
from gitmem.tools import FileMemoryCapability, FileMount
from gitmem.tools.records import RecordMemoryCapability, RecordMount
from gitmem.tools.registry import ToolRegistry

from .mcp_support import McpClient

pytest.importorskip("mcp")

ALPHA = "alpha\n"
STALE = "0" * 40
BIG = "x" * (64 * 1024 + 1)
ERASED = "a line that forget erased\n"


@dataclass(frozen=True)
class Situation:
    name: str
    code: str
    cli: tuple[str, ...]
    tool: tuple[str, dict[str, Any]]
    python: Callable[[Root], object]
    stdin: str = field(default="")


def _version(root: Root) -> str:
    return root.mount("user").sync.read("a.md").version


SITUATIONS = [
    Situation(
        "create a file that exists",
        "already_exists",
        ("write", "user", "a.md", "--create"),
        ("create", {"memory": "user", "path": "a.md", "content": "other\n"}),
        lambda r: r.mount("user").sync.write("a.md", "other\n", expected=None),
        stdin="other\n",
    ),
    Situation(
        "move onto a file that exists",
        "already_exists",
        ("mv", "user", "a.md", "b.md"),
        ("move", {"memory": "user", "source": "a.md", "destination": "b.md"}),
        lambda r: r.mount("user").sync.move("a.md", "b.md", expected=_version(r)),
    ),
    Situation(
        "change a file at a stale version",
        "version_mismatch",
        ("rm", "user", "a.md", "--expect", STALE),
        ("delete", {"memory": "user", "path": "a.md", "version": STALE}),
        lambda r: r.mount("user").sync.delete("a.md", expected=STALE),
    ),
    Situation(
        "read a missing file",
        "not_found",
        ("cat", "user", "nope.md"),
        ("view", {"memory": "user", "path": "nope.md"}),
        lambda r: r.mount("user").sync.read("nope.md"),
    ),
    Situation(
        "delete a missing file at a version",
        "not_found",
        ("rm", "user", "nope.md", "--expect", STALE),
        ("delete", {"memory": "user", "path": "nope.md", "version": STALE}),
        lambda r: r.mount("user").sync.delete("nope.md", expected=STALE),
    ),
    Situation(
        "edit a missing file",
        "not_found",
        ("edit", "user", "nope.md", "--old", "a", "--new", "b"),
        ("edit", {"memory": "user", "path": "nope.md", "old_string": "a", "new_string": "b"}),
        lambda r: r.mount("user").sync.write("nope.md", "b\n", expected=STALE),
    ),
    Situation(
        "a path that breaks the rules",
        "invalid_path",
        ("cat", "user", "../x.md"),
        ("view", {"memory": "user", "path": "../x.md"}),
        lambda r: r.mount("user").sync.read("../x.md"),
    ),
    Situation(
        "a file over the size limit",
        "too_large",
        ("write", "user", "big.md", "--create"),
        ("create", {"memory": "user", "path": "big.md", "content": BIG}),
        lambda r: r.mount("user").sync.write("big.md", BIG, expected=None),
        stdin=BIG,
    ),
    Situation(
        "a credential in the content",
        "invalid_file",
        ("write", "user", "k.md", "--create"),
        ("create", {"memory": "user", "path": "k.md", "content": "aws AKIAABCDEFGHIJKLMNOP\n"}),
        lambda r: r.mount("user").sync.write("k.md", "aws AKIAABCDEFGHIJKLMNOP\n", expected=None),
        stdin="aws AKIAABCDEFGHIJKLMNOP\n",
    ),
    Situation(
        "a memory that is not there",
        "unknown_memory",
        ("cat", "nomem", "a.md"),
        ("view", {"memory": "nomem", "path": "a.md"}),
        lambda r: r.mount("nomem"),
    ),
    Situation(
        "writing text forget erased",
        "forbidden",
        ("write", "user", "again.md", "--create"),
        ("create", {"memory": "user", "path": "again.md", "content": ERASED}),
        lambda r: r.mount("user").sync.write("again.md", ERASED, expected=None),
        stdin=ERASED,
    ),
    Situation(
        "a file call on a record memory",
        "wrong_kind",
        ("cat", "facts", "a.md"),
        ("view", {"memory": "facts", "path": "a.md"}),
        lambda r: r.mount("facts", kind="file"),
    ),
    Situation(
        "text to replace that is not in the file",
        "no_match",
        ("edit", "user", "a.md", "--old", "omega", "--new", "x"),
        ("edit", {"memory": "user", "path": "a.md", "old_string": "omega", "new_string": "x"}),
        lambda r: _capability(r).run(
            "edit", {"memory": "user", "path": "a.md", "old_string": "omega", "new_string": "x"}
        ),
    ),
]


def _capability(root: Root) -> FileMemoryCapability:
    return FileMemoryCapability([FileMount("user", root.mount("user").sync, "write")])


def _registry(root: Root) -> ToolRegistry:
    """The tools of both kinds, as ``gitmem mcp --mount user --mount facts`` offers them."""
    facts = RecordMount("facts", RecordStore(root.mount("facts").sync, "default"), "write")
    return ToolRegistry.of(_capability(root), RecordMemoryCapability([facts]))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, McpClient]]:
    folder = tmp_path_factory.mktemp("codes") / "root"
    store = Root(folder).mount("user", create=True).sync
    store.write("a.md", ALPHA, expected=None)
    store.write("b.md", "beta\n", expected=None)
    store.write("gone.md", ERASED, expected=None)
    store.forget("gone.md")
    Root(folder).mount("facts", create=True, kind="record")
    errlog = folder.parent / "mcp.log"
    with McpClient(folder, "--mount", "user", "--mount", "facts", "--no-watch", errlog=errlog) as client:
        yield folder, client


def _cli_code(folder: Path, situation: Situation) -> str:
    done = CliRunner().invoke(cli, ["--root", str(folder), "--json", *situation.cli], input=situation.stdin)
    assert done.exit_code == 1, (situation.name, done.output)
    body = json.loads(done.stdout)
    assert body["hint"], situation.name
    return str(body["error"])


def _tool_code(client: McpClient, situation: Situation) -> str:
    tool, arguments = situation.tool
    failed, body = client.call(tool, **arguments)
    assert failed, (situation.name, body)
    return str(body["error"])


def _python_code(folder: Path, situation: Situation) -> str:
    """The store keeps its contract (every failed version check is ``version_mismatch``, with the
    file now or none) and knows the situation, which :func:`gitmem.errors.situation` names."""
    with pytest.raises(MemoryStoreError) as refused:
        situation.python(Root(folder))
    if isinstance(refused.value, VersionMismatch):
        assert refused.value.code == "version_mismatch"
    return named(refused.value).code


def _python_tool_code(folder: Path, situation: Situation) -> str:
    tool, arguments = situation.tool
    with pytest.raises(MemoryStoreError) as refused:
        _registry(Root(folder)).run(f"memory_file_{tool}", arguments)
    return refused.value.code


@pytest.mark.parametrize("situation", SITUATIONS, ids=[s.name for s in SITUATIONS])
def test_every_surface_gives_one_situation_one_code(world: tuple[Path, McpClient], situation: Situation) -> None:
    folder, client = world
    codes = {
        "cli": _cli_code(folder, situation),
        "mcp": _tool_code(client, situation),
        "python": _python_code(folder, situation),
        "python tools": _python_tool_code(folder, situation),
    }
    assert codes == dict.fromkeys(codes, situation.code), situation.name
    assert situation.code in CODES
    # Nothing was written by any of the refusals.
    assert Root(folder).mount("user").sync.read("a.md").text == ALPHA
    assert sorted(e.path for e in Root(folder).mount("user").sync.list()) == ["a.md", "b.md"]


def test_a_conflict_carries_the_file_on_every_surface(world: tuple[Path, McpClient]) -> None:
    folder, client = world
    version = _version(Root(folder))
    cli_body = json.loads(
        CliRunner()
        .invoke(cli, ["--root", str(folder), "--json", "write", "user", "a.md", "--create"], input="x\n")
        .stdout
    )
    _, tool_body = client.call("create", memory="user", path="a.md", content="x\n")
    with pytest.raises(MemoryStoreError) as refused:
        Root(folder).mount("user").sync.write("a.md", "x\n", expected=None)
    assert refused.value.current is not None and refused.value.current.version == version
    assert cli_body["current"]["version"] == version == tool_body["current"]["version"]
