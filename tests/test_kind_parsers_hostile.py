"""Every kind's parser of a memory file meets hostile fields with its one error type, never another exception.

A file in a memory is anyone's who can push to it. Each field of a LangGraph item,
a session item, a durable node, an idempotency record, an erasure ledger entry and
an Agents SDK session head is replaced (a few at a time, seeded) by values of the
wrong type or out of range; the parser must answer with the error its kind turns
into a skip or a clear refusal (``ValueError`` or ``MemoryStoreError``), never a
``TypeError``, ``AttributeError``, ``OverflowError`` or ``RecursionError`` that
would escape a catalogue and fail every search.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from gitmem.adapters.langgraph_items import FORMAT, item_path, parse
from gitmem.durable.namespace import Namespace
from gitmem.durable.node import Evidence, Node, Relation
from gitmem.durable.nodefile import KeyRecord, decode_node, encode_node, node_path
from gitmem.errors import MemoryStoreError
from gitmem.git.erasures import Entry
from gitmem.model import FileText
from gitmem.session.items import ITEM_SCHEMA, decode_item

HOSTILE: list[Any] = [
    None, True, 0, -1, 1.5, 1e308, 10**30, 10**400, "x", "", "9" * 5000, [], [1], [[[[]]]], {}, {"a": 1}, {"": None},
    "2026-01-01T00:00:00", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00",
    json.loads("[" * 90 + "]" * 90),
]  # fmt: skip
ROUNDS = 400


def mutations(base: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for _ in range(ROUNDS):
        record = dict(base)
        for key in rng.sample(sorted(base), rng.randint(1, 3)):
            record[key] = rng.choice(HOSTILE)
        out.append(record)
    return out


def only(allowed: type[Exception], call: Callable[[], object]) -> None:
    try:
        call()
    except allowed:
        pass


WHEN = "2026-01-01T00:00:00+00:00"
CASES: dict[str, tuple[dict[str, Any], type[Exception], Callable[[str], object]]] = {
    "langgraph item": (
        {"format": FORMAT, "namespace": ["u", "a"], "key": "k", "value": {}, "created_at": WHEN, "updated_at": WHEN,
         "ttl_minutes": 5, "expires_at": WHEN, "index": ["text"]},
        ValueError,
        lambda text: parse(FileText(item_path(("u", "a"), "k"), text, "v")),
    ),
    "session item": (
        {"schema": ITEM_SCHEMA, "id": "abc", "content": "hello", "timestamp": "2026-01-01T00:00:00Z",
         "importance": 0.5, "tags": [], "memory_type": "episodic", "metadata": {}},
        ValueError,
        decode_item,
    ),
    "idempotency record": (
        {"key": "k", "digest": "d", "occurred_at": WHEN, "nodes": ["n@1"]},
        MemoryStoreError,
        lambda text: KeyRecord.decode(text, "keys/k.json"),
    ),
    "erasure ledger entry": (
        {"id": "e1", "kind": "forget", "at": WHEN, "by": "alice", "names": ["a.md"], "blobs": [], "tips": []},
        MemoryStoreError,
        Entry.from_json,
    ),
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_json_memory_file_with_hostile_fields_is_refused_with_its_kind_error(kind: str) -> None:
    base, allowed, parser = CASES[kind]
    for record in mutations(base, seed=len(kind)):
        only(allowed, lambda record=record: parser(json.dumps(record)))  # type: ignore[misc]


def test_a_durable_node_file_with_hostile_field_lines_is_invalid_file() -> None:
    ns = Namespace("acme", "alice", "repo")
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    node = Node(
        id="n1", namespace=ns, revision=2, kind="semantic", status="active", content="c\n", confidence=0.8,
        importance=0.9, created_at=moment, updated_at=moment, revision_kind="activated",
        evidence=(Evidence("review://1", "sha256:ab", "manual", moment),),
        relations=(Relation("related_to", "other"),), labels=(("lang", "go"),),
    )  # fmt: skip
    lines = encode_node(node).split("\n")
    fields = [i for i, line in enumerate(lines) if ": " in line and line.split(": ")[0].isidentifier()]
    rng = random.Random(7)
    for _ in range(ROUNDS):
        spoilt = list(lines)
        for i in rng.sample(fields, rng.randint(1, 2)):
            spoilt[i] = f"{spoilt[i].split(': ')[0]}: {json.dumps(rng.choice(HOSTILE))}"
        only(MemoryStoreError, lambda spoilt=spoilt: decode_node("\n".join(spoilt), node_path(ns, "n1")))  # type: ignore[misc]
