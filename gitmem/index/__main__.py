"""``python -m gitmem.index catch-up PATH``: bring one mount's index to its head, then exit.

Started detached by :mod:`gitmem.index.background` for a process that does not
stay to do it (a CLI command). Waits for another indexer of the mount like any
off-request catch-up; exits 0 whether or not there was work, 1 on a failure
(logged on stderr, which the spawner points at ``/dev/null``).
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "catch-up":
        print("usage: python -m gitmem.index catch-up PATH", file=sys.stderr)
        return 2
    from gitmem.errors import MemoryStoreError
    from gitmem.index.mount import REBUILD_WAIT, catch_up

    try:
        catch_up(argv[1], wait=REBUILD_WAIT, inline=False)
    except MemoryStoreError as exc:
        print(f"gitmem index: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
