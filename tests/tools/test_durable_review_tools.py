"""The reviewer's durable tools: offered only when the host allows it, and only to someone it can name."""

from __future__ import annotations

from pathlib import Path

from gitmem.durable import DurableBinding, DurableRepository, Namespace
from gitmem.model import Origin
from gitmem.tools.durable import DurableTools
from tests.durable.support import ITEM

NS = Namespace("acme", "alice", "repo-api")

def binding(tmp_path: Path) -> DurableBinding:
    return DurableBinding(DurableRepository.open(tmp_path, "team", create=True), NS)


def test_an_agents_tools_never_activate_even_when_asked_for_by_name(tmp_path: Path) -> None:
    tools = DurableTools(binding(tmp_path), tools=["recall", "propose", "activate", "approve"])
    assert [t.name for t in tools.offered()] == ["durable_recall", "durable_propose"]
    refused = tools.call("durable_activate", {"id": "x", "revision": 1})
    assert refused["error"] == "forbidden"


def test_a_reviewer_activates_as_itself_and_one_who_names_nobody_is_refused(tmp_path: Path) -> None:
    tools = DurableTools(binding(tmp_path), allow_activate=True)
    node = tools.run("durable_propose", {"items": [ITEM]}, origin=Origin("alice/mcp", "alice"))["new"][0]
    nobody = tools.call("durable_activate", {"id": node, "revision": 1}, origin=Origin("run", None))
    assert nobody["error"] == "forbidden" and "principal" in nobody["message"]
    assert tools.binding.repository.node(NS, node).status == "candidate"
    done = tools.run("durable_activate", {"id": node, "revision": 1}, origin=Origin("dana/mcp", "dana"))
    assert done["activated_by"] == "dana"
    log = tools.run("durable_log", {"id": node})["revisions"]
    assert log[0]["status"] == "active" and log[0]["principal"] == "dana"
    assert any(e["kind"] == "manual" and "dana" in e["uri"] for e in log[0]["evidence"]), log[0]["evidence"]
    again = tools.call("durable_activate", {"id": node, "revision": 1}, origin=Origin("dana/mcp", "dana"))
    assert again["error"] == "idempotency_conflict", again  # that revision was activated once already


def test_a_reviewers_activation_on_a_review_gated_memory_lands_on_main_under_its_name(tmp_path: Path) -> None:
    from gitmem import review

    repository = DurableRepository.open(tmp_path, "team", create=True)
    review.enable(repository.store)  # type: ignore[arg-type]
    tools = DurableTools(DurableBinding(repository, NS), allow_activate=True)
    node = tools.run("durable_propose", {"items": [ITEM]}, origin=Origin(None, "alice"))["new"][0]  # on main
    done = tools.run("durable_activate", {"id": node, "revision": 1}, origin=Origin("dana/mcp", "dana"))
    assert done["activated_by"] == "dana" and repository.node(NS, node).status == "active"
    assert review.proposals(repository.store) == []  # type: ignore[arg-type]
    assert tools.run("durable_log", {"id": node})["revisions"][0]["principal"] == "dana"
