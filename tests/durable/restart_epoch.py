"""One process epoch of the restart-endurance evaluation: four agents resume and run two turns each.

Argument: a JSON object ``{"root", "session_root", "epoch"}``. Every agent binds
(first epoch) or resumes (later ones) its session with the same binding, runs
two turns with admission, and the process prints one JSON object: the context
ids, what each model context held, how many sessions were resumed and the
binding records as saved.
"""

from __future__ import annotations

import json
import sys

from gitmem.durable import DurableRepository, Namespace, RecallPolicy
from gitmem.session.location import open_session_memory
from gitmem.session.runner import SessionRunner, TurnContext

NS = Namespace("beacon-tenant", "beacon-team", "shared-workspace")


def main() -> None:
    args = json.loads(sys.argv[1])
    with open(args["fixture"], encoding="utf-8") as fh:
        fx = json.load(fh)
    repo = DurableRepository.open(args["root"], "team")
    seen: list[dict[str, object]] = []
    resumed = 0
    for agent in fx["agents"]:
        session = agent["session_id"]
        resumed += repo.sessions.load(session) is not None
        binding = repo.bind_session(session, NS, RecallPolicy(3, 0.2))

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
            seen[-1]["durable"] = [(m.id, m.revision) for m in result.recall.memories if m.layer == "durable"]
        runner.close()
    records = {a["session_id"]: repo.sessions.load(a["session_id"]) for a in fx["agents"]}
    print(json.dumps({"epoch": args["epoch"], "contexts": seen, "resumed": resumed, "records": records}))


if __name__ == "__main__":
    main()
