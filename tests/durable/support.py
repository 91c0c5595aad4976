"""Shared helpers for the durable tests: namespaces, evidence, change sets, the git CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from gitmem.durable.namespace import Namespace
from gitmem.durable.nodefile import DURABLE_FORMAT
from gitmem.memstore import InMemoryFileStore

NS = Namespace("acme", "alice", "repo-gitmem")
OTHER = Namespace("acme", "bob", "repo-gitmem")
TURN = {"uri": "turn://42", "digest": "sha256:aa", "kind": "session_turn"}
MANUAL = {"uri": "review://pr/7", "digest": "sha256:bb", "kind": "manual"}


def memory_store() -> InMemoryFileStore:
    """The seam's in-memory twin with a durable mount's limits: the repository without git."""
    return InMemoryFileStore(DURABLE_FORMAT)


def ns_json(ns: Namespace = NS) -> dict[str, str]:
    return ns.as_dict()


def create(
    node_id: str, content: str, *, status: str = "candidate", evidence: list[dict[str, str]] | None = None, **extra: Any
) -> dict[str, Any]:
    node: dict[str, Any] = {"id": node_id, "kind": "semantic", "content": content, "status": status}
    node["evidence"] = evidence if evidence is not None else ([TURN, MANUAL] if status == "active" else [TURN])
    node.update(extra)
    return {"op": "create", "node": node}


def activate(node_id: str, revision: int, uri: str = "review://pr/8", kind: str = "manual") -> dict[str, Any]:
    return {
        "op": "activate",
        "node_id": node_id,
        "expected_revision": revision,
        "evidence": [{"uri": uri, "digest": "sha256:cc", "kind": kind}],
    }


def change(key: str, *ops: dict[str, Any], ns: Namespace = NS) -> dict[str, Any]:
    return {"namespace": ns_json(ns), "idempotency_key": key, "operations": list(ops)}


def git(repo: str | Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def commits(repo: str | Path) -> int:
    return int(git(repo, "rev-list", "--count", "main"))


def fsck(repo: str | Path) -> None:
    git(repo, "fsck", "--strict", "--no-dangling")


#: One item a durable memory takes as a candidate (what an agent proposes in the tests).
ITEM = {
    "content": "Run make itest before tagging a release of the API.",
    "memory_type": "procedural",
    "source": "workflow",
    "scope": "workspace",
    "reason": "Tagging without it shipped a broken release once.",
    "importance": 0.8,
    "confidence": 0.9,
}
