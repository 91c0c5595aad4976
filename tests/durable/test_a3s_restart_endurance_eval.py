"""A3S ``durable-memory-restart-endurance-v1``: four agents, two turns, three process epochs.

Each epoch is a real process that opens the repository, resumes the four
persisted sessions (binding checked, fail closed) and runs two turns each with
admission. Before the last epoch the active node is revised. Gates: 24 model
calls and 24 distinct model contexts with 24 admissions (a context counter that
restarted with the process would collapse epochs into each other), no candidate
or foreign node in any context, the revised node served at its current revision,
its history kept, 8 session resumes, 4 repository opens (3 epochs and a final
read) and the binding records restored exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gitmem.durable import DurableRepository, Namespace

from .a3s_evals import DATA, create, fixture, seed, sha
from .support import fsck

NAME = "durable-memory-restart-endurance-v1"
NS = Namespace("beacon-tenant", "beacon-team", "shared-workspace")
FOREIGN = Namespace("beacon-tenant", "foreign-principal", "shared-workspace")
WORKER = Path(__file__).with_name("restart_epoch.py")


def epoch(root: Path, sessions: Path, n: int) -> dict[str, object]:
    arg = json.dumps(
        {"root": str(root), "session_root": str(sessions), "epoch": n, "fixture": str(DATA / f"{NAME}.json")}
    )
    done = subprocess.run([sys.executable, str(WORKER), arg], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout)
    return out


def test_restart_endurance_v1(tmp_path: Path) -> None:
    fx = fixture(NAME)
    root, sessions = tmp_path / "root", tmp_path / "sessions"
    owner = DurableRepository.open(root, "team", create=True)
    active, cand, other = fx["active_node"], fx["candidate_node"], fx["foreign_node"]
    first, second = active["revisions"]
    seed(
        owner,
        NS,
        "seed-restart",
        create(active["id"], first, "active", fixture_name=NAME),
        create(cand["id"], cand["content"], "candidate", fixture_name=NAME),
    )
    seed(owner, FOREIGN, "seed-foreign", create(other["id"], other["content"], "active", fixture_name=NAME))
    opens = 0
    results = []
    for n in range(fx["epochs"]):
        if n == fx["epochs"] - 1:  # revise the active node before the final epoch
            revise = {
                "op": "revise",
                "node_id": active["id"],
                "expected_revision": 1,
                "content": second,
                "evidence": [{"uri": "a3s://fixture/restart/revision", "digest": sha(second), "kind": "verification"}],
            }
            seed(owner, NS, "revise-beacon", revise)
        results.append(epoch(root, sessions, n))
        opens += 1
    contexts = [c for r in results for c in r["contexts"]]  # type: ignore[attr-defined]
    gates = fx["thresholds"]
    assert len(contexts) == gates["expected_model_calls"] == 24
    assert len({c["context_id"] for c in contexts}) == 24
    forbidden = sum(cand["content"] in c["block"] or other["content"] in c["block"] for c in contexts)
    assert forbidden == gates["maximum_forbidden_context_hits"] == 0
    last = fx["turns_per_agent_per_epoch"] * len(fx["agents"])
    assert all(c["durable"] == [[active["id"], 1]] and first in c["block"] for c in contexts[:-last])
    assert all(c["durable"] == [[active["id"], 2]] and second in c["block"] for c in contexts[-last:])
    assert sum(r["resumed"] for r in results) == gates["expected_session_resumes"] == 8  # type: ignore[misc]
    assert results[0]["records"] == results[1]["records"] == results[2]["records"]  # restored exactly

    final = DurableRepository.open(root, "team")  # the fourth read generation
    opens += 1
    assert opens == gates["expected_repository_opens"] == 4
    assert final.usage(NS, active["id"]).admissions == gates["expected_admissions"] == 24
    assert final.usage(NS, cand["id"]).admissions == gates["expected_candidate_admissions"] == 0
    assert final.usage(FOREIGN, other["id"]).admissions == 0
    assert [r.node.content for r in final.history(NS, active["id"])] == [second, first]  # history kept
    fsck(root / "team.git")
