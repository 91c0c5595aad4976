"""One writer process for the cross-process group commit tests (``test_spool.py``).

Argument: a JSON object with ``repo``, ``path``, ``text``, ``expected`` (a version
or ``null``), ``acks`` (a file for the outcome: ``ok <version>`` or ``err <code>``),
``signals`` (a folder) and optionally ``hooks``: ``{point: "kill" | "wait"}``. At a
hooked point of a round (:data:`gitmem.git.spool.hook`) the worker touches
``signals/at-<point>``; then ``kill`` SIGKILLs itself, ``wait`` waits for
``signals/go-<point>``. ``lock_timeout`` sets the writer lock timeout.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git import spool


def main() -> None:
    args = json.loads(sys.argv[1])
    signals = args["signals"]
    hooks: dict[str, str] = args.get("hooks", {})

    def hook(point: str) -> None:
        action = hooks.get(point)
        if action is None:
            return
        with open(os.path.join(signals, f"at-{point}"), "w"):
            pass
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(signals, f"go-{point}")) and time.monotonic() < deadline:
            time.sleep(0.002)

    spool.hook = hook
    store = GitFileStore.open(args["repo"]).sync
    if "lock_timeout" in args:
        store.repo.lock_timeout = args["lock_timeout"]
    try:
        version = store.write(args["path"], args["text"], expected=args["expected"])
        line = f"ok {version}\n"
    except MemoryStoreError as exc:
        line = f"err {exc.code}\n"
    with open(args["acks"], "a") as out:
        out.write(line)


if __name__ == "__main__":
    main()
