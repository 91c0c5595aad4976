"""Shared pieces of the A3S durable-memory evaluations (fixtures copied under bench/data/a3s, MIT).

A deterministic model stands in for the LLM: it sees the turn's context block and
succeeds only when the expected memory text is in it, as A3S's evaluation clients do.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from gitmem.durable import DurableRepository, Namespace
from gitmem.session.runner import TurnContext

DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "a3s"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    return data


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def create(node_id: str, content: str, status: str, *, kind: str = "procedural", fixture_name: str) -> dict[str, Any]:
    """A create operation as the A3S fixtures seed nodes: active ones on verification evidence."""
    evidence_kind = "verification" if status == "active" else "session_turn"
    uri = f"a3s://fixture/{fixture_name}/{node_id}"
    return {
        "op": "create",
        "node": {
            "id": node_id,
            "kind": kind,
            "content": content,
            "status": status,
            "evidence": [{"uri": uri, "digest": sha(content), "kind": evidence_kind}],
        },
    }


def seed(repo: DurableRepository, ns: Namespace, key: str, *ops: dict[str, Any]) -> None:
    repo.apply({"namespace": ns.as_dict(), "idempotency_key": key, "operations": list(ops)})


class Model:
    """The deterministic model: one call per turn, PASS when ``expected`` is in its context."""

    def __init__(self, expected: dict[str, str], forbidden: tuple[str, ...] = ()) -> None:
        self.expected = expected  # prompt -> the content that must be in the context
        self.forbidden = forbidden
        self.calls: list[TurnContext] = []

    def __call__(self, context: TurnContext) -> str:
        self.calls.append(context)
        want = self.expected.get(context.prompt)
        if want is None:
            raise AssertionError(f"unknown evaluation query {context.prompt!r}")
        ok = want in context.memory_block and not any(f in context.memory_block for f in self.forbidden)
        return "PASS" if ok else "MISS"

    def forbidden_hits(self) -> int:
        return sum(any(f in c.memory_block for f in self.forbidden) for c in self.calls)
