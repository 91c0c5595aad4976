"""The ref watcher sees every ref change, whoever makes it, and never reports a false deletion.

Each watch here polls only every 10 minutes, so a change it reports was noticed
through a file-system event. Waits are bounded liveness guards, not speed targets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from serve.support import commit_all, fsck_clean, git, write

from gitmem import Origin, Root
from gitmem.adapters.watch import RefChange, Watch, Watcher, watch
from gitmem.errors import MemoryStoreError

WAIT = 60.0  # liveness bound for one expected change
NO_POLL = 600.0


def next_change(changes: Watch, match: Callable[[RefChange], bool], wait: float = WAIT) -> RefChange:
    deadline = time.monotonic() + wait
    seen = []
    while time.monotonic() < deadline:
        change = changes.get(0.5)
        if change is None:
            continue
        if match(change):
            return change
        seen.append(change.line())
    raise AssertionError(f"no matching change within {wait} s; saw {seen}")


def drain(changes: Watch) -> list[RefChange]:
    assert changes.quiesce(WAIT)
    out = []
    while (change := changes.get(0)) is not None:
        out.append(change)
    return out


@pytest.fixture
def root(tmp_path: Path) -> Root:
    root = Root(tmp_path / "mem")
    store = root.mount("user", create=True)
    store.sync.write("notes/a.md", "first note\n", expected=None)
    return root


def mount_dir(root: Root) -> str:
    return os.fspath(root.mount_path("user"))


def test_a_store_write_is_reported_with_its_paths_and_origin(root: Root) -> None:
    store = root.mount("user").sync
    before = store.head()
    with watch(root, ["user"], poll_interval=NO_POLL) as changes:
        store.write("prefs/tea.md", "green\n", expected=None, origin=Origin("run-7", "alice", "call-1"))
        change = next_change(changes, lambda c: c.ref == "refs/heads/main")
    assert (change.mount, change.kind, change.old, change.new) == ("user", "updated", before, store.head())
    assert change.paths == ("prefs/tea.md",)
    [commit] = change.commits
    assert (commit.op, commit.run, commit.principal, commit.tool_call) == ("create", "run-7", "alice", "call-1")
    line = change.line()
    assert "user main" in line and "prefs/tea.md" in line and "run run-7" in line and "by alice" in line


def test_update_ref_creates_moves_and_deletes_a_branch(root: Root) -> None:
    path = mount_dir(root)
    main = root.mount("user").sync.head()
    first = git("rev-parse", "main~1", cwd=path).stdout.strip()
    with watch(root, ["user"], poll_interval=NO_POLL) as changes:
        git("update-ref", "refs/heads/topic", main, cwd=path)
        created = next_change(changes, lambda c: c.ref == "refs/heads/topic")
        git("update-ref", "refs/heads/topic", first, cwd=path)
        moved = next_change(changes, lambda c: c.ref == "refs/heads/topic")
        git("update-ref", "-d", "refs/heads/topic", cwd=path)
        deleted = next_change(changes, lambda c: c.ref == "refs/heads/topic")
    assert (created.kind, created.old, created.new) == ("created", None, main)
    assert (moved.kind, moved.old, moved.new, moved.rewritten) == ("updated", main, first, True)
    assert moved.paths == ("notes/a.md",)
    assert (deleted.kind, deleted.old, deleted.new) == ("deleted", first, None)


def test_a_git_push_is_reported_and_the_index_is_current_afterwards(root: Root, tmp_path: Path) -> None:
    store = root.mount("user").sync
    store.write("notes/b.md", "second\n", expected=None)
    store.rebuild_index()
    work = tmp_path / "work"
    git("clone", "-q", mount_dir(root), str(work))
    write(work, "notes/pushed.md", "pushed by a person, mentions marmalade\n")
    pushed = commit_all(work, "a person's note")
    with watch(root, ["user"], poll_interval=NO_POLL) as changes:
        git("push", "-q", "origin", "main", cwd=work)
        change = next_change(changes, lambda c: c.ref == "refs/heads/main")
        assert changes.quiesce(WAIT)
    assert change.new == pushed and change.paths == ("notes/pushed.md",)
    [commit] = change.commits
    assert (commit.op, commit.author, commit.summary) == ("unknown", "tester", "a person's note")
    status = store.index_status()
    assert (status.state, status.commit) == ("current", pushed)
    assert [h.path for h in store.find("marmalade")] == ["notes/pushed.md"]


def test_gc_and_pack_refs_cause_no_false_deletions(root: Root) -> None:
    path = mount_dir(root)
    store = root.mount("user").sync
    git("update-ref", "refs/heads/keep", store.head(), cwd=path)
    git("tag", "v1", "main", cwd=path)
    with watch(root, ["user"], poll_interval=NO_POLL) as changes:
        git("pack-refs", "--all", cwd=path)
        git("gc", "-q", cwd=path)
        assert not os.path.exists(os.path.join(path, "refs", "heads", "main"))  # really packed
        assert drain(changes) == []
        # A write after packing is still seen, and deleting a packed ref is a real deletion.
        store.write("notes/after.md", "after gc\n", expected=None)
        after = next_change(changes, lambda c: c.ref == "refs/heads/main")
        git("update-ref", "-d", "refs/heads/keep", cwd=path)
        gone = next_change(changes, lambda c: c.ref == "refs/heads/keep")
    assert after.paths == ("notes/after.md",)
    assert gone.kind == "deleted"
    fsck_clean(path)


def test_refs_rewritten_by_pack_refs_while_they_move_are_never_reported_deleted(root: Root) -> None:
    path = mount_dir(root)
    store = root.mount("user").sync
    heads = [store.head()]
    for i in range(5):
        store.write(f"notes/{i}.md", f"{i}\n", expected=None)
        heads.append(store.head())
    reported: list[RefChange] = []
    with Watcher(root, ["user"], reported.append, debounce=0.0, poll_interval=NO_POLL) as watcher:
        for i in range(30):
            git("update-ref", "refs/heads/busy", heads[i % len(heads)], cwd=path)
            git("pack-refs", "--all", cwd=path)
        assert watcher.quiesce(WAIT)
    assert reported, "the watcher saw none of the updates"
    assert not [c for c in reported if c.kind == "deleted"], [c.line() for c in reported if c.kind == "deleted"]
    assert not [c for c in reported if c.ref != "refs/heads/busy"]
    assert reported[-1].new == heads[29 % len(heads)]


def test_a_new_mount_is_picked_up_when_watching_the_whole_root(root: Root) -> None:
    with watch(root, poll_interval=NO_POLL) as changes:
        assert changes.watcher.mounts == ["user"]
        team = root.mount("team", create=True).sync
        created = next_change(changes, lambda c: c.mount == "team")
        team.write("x.md", "x\n", expected=None)
        written = next_change(changes, lambda c: c.mount == "team" and c.kind == "updated")
    assert (created.ref, created.kind) == ("refs/heads/main", "created")
    assert written.paths == ("x.md",)


def test_iteration_ends_after_the_timeout_and_unknown_mounts_are_refused(root: Root) -> None:
    with watch(root, ["user"], timeout=0.3, poll_interval=NO_POLL) as changes:
        assert list(changes) == []
    with pytest.raises(MemoryStoreError) as caught:
        Watcher(root, ["nobody"])
    assert caught.value.code == "unknown_memory"


def test_the_cli_prints_one_json_line_per_change(root: Root) -> None:
    store = root.mount("user").sync
    command = [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(root.path), "watch", "user", "--json"]
    proc = subprocess.Popen(
        [*command, "--max-events", "1", "--timeout", "120"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None and "watching user" in proc.stderr.readline()
        store.write("notes/cli.md", "seen by the cli\n", expected=None, origin=Origin(principal_id="bob"))
        out, _ = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    [line] = out.splitlines()
    event = json.loads(line)
    assert (event["memory"], event["ref"], event["kind"], event["new"]) == (
        "user",
        "refs/heads/main",
        "updated",
        store.head(),
    )
    assert event["paths"] == ["notes/cli.md"] and event["commits"][0]["origin"]["principal_id"] == "bob"


def test_forget_and_purge_are_reported_as_rewritten_history(root: Root) -> None:
    store = root.mount("user").sync
    store.write("notes/secret.md", "a leaked detail\n", expected=None)
    with watch(root, ["user"], poll_interval=NO_POLL) as changes:
        store.forget("notes/secret.md")
        forgot = next_change(changes, lambda c: c.ref == "refs/heads/main")
        store.purge()
        purged = next_change(changes, lambda c: c.ref == "refs/heads/main" and c.new == store.head())
    assert forgot.rewritten and forgot.commits[0].op == "forget"
    assert purged.rewritten and purged.commits[0].op == "purge"


def test_an_idle_watcher_does_not_wake_itself_reading_the_refs(tmp_path: Path) -> None:
    """Its own read of the refs opens their folders: those events are reads, not a change to read again.

    Taken as hints, they kept a watcher (every ``gitmem serve`` worker with an
    event stream, every ``gitmem mcp``) re-reading the refs some 300 times a
    second while nothing moved: a sixth of a core for ever.
    """
    root = Root(tmp_path / "root")
    store = root.mount("team", create=True).sync
    seen: list[RefChange] = []
    watcher = Watcher(root, None, seen.append, debounce=0.005, index=False)
    watcher.start()
    try:
        store.write("a.md", "a\n", expected=None)
        deadline = time.monotonic() + WAIT
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen, "the write was not seen"
        time.sleep(0.5)
        before = time.process_time()
        time.sleep(2.0)
        idle = time.process_time() - before
    finally:
        watcher.stop(10)
    assert idle < 0.1, f"an idle watcher used {idle:.3f} s of CPU in 2 s"
