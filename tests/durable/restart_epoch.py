"""One process epoch of the restart-endurance evaluation: four agents resume and run two turns each.

Argument: a JSON object ``{"root", "session_root", "epoch", "fixture", "stale", "sabotage"}``.
Every agent binds (first epoch) or resumes (later ones) its session with the same
binding, runs two turns with admission, and the process prints one JSON object:
its pid (so the test counts the processes that really opened the repository), the
context ids and run ids, what each model context held, how many sessions were
resumed, what an admission of the stale revision ``stale`` (when given) let through,
and the binding records as saved.

``sabotage`` names faults the evaluation must catch (its own tests use them):
``context_counter`` numbers contexts in memory from 1 in every process, as a host
whose counter died with the process would; ``stale_admission`` admits whatever
was recalled without re-reading it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from gitmem.durable import DurableRepository, Namespace, RecallPolicy
from gitmem.durable.binding import DurableBinding
from gitmem.session.binding import RecalledNode
from gitmem.session.location import open_session_memory
from gitmem.session.runner import SessionRunner, TurnContext

NS = Namespace("beacon-tenant", "beacon-team", "shared-workspace")


def run_epoch(args: dict[str, Any]) -> dict[str, Any]:
    with open(args["fixture"], encoding="utf-8") as fh:
        fx = json.load(fh)
    sabotage = set(args.get("sabotage", ()))
    repo = DurableRepository.open(args["root"], "team")
    if "context_counter" in sabotage:
        counters: dict[str, int] = {}

        def next_context(session_id: str) -> int:
            counters[session_id] = counters.get(session_id, 0) + 1
            return counters[session_id]

        repo.sessions.next_context = next_context  # type: ignore[method-assign]
    seen: list[dict[str, object]] = []
    resumed = 0
    stale_admitted: list[list[object]] = []
    for agent in fx["agents"]:
        session = agent["session_id"]
        resumed += repo.sessions.load(session) is not None
        binding = DurableBinding.for_session(repo, session, NS, RecallPolicy(3, 0.2))
        if "stale_admission" in sabotage:
            binding.admit = lambda recalled, *, turn_id: list(recalled)  # type: ignore[method-assign]

        def model(context: TurnContext, agent: dict[str, str] = agent) -> str:
            seen.append({"agent": agent["id"], "block": context.memory_block})
            return "ok"

        runner = SessionRunner(
            open_session_memory(f"{args['session_root']}/{agent['id']}"),
            model,
            workspace="/w",
            session_id=session,
            durable=binding,
            admission=binding,
        )
        for _ in range(fx["turns_per_agent_per_epoch"]):
            result = runner.turn(fx["query"])
            seen[-1]["context_id"] = result.context_id
            seen[-1]["run_id"] = runner.origin.run_id
            seen[-1]["durable"] = [(m.id, m.revision) for m in result.recall.memories if m.layer == "durable"]
        runner.close()
        if args.get("stale") is not None:  # a context assembled before the revision reaches admission after it
            node_id, revision = args["stale"]
            old = RecalledNode(node_id, revision, "(as recalled before the revision)", 1.0)
            let_through = binding.admit([old], turn_id=f"stale-{args['epoch']}-{agent['id']}")
            stale_admitted += [[n.node_id, n.revision] for n in let_through]
    records = {a["session_id"]: repo.sessions.load(a["session_id"]) for a in fx["agents"]}
    return {
        "epoch": args["epoch"],
        "pid": os.getpid(),
        "contexts": seen,
        "resumed": resumed,
        "stale_checked": args.get("stale") is not None,
        "stale_admitted": stale_admitted,
        "records": records,
    }


def main() -> None:
    print(json.dumps(run_epoch(json.loads(sys.argv[1]))))


if __name__ == "__main__":
    main()
