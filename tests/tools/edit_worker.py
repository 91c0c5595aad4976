"""A separate process that edits its own lines of one shared file through the tools.

Usage: edit_worker.py '<json args>'; prints one JSON result per edit on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time

from gitmem import SyncGitFileStore
from gitmem.model import Origin
from gitmem.tools import FileMemoryCapability, FileMemoryLimits, FileMount


def main(args: dict[str, object]) -> None:
    store = SyncGitFileStore.open(str(args["repo"]))
    memory = FileMemoryCapability(
        [FileMount("shared", store, "write")], limits=FileMemoryLimits(write_retries=int(str(args["retries"])))
    )
    wid = int(str(args["wid"]))
    go = str(args["go"])
    while not os.path.exists(go):
        time.sleep(0.002)
    for i in range(int(str(args["edits"]))):
        result = memory.call(
            "memory_file_edit",
            {
                "memory": "shared",
                "path": "board.md",
                "old_string": f"w{wid}-{i}: todo",
                "new_string": f"w{wid}-{i}: done",
            },
            tool_call_id=f"w{wid}-{i}",
            origin=Origin(run_id=f"worker-{wid}"),
        )
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
