"""Maintenance that goes below single commits: forget (rewrite history), purge, fsck, gc.

``forget`` rewrites commits itself and hands deletion to the git CLI::

    writer lock ─► mark pending ─► names per commit ─► rewritten trees/commits/tags
               ─► one pack and its index ─► audit commit ─► CAS every rewritten ref
               (one ref transaction) ─► git reflog expire ─► git gc --prune=now
               ─► bump generation ─► check nothing erased is left ─► unmark ─► unlock

The mark (``gitmem/forget-pending``) covers a crash between moving the refs and
pruning: the next ``forget``, ``purge`` or ``gc`` sees it and finishes the prune.
``purge`` takes the same path with a trivial rewrite (``main`` moves to a new
empty root, every other ref is deleted)::

    writer lock ─► mark pending ─► CAS main to an empty root ─► delete other refs
               ─► git reflog expire ─► git gc --prune=now ─► bump generation ─► check ─► unmark

Why the git CLI for pruning: after a rewrite the old objects can sit in loose
files *and* inside packs (after ``gc()`` or a push). Deleting them from packs
means rewriting the packs from the set of objects still reachable from every
ref, which is exactly ``git gc --prune=now`` (``repack -A -d`` with immediate
unpacking of the unreachable, then ``prune``). git computes reachability from
all refs, the index and any worktrees itself, so nothing still referenced can
be deleted; re-implementing that with pygit2's PackBuilder would be more code
and a second, less tested notion of reachability. ``--prune=now`` deletes
unreferenced objects of any age, so it runs only under the writer lock, where
no gitmem writer can have a blob or commit in flight. ``git gc`` also takes
its own ``gc.pid`` lock, so a routine repack that started earlier cannot write
a pack of purged objects after the prune. ``gc()`` for routine packing keeps
git's default two-week grace, and takes the writer lock too.

The pruning git process gets the writer lock's descriptor, so if gitmem is
killed meanwhile the lock stays held until that git exits: a prune never runs
beside a writer whose new objects are not referenced yet. (Waiters give such a
holder the long maintenance wait, see :mod:`gitmem.git.locks`.)

Commits that only touched the forgotten path are kept as empty-change commits:
their messages, trailers, authors and times stay the audit record of who
changed something when, and every other file's history keeps its shape.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import time
from dataclasses import replace

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, validate_path
from gitmem.git import cli, erasures, packwrite, quarantine
from gitmem.git.control import object_dirs
from gitmem.git.engine import MAX_ATTEMPTS
from gitmem.git.erasurenames import NameScrub
from gitmem.git.locks import WriterLock
from gitmem.git.loose import damaged_loose_objects
from gitmem.git.perms import open_private
from gitmem.git.refs import MAIN, read_ref, swap_refs
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.rewritepack import PackedFirst, RewrittenObjects, entry_named
from gitmem.git.walk import RawCommit, entry_id, may_have_moved_to, moved_from, renames
from gitmem.history import ForgetReport, FsckReport, GcReport, ObjectCounts
from gitmem.localfile import read_local
from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message

_SORT_CHILDREN_FIRST = pygit2.enums.SortMode.TOPOLOGICAL


def run_git(
    repo_path: str,
    *args: str,
    check: bool = True,
    stdin: bytes | None = None,
    lock: WriterLock | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the git CLI on the bare repo; with ``lock`` (held), the child holds it too until it exits."""
    return cli.run_git(
        ["-c", "gc.autoDetach=false", *args],
        git_dir=repo_path,
        stdin=stdin,
        check=check,
        pass_fds=() if lock is None else (lock.held_fd(),),
    )


# --- fsck and gc ------------------------------------------------------------------------


def fsck(repo: GitRepo) -> FsckReport:
    """``git fsck --strict``, after gitmem's own check of every loose object's file.

    Dangling objects are normal between gc runs and not reported. A damaged
    loose object is named first in gitmem's words (the one that every read
    refuses as ``unavailable``), then git says what it found.
    """
    if not os.path.isdir(os.path.join(repo.path, "objects")):
        raise MemoryStoreError("memory_deleted", f"the memory at {repo.path} no longer exists")
    found = list(damaged_loose_objects(os.path.join(repo.path, "objects")))
    damaged = tuple(f"error: corrupt loose object {bad.oid} ({bad.path}) {bad.reason}" for bad in found)
    special = [bad.path for bad in found if not _regular_or_gone(os.path.join(repo.path, bad.path))]
    if special:  # git opens loose objects blocking: a FIFO there would hang `git fsck` for good
        skipped = f"error: git fsck not run: {', '.join(special[:10])} not a regular file; remove it and run fsck again"
        return FsckReport(ok=False, messages=(*damaged, skipped))
    done = run_git(repo.path, "fsck", "--strict", "--no-dangling", "--no-progress", check=False)
    messages = damaged + tuple(line for line in (done.stdout + done.stderr).splitlines() if line.strip())
    return FsckReport(
        ok=not damaged and done.returncode == 0 and not any(m.startswith(("error", "fatal")) for m in messages),
        messages=messages,
    )


def _regular_or_gone(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return True


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
    """Pack loose objects with ``git gc``, under the writer lock; unreferenced objects keep git's grace.

    A forget or purge that stopped between moving refs and pruning is finished
    here (its prune runs instead of the plain ``git gc``), and the quarantines
    killed processes left (:func:`gitmem.git.quarantine.sweep`) are deleted.
    """
    if not os.path.isdir(os.path.join(repo.path, "objects")):
        raise MemoryStoreError("memory_deleted", f"the memory at {repo.path} no longer exists")
    before = count_objects(repo)
    with translate_errors(repo.path), repo.maintenance("gc"):
        quarantine.sweep(repo.path)  # what killed pushes, pulls and imports left, refused objects and all
        if os.path.exists(repo.pending_path):
            _prune_now(repo)
        else:
            run_git(repo.path, "gc", "--quiet", lock=repo.lock)
        packwrite.remove_orphan_packs(repo.path)  # a killed writer's pack without index; git keeps those
    return GcReport(before, count_objects(repo))


def _mark_pending(repo: GitRepo, what: str) -> str | None:
    """Record that refs are about to lose objects; returns an earlier unfinished mark's text."""
    earlier = read_local(repo.pending_path, 64 * 1024)
    unfinished = earlier.decode("utf-8", "replace").strip() if earlier is not None else None
    with os.fdopen(open_private(repo.pending_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as mark:
        mark.write(f"{what}\n")
        mark.flush()
        os.fsync(mark.fileno())
    return unfinished


_PRUNE_ONLY = (
    *("-c", "gc.writeCommitGraph=false", "-c", "repack.writeBitmaps=false"),
    *("-c", "gc.bigPackThreshold=0", "-c", "gc.keepLargestPack=false"),
)
"""What the prune's ``git gc`` leaves to the next routine ``gc``: at 100k commits the reachability
bitmap (~1.7 s) and commit-graph (~0.8 s) were a third of it, and erase nothing. And no pack is
kept whole for its size (settings meant for big repositories): it would keep every erased version in it."""


_KEEP_NOTE = "gitmem forget: every object here is reachable, the prune copies the rest\n"


def _prune_now(repo: GitRepo, keep: str | None = None) -> None:
    """Delete every unreachable object, packed or loose, and the reflogs; writer lock held.

    ``keep`` names forget's own new pack when every object in it is reachable:
    git's repack then leaves it as it is (a ``.keep`` file for the length of
    the ``gc``, recognised by its note and removed after a crash by the next
    prune or forget) and writes only the objects still needed from the old
    packs, instead of copying the 200,000 rewritten trees and commits again.
    The commit-graph, which lists the rewritten commits, is deleted (git reads
    the commits themselves without one; the next ``gc`` writes a new one).
    """
    run_git(repo.path, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all", lock=repo.lock)
    quarantine.sweep(repo.path)  # a killed process's quarantine may hold what is being erased
    _drop_own_keeps(repo.path)
    kept = _write_own_keep(repo.path, keep) if keep else None
    try:
        deadline = time.monotonic() + repo.lock_timeout
        while True:
            done = run_git(repo.path, *_PRUNE_ONLY, "gc", "--prune=now", "--quiet", check=False, lock=repo.lock)
            if done.returncode == 0:
                break
            if "already running" not in done.stderr or time.monotonic() > deadline:
                raise MemoryStoreError("unavailable", f"git gc --prune=now failed: {done.stderr.strip()[-300:]}")
            time.sleep(0.1)  # a foreign git gc is packing; the prune must still happen
    finally:
        if kept is not None:
            os.unlink(kept)
    _drop_commit_graph(repo.path)  # after the gc: a foreign gc it waited for may have written one meanwhile
    repo.bump_generation()
    survivors = _check_pruned(repo)
    # The erasure is done: it goes into the ledger (without what another file still holds).
    erasures.finish_pending(
        repo.fresh(), repo.path, survivors, stale_after=repo.stale_lock_seconds, timeout=repo.lock_timeout
    )
    with contextlib.suppress(FileNotFoundError):
        os.unlink(repo.pending_path)


def _check_pruned(repo: GitRepo) -> frozenset[str]:
    """The pending erasures' versions still on disk, each reached from some ref (another file holds it).

    ``unavailable`` for one that no ref reaches: a ``.keep`` made by another
    tool after forget's check, say, keeps its pack. The erasure then stays
    pending (the mark and its ledger entry), so the next ``gc``, ``forget`` or
    ``purge`` prunes again once the pack is free.
    """
    odb = repo.fresh().odb
    survivors = frozenset(b for e in erasures.pending(repo.path) for b in e.blobs if pygit2.Oid(hex=b) in odb)
    if not survivors:
        return survivors
    listed = run_git(repo.path, "rev-list", "--objects", "--all").stdout
    stuck = sorted(survivors - {line.split(" ", 1)[0] for line in listed.splitlines()})
    if stuck:
        raise MemoryStoreError(
            "unavailable",
            f"history was rewritten but {len(stuck)} old version(s) could not be pruned "
            f"(e.g. {stuck[0]}; a .keep pack?); the next gc prunes them again",
        )
    return survivors


def _write_own_keep(repo_path: str, pack: str) -> str:
    """A ``.keep`` on forget's pack that is gitmem's from the moment it exists (written whole, then linked)."""
    folder = os.path.join(repo_path, "objects", "pack")
    kept = os.path.join(folder, f"pack-{pack}.keep")
    tmp = os.path.join(folder, f"tmp_keep_gitmem_{os.urandom(6).hex()}")  # git's prune deletes a tmp_ leftover
    try:
        with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444), "w") as note:
            note.write(_KEEP_NOTE)
            note.flush()
            os.fsync(note.fileno())
        try:
            os.link(tmp, kept)  # refuses a .keep already there, as O_EXCL would
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links
            os.rename(tmp, kept)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return kept


def _drop_own_keeps(repo_path: str) -> None:
    """Remove the ``.keep`` files a killed prune left on forget's pack (a foreign ``.keep`` stays)."""
    packs = os.path.join(repo_path, "objects", "pack")
    for name in os.listdir(packs) if os.path.isdir(packs) else ():
        if name.endswith(".keep") and read_local(os.path.join(packs, name), 4096) == _KEEP_NOTE.encode():
            os.unlink(os.path.join(packs, name))


def _drop_commit_graph(repo_path: str) -> None:
    info = os.path.join(repo_path, "objects", "info")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(info, "commit-graph"))
    shutil.rmtree(os.path.join(info, "commit-graphs"), ignore_errors=True)


def purge(repo: GitRepo, message: str, *, by: str | None = None) -> str:
    """Replace all history with one empty root commit and delete every other object and ref.

    Crash-safe like forget: the pending mark is written before ``main`` moves,
    so a purge killed before its prune is finished by the next gc, forget or
    purge. Every blob the mount held goes into the erasure ledger (whose ref
    alone survives, :mod:`gitmem.git.erasures`). Returns the new root commit.
    """
    with translate_errors(repo.path), repo.maintenance("purge"):
        _check_prunable(repo)
        r = repo.fresh()
        tree = r.TreeBuilder().write()
        sig = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
        commit = str(r.create_commit(None, sig, sig, message, tree, []))
        _mark_pending(repo, "purge")
        tips_before = [t for n in r.references if n != erasures.LEDGER_REF and (t := read_ref(r, n)) is not None]
        erasures.write_pending(
            repo.path, erasures.new_entry("purge", by or COMMITTER_NAME, (), _all_blobs(repo), tips_before)
        )
        for _ in range(MAX_ATTEMPTS):
            # main to the new root and every other ref deleted, in one compare-and-swap;
            # a foreign writer that moved a ref meanwhile makes it read the refs again.
            tips = {name: read_ref(r, name) for name in r.references if name != erasures.LEDGER_REF}
            moves: dict[str, tuple[str | None, str | None]] = {
                name: (old, None) for name, old in tips.items() if name != MAIN
            }
            moves[MAIN] = (repo.head(), commit)
            if swap_refs(
                r,
                repo.path,
                moves,
                message="gitmem: purge",
                stale_after=repo.stale_lock_seconds,
                timeout=repo.lock_timeout,
            ):
                break
        else:
            raise MemoryStoreError(
                "unavailable", f"refs kept moving under writers outside gitmem ({MAX_ATTEMPTS} attempts)"
            )
        _prune_now(repo)
        return commit


def _all_blobs(repo: GitRepo) -> list[str]:
    """Every blob in the object store, reachable or not: what a purge erases."""
    done = run_git(repo.path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")
    return [line[:40] for line in done.stdout.splitlines() if line.endswith(" blob")]


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
    with translate_errors(repo.path), repo.maintenance("forget"):
        _check_prunable(repo)
        # The mark names the path by its keyed fingerprint only: it is a file of the mount too.
        mark = f"forget {erasures.fingerprint(repo.path, path)}"
        unfinished = _mark_pending(repo, mark)
        try:
            report, keep = _rewrite_until_stable(repo, path, origin)
        except MemoryStoreError as exc:
            if unfinished is None:
                os.unlink(repo.pending_path)
                raise
            _prune_now(repo)
            if exc.code == "not_found" and unfinished == mark:
                # The same forget stopped after moving the refs: its prune is what was left.
                return ForgetReport(path=path, head=repo.head(), names=(), commits_rewritten=0, refs_updated=())
            raise
        _prune_now(repo, keep)
        # The erased versions still on disk: another file holds the same content (the prune checked).
        odb = repo.fresh().odb
        return replace(report, shared_versions=tuple(o for o in report.erased_versions if pygit2.Oid(hex=o) in odb))


def _check_prunable(repo: GitRepo) -> None:
    """Refuse, before changing anything, what would keep erased objects on disk after the prune.

    Two things do: a ``.keep`` file (git's repack leaves its pack alone) and
    objects borrowed from another repository (``objects/info/alternates``, as
    ``git clone --shared`` makes), which no prune of this mount can reach.
    """
    borrowed = object_dirs(os.path.join(repo.path, "objects"))[1:]
    if borrowed:
        raise MemoryStoreError(
            "unavailable",
            f"{repo.path} borrows objects from {borrowed[0]} (objects/info/alternates), and old versions "
            "held there cannot be erased from here; nothing was changed (copy them in with "
            "`git repack -a -d`, delete objects/info/alternates, and try again)",
        )
    _drop_own_keeps(repo.path)
    packs = os.path.join(repo.path, "objects", "pack")
    kept = sorted(name for name in os.listdir(packs) if name.endswith(".keep")) if os.path.isdir(packs) else []
    if kept:
        raise MemoryStoreError(
            "unavailable",
            f"{os.path.join(packs, kept[0])} keeps its pack from pruning, so old versions could not be erased; "
            "nothing was changed (remove the .keep file and try again)",
        )


def _rewrite_until_stable(repo: GitRepo, path: str, origin: Origin) -> tuple[ForgetReport, str | None]:
    for _ in range(5):
        try:
            return _rewrite(repo, repo.fresh(), path, origin)
        except _Moved:
            continue
    raise MemoryStoreError("unavailable", "refs kept moving while forget ran; try again")


def _tips(r: pygit2.Repository) -> dict[str, str]:
    """Every direct ref and what it points at (commits, or tags of commits); the erasure ledger aside."""
    tips: dict[str, str] = {}
    for name in r.references:
        ref = r.references.get(name)
        if name == erasures.LEDGER_REF or ref is None or ref.type != pygit2.enums.ReferenceType.DIRECT:
            continue
        tips[name] = str(ref.target)
    return tips


def _commit_of(r: pygit2.Repository, oid: str) -> str | None:
    """The commit ``oid`` is or (through tags) points at; ``None`` for anything else."""
    try:
        return str(r[oid].peel(pygit2.Commit).id)
    except (KeyError, pygit2.GitError):
        return None


def _names_per_commit(r: pygit2.Repository, tips: list[str], path: str) -> list[tuple[RawCommit, set[str]]]:
    """Each commit reachable from ``tips`` (children first) with the names to erase in it.

    A commit that may have moved a name here is checked against its first
    parent: it holds the name and the parent does not. Each commit is read
    once, raw (:func:`_children_first`), and whether a tree holds a name is
    looked up in its raw bytes once per tree.
    """
    read = PackedFirst(r)
    held: dict[tuple[str, str], bool] = {}

    def holds(tree: str, name: str) -> bool:
        key = (tree, name)
        if key not in held:
            held[key] = _tree_entry(read, tree, name) is not None
        return held[key]

    commits = _children_first(read, tips)
    pending: dict[str, set[str]] = {}
    order: list[tuple[RawCommit, set[str]]] = []
    for raw in commits.values():
        names = pending.pop(raw.oid, None) or {path}
        older: set[str] = set()
        for name in names:
            source = None
            if raw.parents and may_have_moved_to(raw, name) and holds(raw.tree, name):
                if not holds(commits[raw.parents[0]].tree, name):
                    source = moved_from(r[raw.oid].peel(pygit2.Commit), name, exact=True)
            older.add(source or name)
        for parent in raw.parents:
            pending.setdefault(parent, set()).update(older)
        order.append((raw, names))
    return order


def _children_first(read: PackedFirst, tips: list[str]) -> dict[str, RawCommit]:
    """Every commit reachable from ``tips``, read raw once each, ordered so a commit comes before its parents.

    Kahn's order over the commits' parent lines: a commit is emitted once all
    its children are. This replaces libgit2's topological walk, which parsed
    every commit a second time.
    """
    commits: dict[str, RawCommit] = {}
    children: dict[str, int] = {}
    stack = list(dict.fromkeys(tips))
    while stack:
        oid = stack.pop()
        if oid in commits:
            continue
        raw = commits[oid] = RawCommit(oid, read(oid))
        for parent in raw.parents:
            children[parent] = children.get(parent, 0) + 1
            if parent not in commits:
                stack.append(parent)
    ordered: dict[str, RawCommit] = {}
    ready = [oid for oid in dict.fromkeys(tips) if oid not in children]
    while ready:
        raw = commits[ready.pop()]
        ordered[raw.oid] = raw
        for parent in reversed(raw.parents):
            left = children[parent] - 1
            children[parent] = left
            if left == 0:
                ready.append(parent)
    return ordered


def _tree_entry(read: PackedFirst, tree: str, path: str) -> tuple[bytes, str] | None:
    """The mode and id at ``path`` under ``tree``, read from raw trees; None when it is not there."""
    found: tuple[bytes, str] | None = None
    for part in path.encode().split(b"/"):
        if found is not None:
            if found[0] != b"40000":
                return None
            tree = found[1]
        match = entry_named(part).match(read(tree))
        if match is None:
            return None
        found = (match.group(1), match.group(2).hex())
    return found


def _carry_to_side_branches(r: pygit2.Repository, order: list[tuple[RawCommit, set[str]]], main: str) -> None:
    """Add to each commit off ``main`` the names its parents erase that it still holds.

    The walk back from the tips names a file by what it is called at each tip;
    a branch that forked before a move on ``main`` (a review proposal) and kept
    editing the old name never mentions the new one, so without this its own
    versions of the file would survive the forget. A name is carried only while
    the branch holds it without a break, or to where the branch itself moved it,
    and never onto ``main``'s own commits, whose live files the walk back already
    decided.
    """
    on_main = {str(c.id) for c in r.walk(pygit2.Oid(hex=main), _SORT_CHILDREN_FIRST)}
    names_of = {raw.oid: names for raw, names in order}
    trees: dict[str, pygit2.Tree] = {}

    def holds(commit: str, name: str) -> bool:
        tree = trees.get(commit)
        if tree is None:
            tree = trees[commit] = r[commit].peel(pygit2.Tree)
        return entry_id(tree, name) is not None

    for raw, names in reversed(order):  # parents first
        if raw.oid in on_main:
            continue
        for parent in raw.parents:
            for name in list(names_of.get(parent, ())):
                if not holds(parent, name):
                    continue
                if holds(raw.oid, name):
                    names.add(name)
                else:  # the branch moved it: its new name carries the same file on
                    moved = _renamed_to(r, parent, raw.oid, name)
                    if moved is not None:
                        names.add(moved)


def _renamed_to(r: pygit2.Repository, parent: str, child: str, name: str) -> str | None:
    """Where ``child`` moved the file ``name`` of ``parent``, if the trees show a move.

    Only an exact rename counts (the same blob under the new name, as gitmem's own
    moves leave it), as for moves on the walk back: a file that merely resembles
    the erased one is someone else's and stays.
    """
    for delta in renames(r[parent].peel(pygit2.Tree), r[child].peel(pygit2.Tree)):
        if delta.old_file.path == name and delta.old_file.id == delta.new_file.id:
            return str(delta.new_file.path)
    return None


def _rewrite(repo: GitRepo, r: pygit2.Repository, path: str, origin: Origin) -> tuple[ForgetReport, str | None]:
    """The rewrite and ref swap; returns the report and the new pack, if the prune may keep it whole."""
    tips = _tips(r)
    commit_tips = {name: c for name, target in tips.items() if (c := _commit_of(r, target)) is not None}
    order = _names_per_commit(r, sorted(set(commit_tips.values())), path)
    main_tip = commit_tips.get(MAIN)
    if main_tip is not None and any(
        tip != main_tip and not r.descendant_of(main_tip, tip) for tip in set(commit_tips.values())
    ):  # some commit is off main
        _carry_to_side_branches(r, order, main_tip)
    out = RewrittenObjects(r)
    erased: set[str] = set()
    seen_names: set[str] = set()
    trees: list[str] = []
    for commit, names in reversed(order):  # parents first: which names each tree loses
        tree_id = commit.tree
        for name in sorted(names):
            before = tree_id
            tree_id = out.erase(tree_id, name)
            if tree_id != before:
                seen_names.add(name)
                erased.update(out.erased_blobs)
        trees.append(tree_id)
    if not seen_names:
        raise MemoryStoreError("not_found", f"{path} is not in this memory's history")
    # Then the commits: a new tree, a rewritten parent or a message naming an erased
    # path in any form (replaced by the marker: "create ops/wifi.md" must not survive,
    # nor "wifi.md" or "wifi" in a body; the rule is NameScrub's).
    scrub_names = seen_names | {path} | out.erased_files
    scrub = NameScrub(scrub_names)
    mapped: dict[str, str] = {}
    for (commit, _), tree_id in zip(reversed(order), trees, strict=True):
        parents = [mapped.get(p, p) for p in commit.parents]
        names_it = scrub.names(commit.data.partition(b"\n\n")[2])
        if tree_id != commit.tree or parents != commit.parents or names_it:
            mapped[commit.oid] = out.commit(commit.data, tree_id, parents, scrub=scrub if names_it else None)
    updates: dict[str, str] = {}
    for name, target in tips.items():
        commit_id = commit_tips.get(name)
        if commit_id is not None and commit_id in mapped:
            updates[name] = out.retarget(target, mapped, scrub)
    main_old = tips.get(MAIN)
    if main_old is None:
        raise MemoryStoreError("unavailable", f"{repo.path} has no {MAIN}")
    pack = out.pack()
    if pack is not None:  # on disk before any ref names its objects, as git's own index-pack would fsync it
        packwrite.write_pack_files(repo.path, *pack, durable=True)
    # A commit that lost two names passed through a tree that no commit keeps (and that still names the second).
    keep = pack[0] if pack is not None and not out.made_unreachable else None
    main_base = updates.get(MAIN, main_old)
    author = pygit2.Signature(origin.principal_id or COMMITTER_NAME, COMMITTER_EMAIL)
    committer = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
    base_tree = r[main_base].peel(pygit2.Commit).tree_id
    entry = erasures.new_entry(
        "forget",
        origin.principal_id or COMMITTER_NAME,
        (erasures.fingerprint(repo.path, n) for n in scrub_names),
        erased,
        (commit_tips[n] for n in updates if n in commit_tips),
    )
    # Who and which ledger entry, never the path (only its keyed fingerprint).
    printed = erasures.fingerprint(repo.path, path)
    trailers = ((erasures.ERASURE_TRAILER, entry.id), (erasures.PRINT_TRAILER, printed))
    message = commit_message("forget", (), origin, extra=trailers, summary=f"forget (erasure {entry.id})")
    audit = r.create_commit(None, author, committer, message, base_tree, [pygit2.Oid(hex=main_base)])
    updates[MAIN] = str(audit)
    erasures.write_pending(repo.path, entry)  # the prune after the swap puts it in the ledger
    # Every ref moves at once, and only if each still holds what the rewrite started from.
    moves: dict[str, tuple[str | None, str | None]] = {name: (tips[name], new) for name, new in updates.items()}
    if not swap_refs(
        r, repo.path, moves, message="gitmem forget", stale_after=repo.stale_lock_seconds, timeout=repo.lock_timeout
    ):
        erasures.drop_pending(repo.path, entry.id)
        raise _Moved(", ".join(sorted(updates)))
    report = ForgetReport(
        path=path,
        head=str(audit),
        names=tuple(sorted(seen_names)),
        commits_rewritten=len(mapped),
        refs_updated=tuple(sorted(updates)),
        erased_versions=tuple(sorted(erased)),
        erasure=entry.id,
    )
    return report, keep
