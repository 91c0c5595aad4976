"""Runs every store call on one memory and prints one JSON line per call (the parent holds the timeout).

Usage: ``python corrupt_worker.py REPO CURSOR``. A line is printed *before* each
call too, so a parent that times out knows which call hung.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from gitmem import GitFileStore, MemoryStoreError


def main() -> None:
    repo, cursor = sys.argv[1], sys.argv[2]
    store = GitFileStore.open(repo).sync
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("read", lambda: store.read("notes/a.md")),
        ("read_other", lambda: store.read("b.md")),
        ("read_short_rev", lambda: store.read("notes/a.md", rev=store.head()[:10])),
        ("list", store.list),
        ("read_under", lambda: store.read_under("notes/")),
        ("search", lambda: store.search("memory")),
        ("search_regex", lambda: store.search("mem.ry", regex=True)),
        ("find", lambda: store.find("memory")),
        ("index_status", store.index_status),
        ("rebuild_index", store.rebuild_index),
        ("log", store.log),
        ("log_path", lambda: store.log("notes/a.md")),
        ("changes_full", lambda: store.changes(None)),
        ("changes_since", lambda: store.changes(cursor)),
        ("show", lambda: store.show(cursor, "notes/a.md")),
        ("diff", lambda: store.diff(cursor)),
        ("blame", lambda: store.blame("notes/a.md")),
        ("write_other", lambda: store.write("c.md", "a new memory\n", expected=None)),
        ("write_same", lambda: store.write("notes/a.md", "replaced\n", expected="0" * 40)),
        ("fsck", lambda: store.fsck()),
    ]
    for name, call in calls:
        print(json.dumps({"start": name}), flush=True)
        try:
            result = call()
        except MemoryStoreError as exc:
            line = {"call": name, "code": exc.code, "message": exc.message}
        except Exception as exc:  # the test fails on these: report, do not die
            line = {"call": name, "crash": f"{type(exc).__name__}: {exc}"}
        else:
            line = {"call": name, "ok": True}
            if name == "fsck":
                line.update(fsck_ok=result.ok, messages=list(result.messages))
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
