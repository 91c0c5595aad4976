"""``gitmem mcp --durable``: an agent recalls activated nodes and proposes candidates, nothing more."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import ClientSession

from adapters.mcp_support import McpClient, payload
from gitmem.adapters.cli import cli
from gitmem.durable import DurableRepository, Evidence, Namespace
from gitmem.root import Root
from tests.durable.support import ITEM

NS = Namespace("acme", "agent-7", "repo-api")

@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp-durable") / "root"
    Root(path).mount("user", create=True)
    return path


@pytest.fixture(scope="module")
def client(root: Path) -> Iterator[McpClient]:
    errlog = root.parent / "durable.stderr"
    args = (
        "--mount",
        "user",
        "--durable",
        "team",
        "--durable-namespace",
        *NS.as_dict().values(),
        "--principal",
        "agent",
    )
    with McpClient(root, *args, errlog=errlog) as c:
        yield c
    assert "Traceback" not in errlog.read_text(encoding="utf-8")


def call(client: McpClient, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    async def work(session: ClientSession) -> Any:
        return await session.call_tool(name, arguments)

    result = client.run(work)
    return bool(result.is_error), payload(result)


def test_the_durable_tools_are_listed_with_their_schemas(client: McpClient) -> None:
    async def work(session: ClientSession) -> Any:
        return await session.list_tools()

    tools = {t.name: t for t in client.run(work).tools}
    assert {"durable_recall", "durable_propose"} <= set(tools)
    assert tools["durable_recall"].annotations.read_only_hint is True
    assert tools["durable_propose"].input_schema["properties"]["items"]["maxItems"] == 8


def test_proposals_are_candidates_until_a_person_activates_them(client: McpClient, root: Path) -> None:
    failed, out = call(client, "durable_propose", {"items": [ITEM]})
    assert not failed and out["status"] == "candidate" and len(out["new"]) == 1
    node_id = out["new"][0]
    failed, found = call(client, "durable_recall", {"query": "make itest tagging release"})
    assert not failed and found == {"memories": []}
    repo = DurableRepository.open(root, "team")
    assert repo.node(NS, node_id).status == "candidate"
    repo.activate(NS, node_id, 1, [Evidence("review://1", "sha256:1", "manual")])
    failed, found = call(client, "durable_recall", {"query": "make itest tagging release"})
    assert not failed and [m["id"] for m in found["memories"]] == [node_id]
    failed, refused = call(client, "durable_propose", {"items": [{**ITEM, "importance": 0.2}]})
    assert failed and refused["error"] == "invalid_arguments" and "importance" in refused["message"]
    # The node's log: the activation on top, with its evidence and who made it; the proposal under it.
    failed, log = call(client, "durable_log", {"id": node_id})
    assert not failed and [r["status"] for r in log["revisions"]] == ["active", "candidate"]
    assert log["revisions"][0]["evidence"][-1] == {"kind": "manual", "uri": "review://1"}
    assert log["revisions"][1]["principal"] == "agent"
    failed, refused = call(client, "durable_log", {"id": node_id, "limit": 0})
    assert failed and refused["error"] == "invalid_arguments"


def test_durable_needs_its_namespace(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["mcp", "--root", str(tmp_path), "--mount", "user", "--durable", "team"])
    assert result.exit_code == 2 and "--durable-namespace" in result.output
