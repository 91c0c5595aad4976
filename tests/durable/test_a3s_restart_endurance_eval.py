"""A3S ``durable-memory-restart-endurance-v1``: four agents, two turns, three process epochs.

Each epoch is a real process that opens the repository, resumes the four
persisted sessions (binding checked, fail closed) and runs two turns each with
admission. Before the last epoch the active node is revised. Every gate is
computed from what the processes and the repository did (:func:`gates`):

- 24 model calls and 24 distinct model contexts with 24 admissions, although
  every epoch's runs reuse their run ids (the fixture retains one run,
  ``max_runs_retained: 1``): a context counter that restarted with the process
  would collapse epochs into each other;
- no candidate or foreign node in any context; the revised node served at its
  current revision, its history kept; a context assembled at the old revision is
  rejected at admission in the last epoch (nothing of it admitted);
- 8 session resumes and the binding records restored exactly;
- 4 repository opens: the distinct child processes that reported serving
  contexts (their pids checked against the processes started) and the final read.

A sabotaged run - a context counter kept in memory, an admission that does not
re-read - fails the gates it should (``test_a_sabotaged_run_fails_its_gates``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from gitmem.durable import DurableRepository, Namespace

from .a3s_evals import DATA, create, fixture, seed, sha
from .support import fsck

NAME = "durable-memory-restart-endurance-v1"
NS = Namespace("beacon-tenant", "beacon-team", "shared-workspace")
FOREIGN = Namespace("beacon-tenant", "foreign-principal", "shared-workspace")
WORKER = Path(__file__).with_name("restart_epoch.py")


def epoch(root: Path, sessions: Path, n: int, stale: list[object] | None, sabotage: list[str]) -> dict[str, Any]:
    """Run epoch ``n`` in a new process; its report, with the pid the test started it as."""
    arg = json.dumps(
        {"root": str(root), "session_root": str(sessions), "epoch": n, "fixture": str(DATA / f"{NAME}.json"),
         "stale": stale, "sabotage": sabotage}
    )  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), arg], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    report: dict[str, Any] = json.loads(out)
    report["started_pid"] = proc.pid
    return report


def run(tmp_path: Path, sabotage: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]], Path]:
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
    results = []
    for n in range(fx["epochs"]):
        stale = None
        if n == fx["epochs"] - 1:  # revise the active node before the final epoch
            revise = {
                "op": "revise",
                "node_id": active["id"],
                "expected_revision": 1,
                "content": second,
                "evidence": [{"uri": "a3s://fixture/restart/revision", "digest": sha(second), "kind": "verification"}],
            }
            seed(owner, NS, "revise-beacon", revise)
            stale = [active["id"], 1]  # what the earlier epochs recalled, now one revision behind
        results.append(epoch(root, sessions, n, stale, sabotage))
    return fx, results, root


def gates(fx: dict[str, Any], results: list[dict[str, Any]], root: Path) -> dict[str, bool]:
    """Each gate of the fixture, computed from the epochs' reports and the repository (True: it holds)."""
    t = fx["thresholds"]
    active, cand, other = fx["active_node"], fx["candidate_node"], fx["foreign_node"]
    first, second = active["revisions"]
    contexts = [c for r in results for c in r["contexts"]]
    last = fx["turns_per_agent_per_epoch"] * len(fx["agents"])
    run_ids: dict[str, set[str]] = {}
    for c in contexts:
        run_ids.setdefault(c["agent"], set()).add(c["run_id"])
    children = {r["pid"] for r in results if r["pid"] == r["started_pid"] and r["contexts"]}
    final = DurableRepository.open(root, "team")  # the last read generation
    return {
        "model_calls": len(contexts) == t["expected_model_calls"],
        "distinct_contexts": len({c["context_id"] for c in contexts if c["context_id"]}) == t["expected_model_calls"],
        # run ids were reused across the epochs (no more retained than the fixture allows), contexts stayed distinct
        "run_ids_reused": len(run_ids) == len(fx["agents"])
        and all(len(ids) <= fx["max_runs_retained"] for ids in run_ids.values()),
        "forbidden_context_hits": sum(cand["content"] in c["block"] or other["content"] in c["block"] for c in contexts)
        <= t["maximum_forbidden_context_hits"],
        "served_revisions": all(c["durable"] == [[active["id"], 1]] and first in c["block"] for c in contexts[:-last])
        and all(c["durable"] == [[active["id"], 2]] and second in c["block"] for c in contexts[-last:]),
        "stale_rejected": any(r["stale_checked"] for r in results)
        and all(r["stale_admitted"] == [] for r in results if r["stale_checked"]),
        "session_resumes": sum(r["resumed"] for r in results) == t["expected_session_resumes"],
        "records_restored": all(r["records"] == results[0]["records"] for r in results),
        "repository_opens": len(children) + 1 == t["expected_repository_opens"],
        "admissions": final.usage(NS, active["id"]).admissions == t["expected_admissions"],
        "candidate_admissions": final.usage(NS, cand["id"]).admissions == t["expected_candidate_admissions"],
        "foreign_admissions": final.usage(FOREIGN, other["id"]).admissions == 0,
        "history_kept": [r.node.content for r in final.history(NS, active["id"])] == [second, first],
    }


def test_restart_endurance_v1(tmp_path: Path) -> None:
    fx, results, root = run(tmp_path, [])
    held = gates(fx, results, root)
    assert all(held.values()), [name for name, ok in held.items() if not ok]
    fsck(root / "team.git")


def test_a_sabotaged_run_fails_its_gates(tmp_path: Path) -> None:
    """A context counter that restarts with the process, and an admission that does not re-read, are caught."""
    fx, results, root = run(tmp_path, ["context_counter", "stale_admission"])
    held = gates(fx, results, root)
    assert not held["distinct_contexts"] and not held["stale_rejected"] and not held["admissions"]
    # the gates that do not depend on the sabotage still hold: they are not failing for another reason
    assert held["model_calls"] and held["forbidden_context_hits"] and held["repository_opens"]
    # epochs that did not run in processes of their own do not count as repository opens
    in_process = [{**r, "started_pid": -1} for r in results]
    assert not gates(fx, in_process, root)["repository_opens"]
