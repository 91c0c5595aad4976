"""Run as a separate process by test_recall_processes: write, edit and delete items in a memory."""

from __future__ import annotations

import json
import sys

from gitmem.errors import MemoryStoreError
from gitmem.gitstore import SyncGitFileStore


def main(repo: str, name: str, count: int) -> None:
    store = SyncGitFileStore.open(repo)
    for n in range(count):
        path = f"items/{name}/{n % 15:02}.json"
        try:
            current: str | None = store.read(path).version
        except MemoryStoreError:
            current = None
        if n % 7 == 6 and current is not None:
            store.delete(path, expected=current)
            continue
        body = {"id": f"{name}-{n % 15:02}", "text": f"{name} writes note {n} about canary deploys", "updated_at": n}
        body["status"] = "active"
        store.write(path, json.dumps(body) + "\n", expected=current)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
