"""A separate process that remembers texts in a session memory once ``go`` exists (race tests)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from gitmem.session.location import open_session_memory


def main() -> None:
    args = json.loads(sys.argv[1])
    memory = open_session_memory(args["dir"])
    go = Path(args["go"])
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("never released")
        time.sleep(0.001)
    if args.get("loop"):  # remember and recall until killed, acknowledging each item
        with open(args["out"], "a") as acks:
            n = 0
            while True:
                item = memory.remember(f"{args['tag']} loop lesson {n % 7}: keep the release checklist current")
                memory.recall_similar("release checklist", 3)
                acks.write(item.id + "\n")
                acks.flush()
                n += 1
    out = []
    for text in args["texts"]:
        item = memory.remember(text, importance=args["importance"], tags=[args["tag"]])
        out.append(item.id)
    Path(args["out"]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
