"""A separate process for the record race tests: ``add`` records or ``follow`` them with a cursor.

Usage: ``python record_worker.py '{"mode": ..., "root": ..., "namespace": ..., "out": ...}'``.
Each acknowledged id is one line in ``out``, written after the call returned.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from gitmem import Root
from gitmem.records import RecordStore
from gitmem.records.rules import encode_cursor


def main() -> None:
    args = json.loads(sys.argv[1])
    store = RecordStore(Root(args["root"]).mount("facts", kind="record").sync, args["namespace"])
    out = Path(args["out"]).open("a", buffering=1)
    if args["mode"] == "add":
        for i in range(args["count"]):
            record = store.add(f"{args['tag']} record {i} about tea")
            out.write(record.id + "\n")
        return
    # follow: page through the namespace from a cursor, again and again, until the
    # stop file appears; then one last pass. Every id seen is written once per sighting.
    stop = Path(args["stop"])
    last: str | None = None
    final = False
    while True:
        cursor = encode_cursor(store.folder, last) if last else None
        page = store.list(limit=7, cursor=cursor)
        for record in page.records:
            out.write(record.id + "\n")
            last = record.id
        if page.next_cursor is None:
            if final:
                return
            if stop.exists():
                final = True
            time.sleep(0.002)


if __name__ == "__main__":
    main()
