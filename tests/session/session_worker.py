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
    out = []
    for text in args["texts"]:
        item = memory.remember(text, importance=args["importance"], tags=[args["tag"]])
        out.append(item.id)
    Path(args["out"]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
