"""A writer process for the race and crash tests, run as ``python race_worker.py '<json>'``.

Each mode hammers one repository the way a real client would and reports every
acknowledged change by appending one line to an ack file *after* the call that
made it returned. A line is written with one ``os.write`` on an ``O_APPEND``
descriptor, so a process killed at any moment leaves whole lines (and at worst
an unterminated tail, which the parent ignores). Anything unexpected ends the
process with a traceback and a non-zero status, which the tests check.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

from gitmem import GitFileStore, MemoryStoreError, Origin, Root
from gitmem.errors import LOST_RACE

PARENT = os.getppid()


def orphaned() -> bool:
    """The test that started this worker is gone: stop rather than write forever."""
    return os.getppid() != PARENT


class Acks:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, *fields: object) -> None:
        os.write(self.fd, (" ".join(str(f) for f in fields) + "\n").encode())


def wait_for_go(args: dict[str, Any]) -> None:
    """Spin until the parent says go, so that processes started one by one overlap."""
    go = args.get("go")
    while go and not os.path.exists(go):
        if orphaned():
            raise SystemExit("orphaned")
        time.sleep(0.002)


def open_store(args: dict[str, Any]) -> Any:
    store = GitFileStore.open(args["repo"]).sync
    if "stale" in args:
        store.repo.stale_lock_seconds = float(args["stale"])
    return store


def increment(store: Any, path: str, origin: Origin) -> tuple[int, str, int]:
    """Add one to the number in ``path`` with CAS; re-read and retry on a conflict."""
    conflicts = 0
    current = store.read(path)
    while True:
        value = int(current.text) + 1
        try:
            version = store.write(path, f"{value}\n", expected=current.version, origin=origin)
            return value, version, conflicts
        except MemoryStoreError as exc:
            if exc.code != "version_mismatch":
                raise
            conflicts += 1
            assert exc.current is not None, "a conflict on an existing counter must carry it"
            current = exc.current


def mode_distinct(args: dict[str, Any]) -> None:
    """Create, then edit by CAS, this worker's own files; every write must succeed."""
    store, ack, wid = open_store(args), Acks(args["acks"]), args["wid"]
    versions: dict[str, str | None] = {}
    origin = Origin(run_id=f"run-{wid}", principal_id=f"worker-{wid}")
    wait_for_go(args)
    for seq in range(args["writes"]):
        path = f"w{wid}/d{seq % 3}/f{seq % args['files']}.md"
        version = store.write(path, f"worker {wid} seq {seq}\n", expected=versions.get(path), origin=origin)
        versions[path] = version
        ack(path, version, seq)


def mode_counter(args: dict[str, Any]) -> None:
    """Increment the shared counter ``writes`` times; ack each value and its conflict count."""
    store, ack, wid = open_store(args), Acks(args["acks"]), args["wid"]
    origin = Origin(principal_id=f"worker-{wid}")
    wait_for_go(args)
    for _ in range(args["writes"]):
        value, version, conflicts = increment(store, "counter.txt", origin)
        ack(value, version, conflicts)


def mode_forever(args: dict[str, Any]) -> None:
    """Write until killed: own files (``f`` acks) and the shared counter (``c`` acks)."""
    store, ack, wid = open_store(args), Acks(args["acks"]), args["wid"]
    origin = Origin(run_id=f"kill-{wid}")
    versions: dict[str, str] = {}
    ack("ready", wid, os.getpid())
    seq = 0
    while not orphaned():
        path = f"k{wid}/f{seq % 4}.md"
        version = store.write(path, f"{wid} {seq}\n", expected=versions.get(path), origin=origin)
        versions[path] = version
        ack("f", path, version, seq)
        if seq % 3 == 0:
            value, version, _ = increment(store, "counter.txt", origin)
            ack("c", value, version)
        seq += 1


def mode_group_threads(args: dict[str, Any]) -> None:
    """``threads`` threads write their own files until killed (``f`` acks), their commits grouped.

    With ``stop`` ("before" or "after"), the thread committing the tenth group of
    two or more changes acks ``holding`` with the group's size and stops itself
    (SIGSTOP) just before or just after the ref moves, for the parent to kill it there.
    """
    import threading

    from gitmem.git import engine

    store, ack = open_store(args), Acks(args["acks"])
    stop_at = args.get("stop")
    if stop_at:
        move, plan_all, size, groups = engine._move, engine._plan_all, [0], [0]

        def planned(repo: Any, handle: Any, group: list[Any], *a: Any) -> tuple[str, str]:
            size[0] = len(group)
            groups[0] += len(group) >= 2
            return plan_all(repo, handle, group, *a)

        def stopping(*a: Any, **kw: Any) -> bool:
            due = size[0] >= 2 and groups[0] >= 10
            if due and stop_at == "before":
                ack("holding", size[0])
                os.kill(os.getpid(), signal.SIGSTOP)
            moved = move(*a, **kw)
            if due and stop_at == "after":
                ack("holding", size[0])
                os.kill(os.getpid(), signal.SIGSTOP)
            return moved

        engine._plan_all, engine._move = planned, stopping  # type: ignore[assignment]

    def write(tid: int) -> None:
        origin = Origin(principal_id=f"thread-{tid}")
        seq = 0
        while not orphaned():
            path = f"p{os.getpid()}/t{tid}/f{seq}.md"
            version = store.write(path, f"{tid} {seq}\n", expected=None, origin=origin)
            ack("f", path, version, seq)
            seq += 1

    threads = [threading.Thread(target=write, args=(t,), daemon=True) for t in range(args["threads"])]
    ack("ready", os.getpid())  # first: a thread may stop the process at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def mode_stop_in_cas(args: dict[str, Any]) -> None:
    """Stop itself (SIGSTOP) in the critical section: flock held, commit written, ref read.

    The stop comes right after the CAS looked the ref up and right before it
    moves it. The parent SIGKILLs the stopped process (the worst moment a gitmem
    writer can die at) or, with ``resume``, lets it go on with SIGCONT after
    arranging a race.
    """
    import pygit2

    from gitmem.git import engine

    original_cas, original_lookup = engine._move, pygit2.Repository.lookup_reference
    in_cas = []

    def cas(*a: Any, **kw: Any) -> bool:
        in_cas.append(a[5])  # the new commit
        return original_cas(*a, **kw)

    def lookup_then_stop(self: Any, name: str) -> Any:
        ref = original_lookup(self, name)
        if in_cas:
            Acks(args["acks"])("in-cas", in_cas.pop())
            os.kill(os.getpid(), signal.SIGSTOP)
        return ref

    original_rename = os.rename

    def rename_then_stop(src: Any, dst: Any, **kw: Any) -> None:
        # gitmem's own ref swap (gitmem.git.refs.swap_loose_ref): main.lock held, ref read
        if in_cas and str(dst).endswith(os.path.join("refs", "heads", "main")):
            Acks(args["acks"])("in-cas", in_cas.pop())
            os.kill(os.getpid(), signal.SIGSTOP)
        original_rename(src, dst, **kw)

    engine._move = cas  # type: ignore[assignment]
    pygit2.Repository.lookup_reference = lookup_then_stop  # type: ignore[method-assign]
    os.rename = rename_then_stop  # type: ignore[assignment]
    store = open_store(args)
    try:
        version = store.write("stopped.md", "written after SIGCONT\n", expected=None)
    except MemoryStoreError as exc:
        Acks(args["acks"])("error", exc.code)
        return
    if not args.get("resume"):
        raise SystemExit("the parent was meant to kill this process")
    Acks(args["acks"])("written", version)


def mode_stop_in_pack(args: dict[str, Any]) -> None:
    """Stop itself (SIGSTOP) at ``step`` of writing a commit's pack, for the parent to SIGKILL.

    ``step`` is the n-th file operation of :func:`gitmem.git.packwrite.write_pack`
    it stops before: 0 before the pack (written under its final name), 1 before
    the temp index, 2 before renaming the index, 3 after it (before the ref moves).
    """
    from gitmem.git import engine, packwrite

    step, ops = int(args.get("step", 0)), [0]
    acks = Acks(args["acks"])

    def maybe_stop() -> None:
        if ops[0] == step:
            acks("in-pack", step)
            os.kill(os.getpid(), signal.SIGSTOP)
        ops[0] += 1

    original_write, original_rename = packwrite._write_file, os.rename

    def write_file(path: str, data: bytes) -> None:
        maybe_stop()
        original_write(path, data)

    def rename(src: Any, dst: Any, **kw: Any) -> None:
        if "tmp_" in str(src) and "objects" in str(src):
            maybe_stop()
        original_rename(src, dst, **kw)

    packwrite._write_file = write_file  # type: ignore[assignment]
    packwrite.os.rename = rename  # type: ignore[assignment,attr-defined]
    original_move = engine._move

    def move(*a: Any, **kw: Any) -> bool:
        if ops[0] == step:
            maybe_stop()
        return original_move(*a, **kw)

    engine._move = move  # type: ignore[assignment]
    store = open_store(args)
    store.write("stopped.md", "never acknowledged\n", expected=None)
    raise SystemExit("the parent was meant to kill this process")


def mode_stop_in_compact(args: dict[str, Any]) -> None:
    """Write until a compaction starts, let ``git repack`` run ``delay`` s, then stop it and self for a SIGKILL."""
    from gitmem.git import cli, engine, packfold

    engine.MAX_PACKS = 2
    packfold.MAX_BYTES = 0  # every fold goes to git pack-objects
    acks = Acks(args["acks"])
    original = cli.run_git

    def run_git(argv: Any, **kw: Any) -> Any:
        if "pack-objects" not in argv:
            return original(argv, **kw)
        proc = subprocess.Popen(
            ["git", "--git-dir", args["repo"], *argv], stdin=subprocess.PIPE, pass_fds=kw.get("pass_fds", ())
        )
        assert proc.stdin is not None
        proc.stdin.write(kw.get("stdin") or b"")
        proc.stdin.close()
        time.sleep(float(args.get("delay", 0.01)))
        acks("in-compact", proc.pid)
        os.kill(os.getpid(), signal.SIGSTOP)
        raise SystemExit("the parent was meant to kill this process")

    cli.run_git = run_git  # type: ignore[assignment]
    store = open_store(args)
    for n in range(10):
        store.write(f"c{n}.md", f"{n}\n", expected=None)
    raise SystemExit("no compaction started")


def mode_stop_in_fold(args: dict[str, Any]) -> None:
    """Write until an in-process fold reaches ``step``, then stop self for the parent's SIGKILL.

    Steps: ``pack`` (temp files written and fsynced, before the pack's rename),
    ``idx`` (the pack renamed, not its index), ``record`` (the new pack complete,
    the folded packs not yet listed for deletion).
    """
    from gitmem.git import engine, packfold

    engine.MAX_PACKS = 2
    acks, step = Acks(args["acks"]), args["step"]

    def stop() -> None:
        acks("in-fold", step)
        os.kill(os.getpid(), signal.SIGSTOP)
        raise SystemExit("the parent was meant to kill this process")

    rename, fold = os.rename, packfold.fold

    def renaming(src: Any, dst: Any) -> None:
        name = os.path.basename(str(src))
        if (step == "pack" and name.startswith("tmp_pack_fold_")) or (
            step == "idx" and name.startswith("tmp_idx_fold_")
        ):
            stop()
        rename(src, dst)

    def folding(folder: str, names: list[str]) -> str | None:
        made = fold(folder, names)
        if step == "record" and made is not None:
            stop()
        return made

    packfold.os.rename = renaming  # type: ignore[assignment]
    packfold.fold = folding  # type: ignore[assignment]
    store = open_store(args)
    for n in range(10):
        store.write(f"c{n}.md", f"{n}\n", expected=None)
        acks("wrote", f"c{n}.md")
    raise SystemExit("no fold reached the step")


def mode_die_holding_ref_lock(args: dict[str, Any]) -> None:
    """Take the writer lock, create ``main.lock`` the way libgit2 does mid-update, then stop.

    The parent SIGKILLs it: the state a writer killed inside libgit2's ref update leaves.
    """
    store = open_store(args)
    lock = os.path.join(args["repo"], "refs", "heads", "main.lock")
    with store.repo.lock.hold():
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"0" * 40 + b"\n")
        Acks(args["acks"])("holding", os.getpid(), "-")
        os.kill(os.getpid(), signal.SIGSTOP)
    raise SystemExit("the parent was meant to kill this process")


def mode_hold_writer_lock(args: dict[str, Any]) -> None:
    """Hold the writer lock (as ``op``) until the parent kills this process."""
    store = open_store(args)
    with store.repo.lock.hold(args.get("op", "write")):
        Acks(args["acks"])("holding", os.getpid(), "-")
        while not orphaned():
            time.sleep(0.05)


def mode_stop_before_prune(args: dict[str, Any]) -> None:
    """Purge, stopping itself (SIGSTOP) after ``main`` moved and before anything is pruned."""
    from gitmem.git import rewrite

    def stop(repo: Any) -> None:
        Acks(args["acks"])("moved", repo.head(), "-")
        os.kill(os.getpid(), signal.SIGSTOP)
        raise SystemExit("the parent was meant to kill this process")

    rewrite._prune_now = stop  # type: ignore[assignment]
    open_store(args).purge()


GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "git cli",
    "GIT_AUTHOR_EMAIL": "cli@example.com",
    "GIT_COMMITTER_NAME": "git cli",
    "GIT_COMMITTER_EMAIL": "cli@example.com",
}


def git(repo: str, *argv: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", repo, *argv], input=data, capture_output=True, check=False, env=GIT_ENV)


def git_out(repo: str, *argv: str, data: bytes | None = None) -> str:
    done = git(repo, *argv, data=data)
    if done.returncode != 0:
        raise RuntimeError(f"git {argv}: {done.stderr.decode()}")
    return done.stdout.decode().strip()


def mode_gitcli(args: dict[str, Any]) -> None:
    """Commit new top-level files with git plumbing and ``update-ref NEW OLD`` (a CAS)."""
    repo, ack = args["repo"], Acks(args["acks"])
    wait_for_go(args)
    retries = 0
    for n in range(args["writes"]):
        name = f"g-{n}.md"
        blob = git_out(repo, "hash-object", "-w", "--stdin", data=f"git cli {n}\n".encode())
        while True:
            old = git_out(repo, "rev-parse", "refs/heads/main")
            listing = git_out(repo, "ls-tree", old)
            lines = [line for line in listing.splitlines() if line] + [f"100644 blob {blob}\t{name}"]
            tree = git_out(repo, "mktree", data=("\n".join(lines) + "\n").encode())
            new = git_out(repo, "commit-tree", tree, "-p", old, "-m", f"git cli adds {name}")
            if git(repo, "update-ref", "refs/heads/main", new, old).returncode == 0:
                break
            retries += 1  # the ref moved or its lock was held: rebuild on the new head
        ack(name, blob, new)
    ack("retries", retries, "-")


def mode_dulwich(args: dict[str, Any]) -> None:
    """Commit new top-level files through dulwich's ``set_if_equals`` (a CAS)."""
    from dulwich.file import FileLocked
    from dulwich.objects import Blob, Commit, Tree
    from dulwich.repo import Repo

    repo, ack = Repo(args["repo"]), Acks(args["acks"])
    wait_for_go(args)
    retries = 0
    for n in range(args["writes"]):
        name = f"d-{n}.md"
        blob = Blob.from_string(f"dulwich {n}\n".encode())
        repo.object_store.add_object(blob)
        while True:
            old = repo.refs[b"refs/heads/main"]
            tree = Tree()
            for item in repo[repo[old].tree].items():  # type: ignore[attr-defined]
                tree.add(item.path, item.mode, item.sha)
            tree.add(name.encode(), 0o100644, blob.id)
            repo.object_store.add_object(tree)
            commit = Commit()
            commit.tree, commit.parents = tree.id, [old]
            commit.author = commit.committer = b"dulwich <dulwich@example.com>"
            commit.author_time = commit.commit_time = int(time.time())
            commit.author_timezone = commit.commit_timezone = 0
            commit.message = f"dulwich adds {name}\n".encode()
            repo.object_store.add_object(commit)
            try:
                if repo.refs.set_if_equals(b"refs/heads/main", old, commit.id):
                    break
            except FileLocked:
                time.sleep(0.001)
            retries += 1
        ack(name, blob.id.decode(), commit.id.decode())
    ack("retries", retries, "-")


def mode_mount(args: dict[str, Any]) -> None:
    """Race ``Root.mount(name, create=True)`` against another process, then write into it."""
    root, ack, wid = Root(args["root"]), Acks(args["acks"]), args["wid"]
    wait_for_go(args)
    for name in args["names"]:
        store = root.mount(name, create=True).sync
        version = store.write(f"p{wid}.md", f"from {wid}\n", expected=None)
        ack(name, version)


def mode_until_deleted(args: dict[str, Any]) -> None:
    """Write until the memory is removed; the only acceptable end is ``memory_deleted``."""
    store, ack = open_store(args), Acks(args["acks"])
    ack("ready", "-", "-")
    seq = 0
    while not orphaned():
        try:
            store.write(
                f"x/{seq % 7}.md", f"{seq}\n", expected=None if seq < 7 else store.read(f"x/{seq % 7}.md").version
            )
        except MemoryStoreError as exc:
            ack("error", exc.code, seq)
            if exc.code == "memory_deleted":
                return
            raise
        ack("ok", seq, "-")
        seq += 1


def mode_churn(args: dict[str, Any]) -> None:
    """Edit own files the way an agent does: read, write expecting what was read, retry.

    Used against a purge, which may empty the memory between any read and write.
    """
    store, ack, wid = open_store(args), Acks(args["acks"]), args["wid"]
    wait_for_go(args)
    for seq in range(args["writes"]):
        path = f"c{wid}/f{seq % 5}.md"
        while True:
            try:
                current = store.read(path).version
            except MemoryStoreError as exc:
                if exc.code != "not_found":
                    raise
                current = None
            try:
                version = store.write(path, f"{wid} {seq % 7}\n", expected=current)
                break
            except MemoryStoreError as exc:
                if exc.code not in LOST_RACE:  # another writer (or a purge) got there first
                    raise
        ack(path, version, seq)


MODES = {
    "die_holding_ref_lock": mode_die_holding_ref_lock,
    "hold_writer_lock": mode_hold_writer_lock,
    "stop_before_prune": mode_stop_before_prune,
    "churn": mode_churn,
    "distinct": mode_distinct,
    "counter": mode_counter,
    "forever": mode_forever,
    "stop_in_pack": mode_stop_in_pack,
    "stop_in_compact": mode_stop_in_compact,
    "stop_in_fold": mode_stop_in_fold,
    "stop_in_cas": mode_stop_in_cas,
    "group_threads": mode_group_threads,
    "gitcli": mode_gitcli,
    "dulwich": mode_dulwich,
    "mount": mode_mount,
    "until_deleted": mode_until_deleted,
}

if __name__ == "__main__":
    arguments = json.loads(sys.argv[1])
    MODES[arguments["mode"]](arguments)
