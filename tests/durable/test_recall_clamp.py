"""The host's recall policy bounds every recall made through a binding, whoever asks.

An agent chooses the ``limit`` of ``durable_recall`` (the schema allows 100); the
host chose the binding's policy. Every path that recalls through a binding - a
session turn, the registry tool, the rules behind it, an MCP server process -
takes its policy from :meth:`DurableBinding.recall_policy`, and an ``ast`` check
keeps it the one place a policy is made from a binding.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitmem.durable import agent as rules
from gitmem.durable.binding import DurableBinding
from gitmem.durable.recall import RecallPolicy
from gitmem.durable.repository import DurableRepository
from gitmem.errors import MemoryStoreError
from gitmem.memstore import InMemoryFileStore
from gitmem.root import Root
from gitmem.session.memory import SessionMemory
from gitmem.session.runner import SessionRunner, TurnContext
from gitmem.tools.durable import DurableTools

from .support import NS, change, create, memory_store

PACKAGE = Path(__file__).resolve().parents[2] / "gitmem"
NODES = 20


def bound_binding(max_results: int = 3, min_score: float = 0.0) -> DurableBinding:
    repo = DurableRepository(memory_store())
    ops = [
        create(f"n{i:02d}", f"deploy checklist step {i} for the release train", status="active") for i in range(NODES)
    ]
    repo.apply(change("seed", *ops))
    return DurableBinding(repo, NS, RecallPolicy(max_results, min_score))


def via_rules(binding: DurableBinding, limit: int) -> int:
    return len(rules.recall(binding, "deploy checklist release", limit)["memories"])


def via_tool(binding: DurableBinding, limit: int) -> int:
    answer = DurableTools(binding).call("durable_recall", {"query": "deploy checklist release", "limit": limit})
    assert "error" not in answer, answer
    return len(answer["memories"])


def via_binding(binding: DurableBinding, limit: int) -> int:
    return len(binding.recall_active("deploy checklist release", limit))


def via_runner(binding: DurableBinding, limit: int) -> int:
    seen: list[str] = []

    def model(ctx: TurnContext) -> str:
        seen.append(ctx.memory_block)
        return "ok"

    memory = SessionMemory(InMemoryFileStore())
    runner = SessionRunner(memory, model, workspace="w", session_id="s-clamp", durable=binding, recall_limit=limit)
    try:
        result = runner.turn("deploy checklist release")
    finally:
        runner.close()
    return sum(1 for m in result.recall.memories if m.layer == "durable")


PATHS: dict[str, Callable[[DurableBinding, int], int]] = {
    "rules": via_rules,
    "tool": via_tool,
    "binding": via_binding,
    "runner": via_runner,
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_no_path_recalls_more_than_the_hosts_policy(path: str) -> None:
    binding = bound_binding(max_results=3)
    recall = PATHS[path]
    assert recall(binding, 100) == 3  # the agent asked for the schema's maximum
    assert recall(binding, 2) == 2  # fewer than the policy allows is the caller's choice
    assert recall(bound_binding(max_results=50), 100) == NODES


def test_the_policys_other_fields_are_the_hosts() -> None:
    binding = bound_binding(max_results=4, min_score=0.9)
    policy = binding.recall_policy(100)
    assert (policy.max_results, policy.min_score, policy.related_lookups, policy.semantic) == (4, 0.9, 0, False)
    query = {"query": "deploy zebra quokka walrus", "limit": 100}  # a quarter of it is in every node
    assert DurableTools(binding).call("durable_recall", query)["memories"] == []  # the host's minimum score holds
    assert len(DurableTools(bound_binding(4)).call("durable_recall", query)["memories"]) == 4
    for bad in (True, "5", 2.5, 0, -3, 101):
        with pytest.raises(MemoryStoreError) as raised:
            binding.recall_policy(bad)  # type: ignore[arg-type]
        assert raised.value.code == "invalid_query"
    with pytest.raises(MemoryStoreError) as raised:
        binding.recall_active("deploy checklist release", 0)  # refused, never raised to one result
    assert raised.value.code == "invalid_query"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_path_takes_one_result_when_asked_for_one(path: str) -> None:
    assert PATHS[path](bound_binding(max_results=50), 1) == 1


def test_one_place_makes_a_policy_from_a_binding() -> None:
    """``RecallPolicy(...)`` is built only by the binding's clamp, the recall rules' default and the admin CLI."""
    allowed = {
        "durable/recall.py",  # the class itself
        "durable/binding.py",  # recall_policy: the clamp
        "durable/repository.py",  # the default policy of a direct recall
        "adapters/cli/durable.py",  # `gitmem durable recall`: the admin's own options, no binding
    }
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "RecallPolicy"
            ):
                found.append(str(path.relative_to(PACKAGE)))
    assert found and set(found) <= allowed, sorted(set(found) - allowed)


def test_an_mcp_server_process_answers_within_the_hosts_policy(tmp_path: Path) -> None:
    """``gitmem mcp --durable``: a model asking for 100 gets the binding's 5 (its default policy)."""
    from adapters.mcp_support import McpClient, payload

    root = tmp_path / "root"
    Root(root).mount("notes", create=True)
    repo = DurableRepository.open(root, "team", create=True)
    ops = [
        create(f"n{i:02d}", f"deploy checklist step {i} for the release train", status="active") for i in range(NODES)
    ]
    repo.apply(change("seed", *ops))
    args = (
        "--mount",
        "notes",
        "--durable",
        "team",
        "--durable-namespace",
        *NS.as_dict().values(),
        "--principal",
        "agent",
    )
    with McpClient(root, *args, errlog=tmp_path / "stderr") as client:

        async def work(session: Any) -> Any:
            return await session.call_tool("durable_recall", {"query": "deploy checklist release", "limit": 100})

        result = client.run(work)
    answer = payload(result)
    assert not result.is_error, json.dumps(answer)
    assert len(answer["memories"]) == RecallPolicy().max_results
