"""The pure durable rules: every transition allowed and refused, graph rules, limits, parsing."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gitmem.durable.changes import (
    Activate,
    AddRelation,
    ChangeSet,
    Corroborate,
    Create,
    NodeDraft,
    RemoveRelation,
    Revise,
    SetStatus,
    parse_change_set,
)
from gitmem.durable.namespace import Namespace
from gitmem.durable.node import STATUSES, Evidence, Node, Relation
from gitmem.durable.rules import TRANSITIONS, stage
from gitmem.errors import MemoryStoreError

NS = Namespace("acme", "alice", "repo")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=1)
TURN = Evidence("turn://1", "sha256:t1", "session_turn", T0)
MANUAL = Evidence("review://7", "sha256:r7", "manual")
VERIFY = Evidence("check://ci/9", "sha256:c9", "verification")


def node(node_id: str, status: str = "active", relations: tuple[Relation, ...] = (), **kw: object) -> Node:
    base = Node(
        id=node_id,
        namespace=NS,
        revision=kw.pop("revision", 3),  # type: ignore[arg-type]
        kind="semantic",
        status=status,  # type: ignore[arg-type]
        content=kw.pop("content", f"content of {node_id}"),  # type: ignore[arg-type]
        confidence=0.9,
        importance=0.8,
        created_at=T0,
        updated_at=T0,
        evidence=(TURN,),
        relations=tuple(sorted(relations)),
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def world(*nodes: Node) -> dict[str, Node]:
    return {n.id: n for n in nodes}


def run(nodes: dict[str, Node], *ops: object, key: str = "k") -> tuple[Node, ...]:
    change = ChangeSet(NS, key, tuple(ops))  # type: ignore[arg-type]
    return stage(change, nodes.get, NOW).nodes


def code_of(nodes: dict[str, Node], *ops: object) -> str:
    with pytest.raises(MemoryStoreError) as info:
        run(nodes, *ops)
    return info.value.code


def x_in(status: str) -> dict[str, Node]:
    """Node x in ``status`` with both edges a later status may need, and their counterparts."""
    x = node("x", status, (Relation("superseded_by", "s"), Relation("conflicts_with", "c")))
    s = node("s", "active", (Relation("supersedes", "x"),))
    c = node("c", "active", (Relation("conflicts_with", "x"),))
    return world(x, s, c)


@pytest.mark.parametrize("source", STATUSES)
@pytest.mark.parametrize("target", ["superseded", "conflicted", "tombstoned"])
def test_set_status_follows_the_transition_table(source: str, target: str) -> None:
    nodes = x_in(source)
    op = SetStatus("x", 3, target)  # type: ignore[arg-type]
    if (source, target) in TRANSITIONS:
        (changed,) = run(nodes, op)
        assert (changed.status, changed.revision, changed.revision_kind) == (target, 4, "status_changed")
        assert changed.updated_at == NOW
    else:
        assert code_of(nodes, op) == "invalid_transition"


@pytest.mark.parametrize("source", STATUSES)
def test_set_status_never_moves_to_candidate_or_active(source: str) -> None:
    for target in ("candidate", "active"):
        assert code_of(x_in(source), SetStatus("x", 3, target)) == "invalid_transition"  # type: ignore[arg-type]


@pytest.mark.parametrize("source", STATUSES)
def test_only_a_candidate_can_be_activated(source: str) -> None:
    op = Activate("x", 3, (MANUAL,))
    if source == "candidate":
        (changed,) = run(x_in(source), op)
        assert (changed.status, changed.revision, changed.revision_kind) == ("active", 4, "activated")
        assert {e.uri for e in changed.evidence} == {TURN.uri, MANUAL.uri}
        assert all(e.occurred_at is not None for e in changed.evidence)
    else:
        assert code_of(x_in(source), op) == "invalid_transition"


def test_the_transition_table_is_the_documented_one() -> None:
    assert sorted(TRANSITIONS) == [
        ("active", "conflicted"),
        ("active", "superseded"),
        ("active", "tombstoned"),
        ("candidate", "conflicted"),
        ("candidate", "tombstoned"),
        ("conflicted", "superseded"),
        ("conflicted", "tombstoned"),
        ("superseded", "tombstoned"),
    ]


def test_activation_needs_new_manual_or_verification_evidence() -> None:
    sure = world(node("x", "candidate", confidence=1.0, importance=1.0))
    assert code_of(sure, Activate("x", 3, (Evidence("turn://2", "d", "session_turn"),))) == "invalid_transition"
    assert code_of(sure, Activate("x", 3, (Evidence("tool://2", "d", "tool_result"),))) == "invalid_transition"
    assert code_of(sure, Activate("x", 3, ())) == "invalid_change_set"
    # manual evidence already on the node is not a new decision
    old_manual = world(node("x", "candidate", evidence=(Evidence("review://7", "d", "manual", T0),)))
    assert code_of(old_manual, Activate("x", 3, (MANUAL,))) == "invalid_change_set"
    (by_check,) = run(sure, Activate("x", 3, (VERIFY,)))
    assert by_check.status == "active"


def test_create_active_needs_authorising_evidence_and_other_statuses_are_refused() -> None:
    draft = NodeDraft("n", "semantic", "Prefer rebase", status="active", confidence=1.0, evidence=(TURN,))
    assert code_of({}, Create(draft)) == "invalid_transition"
    (made,) = run({}, Create(replace(draft, evidence=(TURN, MANUAL))))
    assert (made.status, made.revision, made.created_at) == ("active", 1, NOW)
    for status in ("superseded", "conflicted", "tombstoned"):
        assert code_of({}, Create(replace(draft, status=status))) == "invalid_transition"  # type: ignore[arg-type]
    assert code_of(world(node("n")), Create(NodeDraft("n", "semantic", "again"))) == "already_exists"


@pytest.mark.parametrize("status", ["superseded", "tombstoned"])
def test_frozen_nodes_refuse_every_change_but_tombstoning(status: str) -> None:
    nodes = x_in(status)
    nodes["r"] = node("r", "active")
    for op in (
        Corroborate("x", 3, (Evidence("turn://9", "d", "session_turn"),)),
        Revise("x", 3, "new text", (Evidence("turn://9", "d", "session_turn"),)),
        AddRelation("x", 3, Relation("related_to", "r")),
        RemoveRelation("x", 3, Relation("conflicts_with", "c")),
    ):
        assert code_of(nodes, op) == "invalid_transition", op


@pytest.mark.parametrize("status", ["candidate", "active", "conflicted"])
def test_evolvable_nodes_take_evidence_revisions_and_relations(status: str) -> None:
    nodes = x_in(status)
    nodes["r"] = node("r", "active")
    changed = run(
        nodes,
        Corroborate("x", 3, (Evidence("turn://9", "d", "session_turn"),)),
        Revise("x", 4, "sharper text", (Evidence("turn://10", "d", "tool_result"),), mode="correction", confidence=0.7),
        AddRelation("x", 5, Relation("related_to", "r")),
        AddRelation("r", 3, Relation("related_to", "x")),
    )
    x, r = changed
    assert (x.revision, x.revision_kind, x.content, x.confidence, x.status) == (
        6,
        "relation_changed",
        "sharper text",
        0.7,
        status,
    )
    assert len(x.evidence) == 3 and r.revision == 4


def test_revisions_count_every_operation_and_must_match() -> None:
    nodes = world(node("x", "candidate"))
    assert code_of(nodes, Corroborate("x", 2, (MANUAL,))) == "revision_mismatch"
    assert code_of(nodes, Corroborate("x", 3, (MANUAL,)), Corroborate("x", 3, (VERIFY,))) == "revision_mismatch"
    assert code_of(nodes, Corroborate("nope", 1, (MANUAL,))) == "node_not_found"
    made = run({}, Create(NodeDraft("n", "procedural", "Run make check")), Activate("n", 1, (MANUAL,)))
    assert [(n.id, n.revision, n.status) for n in made] == [("n", 2, "active")]


def test_relations_must_be_symmetric_and_stay_in_the_namespace() -> None:
    nodes = world(node("a"), node("b"))
    assert code_of(nodes, AddRelation("a", 3, Relation("related_to", "b"))) == "invalid_change_set"
    assert code_of(nodes, AddRelation("a", 3, Relation("related_to", "elsewhere"))) == "node_not_found"
    assert code_of(nodes, AddRelation("a", 3, Relation("related_to", "a"))) == "invalid_change_set"
    both = run(
        nodes, AddRelation("a", 3, Relation("related_to", "b")), AddRelation("b", 3, Relation("related_to", "a"))
    )
    assert [r.relations for r in both] == [(Relation("related_to", "b"),), (Relation("related_to", "a"),)]
    linked = world(*both)
    # removing one side only leaves the other dangling
    assert code_of(linked, RemoveRelation("a", 4, Relation("related_to", "b"))) == "invalid_change_set"
    assert code_of(linked, AddRelation("a", 4, Relation("related_to", "b"))) == "invalid_change_set"


def test_superseding_needs_both_edges_and_the_status() -> None:
    old = node("old", "active")
    nodes = world(old)
    replacing = NodeDraft("new", "semantic", "Use uv, not pip", relations=(Relation("supersedes", "old"),))
    # the counterpart edge is missing
    assert code_of(nodes, Create(replacing)) == "invalid_change_set"
    # edge present but old not superseded
    assert (
        code_of(nodes, Create(replacing), AddRelation("old", 3, Relation("superseded_by", "new")))
        == "invalid_change_set"
    )
    # superseded without a superseded_by edge
    assert code_of(nodes, SetStatus("old", 3, "superseded")) == "invalid_change_set"
    new, old2 = run(
        nodes,
        Create(replacing),
        AddRelation("old", 3, Relation("superseded_by", "new")),
        SetStatus("old", 4, "superseded"),
    )
    assert (new.status, old2.status, old2.revision) == ("candidate", "superseded", 5)


def test_conflicted_needs_a_conflicts_with_edge() -> None:
    nodes = world(node("a"), node("b"))
    assert code_of(nodes, SetStatus("a", 3, "conflicted")) == "invalid_change_set"
    a, b = run(
        nodes,
        AddRelation("a", 3, Relation("conflicts_with", "b")),
        AddRelation("b", 3, Relation("conflicts_with", "a")),
        SetStatus("a", 4, "conflicted"),
    )
    assert (a.status, b.status) == ("conflicted", "active")


def test_times_may_not_run_backwards() -> None:
    nodes = world(node("x", "candidate", updated_at=NOW + timedelta(hours=1)))
    assert code_of(nodes, Activate("x", 3, (MANUAL,))) == "invalid_change_set"
    late = Evidence("review://8", "d", "manual", NOW + timedelta(seconds=1))
    assert code_of(world(node("x", "candidate")), Activate("x", 3, (late,))) == "invalid_change_set"


@pytest.mark.parametrize(
    ("build", "code"),
    [
        (lambda: ChangeSet(NS, "k", ()), "invalid_change_set"),
        (lambda: ChangeSet(NS, "k", (SetStatus("x", 1, "tombstoned"),) * 129), "invalid_change_set"),
        (lambda: ChangeSet(NS, " ", (SetStatus("x", 1, "tombstoned"),)), "invalid_change_set"),
        (lambda: NodeDraft("n", "semantic", "x" * (64 * 1024 + 1)), "invalid_change_set"),
        (lambda: NodeDraft("n", "semantic", "   "), "invalid_change_set"),
        (lambda: NodeDraft("n", "working", "text"), "invalid_change_set"),  # type: ignore[arg-type]
        (lambda: NodeDraft("n", "semantic", "text", confidence=1.5), "invalid_change_set"),
        (lambda: NodeDraft("n", "semantic", "text", importance=float("nan")), "invalid_change_set"),
        (lambda: NodeDraft("n", "semantic", "text", importance=10**400), "invalid_change_set"),  # past floats
        (lambda: NodeDraft("n", "semantic", "text", labels={f"k{i}": "v" for i in range(65)}), "invalid_change_set"),
        (lambda: NodeDraft("bad\nid", "semantic", "text"), "invalid_change_set"),
        (lambda: NodeDraft("é" * 129, "semantic", "text"), "invalid_change_set"),
        (lambda: Namespace("", "p", "s"), "invalid_change_set"),
        (lambda: Namespace("t", "p" * 257, "s"), "invalid_change_set"),
        (lambda: Evidence("", "d", "manual"), "invalid_change_set"),
        (lambda: Evidence("u", "d", "hunch"), "invalid_change_set"),  # type: ignore[arg-type]
        (lambda: Evidence("u", "d", "manual", "2026-01-01T00:00:00"), "invalid_change_set"),  # type: ignore[arg-type]
        (lambda: Relation("likes", "x"), "invalid_change_set"),  # type: ignore[arg-type]
    ],
)
def test_limits_and_shapes(build: object, code: str) -> None:
    with pytest.raises(MemoryStoreError) as info:
        build()  # type: ignore[operator]
    assert info.value.code == code


def test_a_change_set_may_hold_128_operations_and_evidence_is_capped_at_64() -> None:
    ops = [Create(NodeDraft(f"n{i}", "semantic", f"fact {i}")) for i in range(128)]
    assert len(run({}, *ops)) == 128
    many = tuple(Evidence(f"turn://{i}", "d", "session_turn") for i in range(64))
    (full,) = run({}, Create(NodeDraft("n", "semantic", "t", evidence=many)))
    assert code_of(world(full), Corroborate("n", 1, (Evidence("turn://x", "d", "manual"),))) == "invalid_change_set"
    assert code_of({}, Create(NodeDraft("m", "semantic", "t", evidence=(TURN, TURN)))) == "invalid_change_set"


def test_parse_reads_the_json_form_and_the_digest_pins_content() -> None:
    data = {
        "namespace": {"tenant": "acme", "principal": "alice", "scope": "repo"},
        "idempotency_key": "turn-1",
        "operations": [
            {"op": "create", "node": {"id": "a", "kind": "semantic", "content": "Tabs.", "labels": {"lang": "go"}}},
            {
                "op": "activate",
                "node_id": "a",
                "expected_revision": 1,
                "evidence": [{"uri": "r://1", "digest": "d", "kind": "manual"}],
            },
        ],
    }
    change = parse_change_set(data)
    assert parse_change_set(change.as_dict()).digest() == change.digest()
    assert "occurred_at" not in change.as_dict()
    other = {**data, "operations": [data["operations"][0]]}  # type: ignore[index]
    assert parse_change_set(other).digest() != change.digest()
    assert run({}, *change.operations)[0].status == "active"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(extra=1),
        lambda d: d.update(operations="nope"),
        lambda d: d["operations"].append({"op": "delete", "node_id": "a", "expected_revision": 1}),
        lambda d: d["operations"].append(
            {"op": "set_status", "node_id": "a", "expected_revision": True, "status": "tombstoned"}
        ),
        lambda d: d["operations"].append(
            {"op": "set_status", "node_id": "a", "expected_revision": 0, "status": "tombstoned"}
        ),
        lambda d: d["operations"][0]["node"].update(colour="red"),
        lambda d: d["namespace"].update(scope=""),
        lambda d: d.update(occurred_at="yesterday"),
    ],
)
def test_parse_refuses_malformed_json(mutate: object) -> None:
    data: dict[str, object] = {
        "namespace": {"tenant": "acme", "principal": "alice", "scope": "repo"},
        "idempotency_key": "k",
        "operations": [{"op": "create", "node": {"id": "a", "kind": "semantic", "content": "Tabs."}}],
    }
    mutate(data)  # type: ignore[operator]
    with pytest.raises(MemoryStoreError) as info:
        parse_change_set(data)
    assert info.value.code == "invalid_change_set"
