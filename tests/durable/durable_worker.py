"""A separate process that applies change sets to a durable mount, for the race tests.

Argument: one JSON object ``{"root", "name", "changes": [...], "go", "out"}``, or
``@FILE`` naming a file that holds it.
It waits for the file ``go`` to exist (so all workers start together), applies
each change set in turn and writes one JSON line per change set to ``out``:
``{"refs", "commit", "replayed"}`` or ``{"error": code}``.
"""

from __future__ import annotations

import json
import os
import sys
import time

from gitmem.durable.repository import DurableRepository
from gitmem.errors import MemoryStoreError


def main() -> None:
    raw = sys.argv[1]
    if raw.startswith("@"):
        with open(raw[1:], encoding="utf-8") as fh:
            raw = fh.read()
    args = json.loads(raw)
    repo = DurableRepository.open(args["root"], args["name"])
    deadline = time.monotonic() + 60
    while not os.path.exists(args["go"]):
        if time.monotonic() > deadline:
            raise SystemExit("never told to go")
        time.sleep(0.001)
    with open(args["out"], "w") as out:
        for change in args["changes"]:
            try:
                result = repo.apply(change)
                line = {"refs": list(result.refs), "commit": result.commit, "replayed": result.replayed}
            except MemoryStoreError as exc:
                line = {"error": exc.code}
            out.write(json.dumps(line) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
