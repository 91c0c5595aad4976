"""A searching process for the index race test: ``python index_worker.py REPO WORKDIR NAME REBUILD_EVERY``.

It searches until ``WORKDIR/stop`` exists (then a few more times), and checks
every answer against a full scan: the head is read before and after each
search, and the answer must equal the scan at one of the commits in between
(writers keep moving the head meanwhile). Every ``REBUILD_EVERY``-th search it
rebuilds the index from scratch (0: never), while the other process reads it.
It prints one JSON line: searches, rebuilds, mismatches. Anything unexpected
ends it with a traceback and a non-zero status.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gitmem import GitFileStore
from gitmem.fileformat import decode_stored
from gitmem.grep import compile_pattern, scan
from gitmem.model import SearchResult

QUERIES = [("amber", False, False), ("Teal", False, True), ("note 1", False, False), (r"colou?r is (amber|teal)", True, False)]


def commits_between(repo_path: str, old: str, new: str) -> list[str]:
    if old == new:
        return [old]
    out = subprocess.run(
        ["git", "rev-list", "--ancestry-path", f"{old}..{new}"], cwd=repo_path, capture_output=True, text=True, check=True
    ).stdout.split()
    return [*out, old]


def scanned(store: GitFileStore, commit: str, pattern: str, regex: bool, case_sensitive: bool) -> SearchResult:
    repo = store.sync.repo
    files = [(p, decode_stored(repo.blob(oid))) for p, oid in repo.files_at(commit)]
    return scan(files, compile_pattern(pattern, regex=regex, case_sensitive=case_sensitive), 1000)


def main() -> None:
    repo_path, workdir, name, rebuild_every = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = GitFileStore.open(repo_path)
    stop = os.path.join(workdir, "stop")
    searches = rebuilds = mismatches = 0
    extra = 3
    while extra > 0:
        if os.path.exists(stop):
            extra -= 1
        pattern, regex, case_sensitive = QUERIES[searches % len(QUERIES)]
        before = store.sync.head()
        got = store.sync.search(pattern, regex=regex, case_sensitive=case_sensitive, limit=1000)
        after = store.sync.head()
        if all(got != scanned(store, c, pattern, regex, case_sensitive) for c in commits_between(repo_path, before, after)):
            mismatches += 1
            print(f"mismatch for {pattern!r} between {before} and {after}: {got}", file=sys.stderr)
        searches += 1
        if searches == 1:
            open(os.path.join(workdir, f"ready-{name}"), "w").close()
        if rebuild_every and searches % rebuild_every == 0:
            store.sync.rebuild_index()
            rebuilds += 1
            open(os.path.join(workdir, f"rebuilt-{name}"), "w").close()
    print(json.dumps({"searches": searches, "rebuilds": rebuilds, "mismatches": mismatches}))


if __name__ == "__main__":
    main()
