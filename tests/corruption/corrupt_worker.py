"""Runs every store call on one memory and writes one JSON line per call (the parent holds the timeout).

Usage: ``python corrupt_worker.py``, a fork server: it imports the store's libraries
once, then for each JSON line ``{"repo": R, "cursor": C, "out": F, "timeout": S}`` on
stdin forks a child that runs the calls on ``R`` with its lines going to file ``F``,
kills the child (and the git it started) if it has not ended after ``S`` seconds, and
answers ``{"timeout": bool, "status": int | None}``. A line is written *before* each call
too, so a parent told of a time-out knows which call hung. A damaged object can hang libgit2
holding the GIL, so every memory still gets a process of its own; only the interpreter
start (a second of imports, paid by each of the corruption tests) is shared.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import IO, Any

from gitmem import GitFileStore, MemoryStoreError

#: What the calls load on their first use; imported by the fork server before any fork.
PRELOAD = ("pygit2", "whoosh", "regex", "asyncio", "subprocess", "gitmem.gitstore", "gitmem.index.engine", "gitmem.grep")


def run_calls(repo: str, cursor: str, out: IO[str]) -> None:
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
        print(json.dumps({"start": name}), file=out, flush=True)
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
        print(json.dumps(line), file=out, flush=True)


def run_forked(job: dict[str, Any]) -> dict[str, Any]:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setpgid(0, 0)  # a group of its own: a time-out kills the git it started too
            with open(job["out"], "w", encoding="utf-8") as out:
                run_calls(job["repo"], job["cursor"], out)
        except BaseException:
            traceback.print_exc()
            code = 3
        finally:
            os._exit(code)
    deadline = time.monotonic() + float(job["timeout"])
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"timeout": False, "status": os.waitstatus_to_exitcode(status)}
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"timeout": True, "status": None}
        time.sleep(0.005)


def serve() -> None:
    for name in PRELOAD:
        with contextlib.suppress(ImportError):  # a module gone from gitmem is simply not preloaded
            importlib.import_module(name)
    print(json.dumps({"ready": True}), flush=True)
    for raw in sys.stdin:
        print(json.dumps(run_forked(json.loads(raw))), flush=True)


if __name__ == "__main__":
    serve()
