"""Maintenance that goes below single commits: forget (rewrite history), fsck, gc.

``forget`` rewrites commits with pygit2 and then hands deletion to the git CLI::

    writer lock ─► names per commit ─► rewrite trees+commits ─► audit commit
               ─► CAS every rewritten ref (one ref transaction) ─► git reflog expire
               ─► git gc --prune=now ─► bump generation ─► unlock

Why the git CLI for pruning: after a rewrite the old objects can sit in loose
files *and* inside packs (after ``gc()`` or a push). Deleting them from packs
means rewriting the packs from the set of objects still reachable from every
ref, which is exactly ``git gc --prune=now`` (``repack -A -d`` with immediate
unpacking of the unreachable, then ``prune``). git computes reachability from
all refs, the index and any worktrees itself, so nothing still referenced can
be deleted; re-implementing that with pygit2's PackBuilder would be more code
and a second, less tested notion of reachability. ``--prune=now`` deletes
unreferenced objects of any age, so it runs only under the writer lock, where
no gitmem writer can have a blob or commit in flight. ``gc()`` for routine
packing keeps git's default two-week grace and takes no lock.

Commits that only touched the forgotten path are kept as empty-change commits:
their messages, trailers, authors and times stay the audit record of who
changed something when, and every other file's history keeps its shape.
"""

from __future__ import annotations

import os
import subprocess
import time

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, validate_path
from gitmem.git.history import entry_id, moved_from
from gitmem.git.locks import remove_if_stale
from gitmem.git.repo import MAIN, GitRepo, _set_path, translate_errors
from gitmem.history import ForgetReport, FsckReport, GcReport, ObjectCounts
from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message

_SORT_CHILDREN_FIRST = pygit2.enums.SortMode.TOPOLOGICAL
_GIT_ENV_DROP = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_QUARANTINE_PATH",
)


def run_git(repo_path: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the git CLI on the bare repo; a missing git or a failure is ``unavailable``."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env["GIT_TERMINAL_PROMPT"] = "0"
    cmd = ["git", f"--git-dir={repo_path}", "-c", "gc.autoDetach=false", *args]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, errors="replace", check=False)
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot run the git CLI: {exc}") from exc
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise MemoryStoreError("unavailable", f"git {args[0]} failed: {' / '.join(said[-3:]) or done.returncode}")
    return done


# --- fsck and gc ------------------------------------------------------------------------


def fsck(repo: GitRepo) -> FsckReport:
    """``git fsck --strict``; dangling objects are normal between gc runs and not reported."""
    if not os.path.isdir(os.path.join(repo.path, "objects")):
        raise MemoryStoreError("memory_deleted", f"the memory at {repo.path} no longer exists")
    done = run_git(repo.path, "fsck", "--strict", "--no-dangling", "--no-progress", check=False)
    messages = tuple(line for line in (done.stdout + done.stderr).splitlines() if line.strip())
    return FsckReport(
        ok=done.returncode == 0 and not any(m.startswith(("error", "fatal")) for m in messages), messages=messages
    )


def count_objects(repo: GitRepo) -> ObjectCounts:
    done = run_git(repo.path, "count-objects", "-v")
    values: dict[str, int] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(":")
        if value.strip().isdigit():
            values[key.strip()] = int(value)
    return ObjectCounts(
        loose=values.get("count", 0),
        loose_kib=values.get("size", 0),
        packed=values.get("in-pack", 0),
        packs=values.get("packs", 0),
        pack_kib=values.get("size-pack", 0),
    )


def gc(repo: GitRepo) -> GcReport:
    """Pack loose objects with ``git gc``; unreferenced objects keep git's default grace.

    No writer lock: a concurrent writer's fresh blob or commit is not yet
    referenced, and the grace period is what keeps it.
    """
    if not os.path.isdir(os.path.join(repo.path, "objects")):
        raise MemoryStoreError("memory_deleted", f"the memory at {repo.path} no longer exists")
    before = count_objects(repo)
    run_git(repo.path, "gc", "--quiet")
    return GcReport(before, count_objects(repo))


# --- forget -------------------------------------------------------------------------------


class _Moved(Exception):
    """A ref moved while forget was rewriting; start over from the new tips."""


def forget(repo: GitRepo, fmt: FileFormat, path: str, *, origin: Origin | None = None) -> ForgetReport:
    """Erase ``path`` (a file or a folder) and every earlier version of it from all history.

    Every commit of every branch and tag that held the path is rewritten without
    it; the names the file had before a move are erased in the commits before
    that move. On top of ``main`` one empty-change commit (op ``forget``) records
    who asked. ``not_found`` when no commit ever held the path.
    """
    path = validate_path(path, fmt)
    origin = origin or Origin()
    with translate_errors(repo.path), repo.lock.hold():
        for _ in range(5):
            r = repo._fresh_repo()
            try:
                report = _rewrite(repo, r, path, origin)
            except _Moved:
                continue
            break
        else:
            raise MemoryStoreError("unavailable", "refs kept moving while forget ran; try again")
        run_git(repo.path, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
        run_git(repo.path, "gc", "--prune=now", "--quiet")
        repo.bump_generation()
        return _check_pruned(repo, report)


def _tips(r: pygit2.Repository) -> dict[str, str]:
    """Every direct ref and what it points at (commits, or tags of commits)."""
    tips: dict[str, str] = {}
    for name in r.references:
        ref = r.references.get(name)
        if ref is None or ref.type != pygit2.enums.ReferenceType.DIRECT:
            continue
        tips[name] = str(ref.target)
    return tips


def _commit_of(r: pygit2.Repository, oid: str) -> str | None:
    obj = r.get(oid)
    if obj is None:
        return None
    if isinstance(obj, pygit2.Tag):
        return _commit_of(r, str(obj.target))
    return oid if obj.type == pygit2.enums.ObjectType.COMMIT else None


def _names_per_commit(r: pygit2.Repository, tips: list[str], path: str) -> list[tuple[pygit2.Commit, set[str]]]:
    """Each commit reachable from ``tips`` (children first) with the names to erase in it."""
    walker = r.walk(None, _SORT_CHILDREN_FIRST)
    for tip in tips:
        walker.push(pygit2.Oid(hex=tip))
    pending: dict[str, set[str]] = {}
    order: list[tuple[pygit2.Commit, set[str]]] = []
    for commit in walker:
        names = pending.pop(str(commit.id), None) or {path}
        older: set[str] = set()
        tree = commit.tree
        first = commit.parents[0].tree if commit.parents else None
        for name in names:
            source = None
            if first is not None and entry_id(tree, name) is not None and entry_id(first, name) is None:
                source = moved_from(commit, name)
            older.add(source or name)
        for parent in commit.parent_ids:
            pending.setdefault(str(parent), set()).update(older)
        order.append((commit, names))
    return order


def _rewrite(repo: GitRepo, r: pygit2.Repository, path: str, origin: Origin) -> ForgetReport:
    tips = _tips(r)
    commit_tips = {name: c for name, target in tips.items() if (c := _commit_of(r, target)) is not None}
    order = _names_per_commit(r, sorted(set(commit_tips.values())), path)
    mapped: dict[str, str] = {}
    trees: dict[tuple[str, str], str] = {}
    erased: set[str] = set()
    seen_names: set[str] = set()
    rewritten = 0
    for commit, names in reversed(order):
        tree_id = str(commit.tree_id)
        for name in sorted(names):
            key = (tree_id, name)
            if key not in trees:
                gone = entry_id(r[tree_id].peel(pygit2.Tree), name)
                if gone is None:
                    trees[key] = tree_id
                else:
                    seen_names.add(name)
                    erased.update(_blobs_under(r, gone))
                    trees[key] = str(_set_path(r, r[tree_id].peel(pygit2.Tree), name.split("/"), None, name))
            tree_id = trees[key]
        parents = [mapped.get(str(p), str(p)) for p in commit.parent_ids]
        if tree_id == str(commit.tree_id) and parents == [str(p) for p in commit.parent_ids]:
            continue
        encoding = [commit.message_encoding] if commit.message_encoding else []
        new = r.create_commit(
            None,
            commit.author,
            commit.committer,
            commit.raw_message,
            pygit2.Oid(hex=tree_id),
            [pygit2.Oid(hex=p) for p in parents],
            *encoding,
        )
        mapped[str(commit.id)] = str(new)
        rewritten += 1
    if not seen_names:
        raise MemoryStoreError("not_found", f"{path} is not in this memory's history")
    updates: dict[str, str] = {}
    for name, target in tips.items():
        commit_id = commit_tips.get(name)
        if commit_id is None or commit_id not in mapped:
            continue
        updates[name] = _retarget(r, target, mapped)
    main_old = tips.get(MAIN)
    if main_old is None:
        raise MemoryStoreError("unavailable", f"{repo.path} has no {MAIN}")
    main_base = updates.get(MAIN, main_old)
    author = pygit2.Signature(origin.principal_id or COMMITTER_NAME, COMMITTER_EMAIL)
    committer = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
    base_tree = r[main_base].peel(pygit2.Commit).tree_id
    audit = r.create_commit(
        None, author, committer, commit_message("forget", (path,), origin), base_tree, [pygit2.Oid(hex=main_base)]
    )
    updates[MAIN] = str(audit)
    _swap_refs(repo, r, tips, updates)
    return ForgetReport(
        path=path,
        head=str(audit),
        names=tuple(sorted(seen_names)),
        commits_rewritten=rewritten,
        refs_updated=tuple(sorted(updates)),
        erased_versions=tuple(sorted(erased)),
    )


def _blobs_under(r: pygit2.Repository, oid: str) -> set[str]:
    obj = r[oid]
    if obj.type == pygit2.enums.ObjectType.BLOB:
        return {oid}
    out: set[str] = set()
    for entry in obj.peel(pygit2.Tree):
        out.update(_blobs_under(r, str(entry.id)))
    return out


def _retarget(r: pygit2.Repository, target: str, mapped: dict[str, str]) -> str:
    """The new value for a ref: the rewritten commit, or a copy of the tag pointing at it."""
    obj = r[target]
    if not isinstance(obj, pygit2.Tag):
        return mapped[target]
    inner = _retarget(r, str(obj.target), mapped)
    raw = bytes(obj.read_raw())
    head, _, rest = raw.partition(b"\n")
    assert head.startswith(b"object ")
    return str(r.odb.write(pygit2.enums.ObjectType.TAG, b"object " + inner.encode() + b"\n" + rest))


def _swap_refs(repo: GitRepo, r: pygit2.Repository, before: dict[str, str], updates: dict[str, str]) -> None:
    """Move every ref in ``updates`` at once, only if each still holds its value from ``before``."""
    deadline = time.monotonic() + repo.lock_timeout
    while True:
        try:
            with r.transaction() as txn:
                for name in sorted(updates):
                    txn.lock_ref(name)
                for name in sorted(updates):
                    ref = r.references.get(name)
                    if ref is None or str(ref.target) != before[name]:
                        raise _Moved(name)
                    txn.set_target(name, pygit2.Oid(hex=updates[name]), message="gitmem forget")
            return
        except _Moved:
            raise
        except (pygit2.GitError, OSError) as exc:
            if "lock" not in str(exc).lower():
                raise
            stale = False
            for name in updates:
                stale = (
                    remove_if_stale(os.path.join(repo.path, *name.split("/")) + ".lock", repo.stale_lock_seconds)
                    or stale
                )
            if not stale and time.monotonic() > deadline:
                raise MemoryStoreError("unavailable", "a ref stayed locked by another git process") from None
            time.sleep(0.01)


def _check_pruned(repo: GitRepo, report: ForgetReport) -> ForgetReport:
    """Confirm every erased version is gone unless another file still holds the same content."""
    r = repo._fresh_repo()
    survivors = [oid for oid in report.erased_versions if pygit2.Oid(hex=oid) in r.odb]
    if survivors:
        listed = run_git(repo.path, "rev-list", "--objects", "--all").stdout
        reachable = {line.split(" ", 1)[0] for line in listed.splitlines()}
        stuck = [oid for oid in survivors if oid not in reachable]
        if stuck:
            raise MemoryStoreError(
                "unavailable",
                f"forget rewrote history but {len(stuck)} old version(s) could not be pruned "
                f"(e.g. {stuck[0]}; a .keep pack?)",
            )
    return ForgetReport(
        path=report.path,
        head=report.head,
        names=report.names,
        commits_rewritten=report.commits_rewritten,
        refs_updated=report.refs_updated,
        erased_versions=report.erased_versions,
        shared_versions=tuple(survivors),
    )
