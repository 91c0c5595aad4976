"""A separate process for the framework race tests.

Usage: ``python fw_worker.py '{"mode": "put" | "add" | "pop" | "compact", "root": ..., "tag": ..., "count": N, "out": ...}'``.
``put`` puts N LangGraph items under its tag; ``add`` appends N items to one Agents SDK
session; ``pop`` pops until the session is empty; ``compact`` N times adds a pair of
items (acknowledged as ``<tag>-<i>-added``) and replaces that pair with a summary
through the SDK's compaction snapshot.
Each acknowledged key, popped item or summary is one line in ``out``, written after
the call returned. All start when ``go`` exists.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path


def main() -> None:
    # each mode imports only its framework: a process start is most of what these tests wait for
    args = json.loads(sys.argv[1])
    out = Path(args["out"]).open("a", buffering=1)
    go = Path(args["go"])
    while not go.exists():
        time.sleep(0.005)
    if args["mode"] == "put":
        from gitmem.adapters.langgraph_store import GitMemStore
        from gitmem.model import Origin

        store = GitMemStore.open(args["root"], origin=Origin(run_id=args["tag"], principal_id="worker"))
        for i in range(args["count"]):
            key = f"{args['tag']}-{i}"
            store.put(("race", args["tag"] if i % 2 else "shared"), key, {"text": f"note {i} from {args['tag']}"})
            out.write(key + "\n")
        return
    from gitmem.adapters.openai_session import GitMemSession

    session = GitMemSession.open("race", args["root"])
    if args["mode"] == "add":
        for i in range(args["count"]):
            asyncio.run(session.add_items([{"role": "user", "content": f"{args['tag']}-{i}"}]))
            out.write(f"{args['tag']}-{i}\n")
        return
    if args["mode"] == "compact":

        async def compact(i: int) -> bool:
            snapshot = await session._get_compaction_snapshot(2)
            assert snapshot is not None
            summary = {"type": "compaction", "id": f"{args['tag']}-s{i}", "encrypted_content": "summary"}
            return await snapshot.replace_suffix(0, [summary])

        for i in range(args["count"]):
            pair = [
                {"role": "user", "content": f"{args['tag']}-{i}-a"},
                {"role": "assistant", "content": f"{args['tag']}-{i}-b"},
            ]
            asyncio.run(session.add_items(pair))
            out.write(f"{args['tag']}-{i}-added\n")
            assert asyncio.run(compact(i))
            out.write(f"{args['tag']}-s{i}\n")
        return
    while True:
        item = asyncio.run(session.pop_item())
        if item is None:
            return
        out.write(item["content"] + "\n")


if __name__ == "__main__":
    main()
