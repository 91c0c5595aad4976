"""The main job, end to end: two agents share one memory through CAS writes and cursors.

``gitmem demo`` runs this on the default root (or ``--root``) and prints what a
user would want to see: each change, the conflict that protects a stale write,
the change list a later run receives, and git's own view of the history.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable

from gitmem.errors import MemoryStoreError, if_found
from gitmem.model import Changes, FullResync, Origin
from gitmem.root import Root


def run_demo(root: Root, mount: str, emit: Callable[[str], None] = print) -> str:
    """Run the scenario on ``root/<mount>.git``; returns the mount's head commit."""
    store = root.mount(mount, create=True).sync
    run = uuid.uuid4().hex[:8]
    alice = Origin(run_id=f"run-{run}-a", principal_id="agent-alice", tool_call_id="call-1")
    bob = Origin(run_id=f"run-{run}-b", principal_id="agent-bob", tool_call_id="call-1")
    emit(f"memory {mount!r} at {store.path}")

    path = "prefs/style.md"
    text = "---\ndescription: How the user wants answers\n---\n- likes tea\n- reply in English\n"
    start = if_found(store.read, path)
    version = store.write(path, text, expected=None if start is None else start.version, origin=alice)
    emit(f"alice wrote {path} -> version {version[:12]}")
    cursor = store.changes(None).cursor

    seen_by_bob = store.read(path)
    edited = seen_by_bob.text.replace("reply in English", "reply in Chinese")
    v_alice = store.write(path, edited, expected=seen_by_bob.version, origin=alice)
    emit(f"alice edited {path}: 'reply in English' -> 'reply in Chinese' ({v_alice[:12]})")
    try:
        store.write(
            path, seen_by_bob.text.replace("likes tea", "likes coffee"), expected=seen_by_bob.version, origin=bob
        )
    except MemoryStoreError as exc:
        emit(
            f"bob's write from stale content was refused: {exc.code}; current version {exc.current and exc.current.version[:12]}"
        )
        fresh = exc.current
        assert fresh is not None
        v_bob = store.write(path, fresh.text.replace("likes tea", "likes coffee"), expected=fresh.version, origin=bob)
        emit(f"bob re-read and edited 'likes tea' -> 'likes coffee' ({v_bob[:12]}); both changes remain")
    store.write(f"runs/{run}.md", f"Run {run}: agreed on tea-free Chinese replies.\n", expected=None, origin=bob)
    emit(f"bob created runs/{run}.md")

    delta = store.changes(cursor)
    if isinstance(delta, Changes):
        emit(f"a later run with cursor {cursor[:12]} is told only: {', '.join(delta.paths)}")
    elif isinstance(delta, FullResync):
        emit("a later run must resync everything")
    hits = store.search("coffee")
    emit(
        "grep 'coffee' (index-narrowed, exact lines): "
        + "; ".join(f"{m.path}:{m.line}: {m.text}" for m in hits.matches)
    )
    emit(f"history of {path} (newest first, from commit trailers):")
    first = None
    for change in store.log(path, limit=10):
        who = change.origin.principal_id or change.author
        emit(f"  {change.commit[:12]} {change.op:7} by {who:12} run={change.origin.run_id or '-'}  {change.summary}")
        if change.origin.run_id == alice.run_id:
            first = change.commit  # newest first, so this ends at alice's first write of this run
    if first is not None:
        admin = Origin(principal_id="admin", tool_call_id="demo-restore")
        current = store.read(path)
        store.restore(path, first, expected=current.version, origin=admin)
        emit(f"admin restored {path} to {first[:12]} as a new commit (history is never rewritten)")
    emit("files now:")
    for entry in store.list():
        emit(f"  {entry.path:28} {entry.size:5d} B  {entry.version[:12]}  {entry.description or ''}")
    emit("git log (plain git, with the provenance trailers):")
    try:
        log = subprocess.run(
            [
                "git",
                "-C",
                store.path,
                "log",
                "-5",
                "--format=%h %an  %s  [run=%(trailers:key=Gitmem-Run,valueonly,separator=)]",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:  # no git on PATH: gitmem itself does not need it, so the demo still succeeds
        emit(f"  (the git command could not be run: {exc.strerror or exc}; install git to see this view)")
        return store.head()
    for line in log.stdout.splitlines():
        emit(f"  {line}")
    return store.head()
