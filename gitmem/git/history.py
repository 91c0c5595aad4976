"""Reading and undoing history with pygit2: log, diff, blame, restore, revert.

Reads take no lock: they start from one head and only follow immutable objects.
``restore`` and ``revert`` are ordinary writes through :func:`gitmem.git.engine.transact`,
so they are compare-and-swap commits like any other change and never rewrite
history (erasing history is :mod:`gitmem.git.rewrite`).

``log`` walks raw commit bytes and follows a path across moves with
:mod:`gitmem.git.walk`; ``forget`` follows moves the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, decode_stored, encode_text, validate_directory, validate_path
from gitmem.git.refs import MAIN
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.snapshot import Plan, Snapshot, blob_size, check_shape, stored_file
from gitmem.git.treediff import FileChange, file_changes
from gitmem.git.walk import Follower, diff_to_parent, entry_id, walk
from gitmem.history import (
    BlameLine,
    DiffHunk,
    FileDiff,
    LogEntry,
    check_bound,
    check_filter,
    check_log_limit,
    git_time,
    origin_matches,
)
from gitmem.model import FileText, Origin
from gitmem.provenance import T_REV, CommitInfo, parse_message
from gitmem.store import check_capacity, check_expected, plain

if TYPE_CHECKING:
    from gitmem.git import gitblame

_STATUS = {
    pygit2.enums.DeltaStatus.ADDED: "added",
    pygit2.enums.DeltaStatus.DELETED: "deleted",
    pygit2.enums.DeltaStatus.MODIFIED: "modified",
    pygit2.enums.DeltaStatus.RENAMED: "renamed",
    pygit2.enums.DeltaStatus.TYPECHANGE: "modified",
}
_NO_FILE = "0" * 40
_FILE_MODE = 0o100644


# --- small helpers ------------------------------------------------------------------------


def commit_time(commit: pygit2.Commit) -> datetime:
    return git_time(commit.commit_time, commit.commit_time_offset)


def resolve(repo: GitRepo, rev: object) -> str:
    """The commit id ``rev`` names, or ``not_found``."""
    commit = repo.resolve(rev) if isinstance(rev, str) and rev and not rev.startswith("-") else None
    if commit is None:
        if not os.path.isdir(os.path.join(repo.path, "objects")):
            raise MemoryStoreError("memory_deleted", f"the memory at {repo.path} no longer exists")
        raise MemoryStoreError("not_found", f"no commit {rev!r} in this memory")
    return commit


def touched_paths(r: pygit2.Repository, commit: pygit2.Commit, info: CommitInfo) -> tuple[str, ...]:
    """The paths a change names: its trailers, or for plain-git commits its tree diff."""
    if info.op != "unknown" or info.paths:
        return info.paths
    changes = _file_changes(r, commit)
    if not _may_rename(changes):
        return tuple(change.path for change in changes)
    diff = diff_to_parent(commit)  # renames pair an old name with a new one: libgit2's similarity decides
    diff.find_similar()
    paths: list[str] = []
    for delta in diff.deltas:
        for p in (delta.old_file.path, delta.new_file.path):
            if p not in paths:
                paths.append(p)
    return tuple(paths)


def _file_changes(r: pygit2.Repository, commit: pygit2.Commit) -> list[FileChange]:
    """What a commit changed against its first parent (a root commit: against nothing)."""
    return file_changes(r, commit.parents[0].tree_id if commit.parents else None, commit.tree_id)


def _may_rename(changes: list[FileChange]) -> bool:
    """Whether rename detection could pair anything: some file went and some file came."""
    return any(c.new is None for c in changes) and any(c.old is None for c in changes)


def _entry(r: pygit2.Repository, commit: pygit2.Commit, info: CommitInfo, paths: tuple[str, ...] | None = None) -> LogEntry:
    return LogEntry(
        commit=str(commit.id),
        time=commit_time(commit),
        op=info.op,
        paths=touched_paths(r, commit, info) if paths is None else paths,
        origin=info.origin,
        summary=info.summary,
        author=commit.author.name,
    )


# --- log ----------------------------------------------------------------------------------


def log(
    repo: GitRepo,
    fmt: FileFormat,
    path: str | None = None,
    *,
    run: str | None = None,
    principal: str | None = None,
    tool_call: str | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    limit: int = 100,
    head: str | None = None,
) -> list[LogEntry]:
    """Changes newest first, optionally those of one path (followed across moves).

    The walk starts at ``head`` (a commit id; default ``main``'s head), so a run
    reading its proposal sees its own commits on top of the ``main`` it forked
    from; a string ``until`` names the start explicitly instead.

    A commit counts as a change of the path when the path's entry differs from
    its parent's (for a merge: from every parent, as ``git log`` simplifies).
    A datetime ``since`` stops the walk after a few commits older than it, as
    ``git log --since`` does, so a short recent window stays cheap.
    """
    if path is not None:
        path = validate_path(path, fmt)
    want = Origin(check_filter("run", run), check_filter("principal", principal), check_filter("tool_call", tool_call))
    needles = [v.encode() for v in (want.run_id, want.principal_id, want.tool_call_id) if v]
    lo, hi = check_bound("since", since), check_bound("until", until)
    limit = check_log_limit(limit)
    with translate_errors(repo.path):
        r = repo.fresh()
        start = resolve(repo, hi) if isinstance(hi, str) else (head or repo.head())
        hidden = {c.oid for c in walk(r, resolve(repo, lo))} if isinstance(lo, str) else set()
        lo_ts = lo.timestamp() if isinstance(lo, datetime) else None
        hi_ts = hi.timestamp() if isinstance(hi, datetime) else None
        follow = Follower(r, start, path) if path is not None else None
        out: list[LogEntry] = []
        older = 0
        for raw in walk(r, start, hidden):
            if lo_ts is not None:
                older = older + 1 if raw.time < lo_ts else 0
                if older >= 5:
                    break
            paths: tuple[str, ...] | None = None
            if follow is not None:
                touched, paths = follow.step(raw)
                if not touched:
                    continue
            if (lo_ts is not None and raw.time < lo_ts) or (hi_ts is not None and raw.time > hi_ts):
                continue
            if needles and not all(n in raw.data for n in needles):
                continue
            commit = r[raw.oid].peel(pygit2.Commit)
            info = parse_message(commit.message)
            if not origin_matches(info.origin, want.run_id, want.principal_id, want.tool_call_id):
                continue
            out.append(_entry(r, commit, info, paths))
            if len(out) >= limit:
                break
        return out


# --- show ---------------------------------------------------------------------------------


def show(repo: GitRepo, fmt: FileFormat, rev: str, path: str) -> FileText:
    """``path`` as it was at ``rev``.

    Read through a handle reopened after any forget or purge, so a long-lived
    process cannot serve a forgotten version from a pack it still has open.
    """
    path = validate_path(path, fmt)
    with translate_errors(repo.path):
        r = repo.fresh()
        commit = resolve(repo, rev)
        oid = entry_id(r[commit].peel(pygit2.Commit).tree, path)
        obj = r[oid] if oid is not None else None
        if oid is None or obj is None or obj.type != pygit2.enums.ObjectType.BLOB:
            raise MemoryStoreError("not_found", f"{path} does not exist at {rev}")
        return FileText(path, decode_stored(bytes(obj.read_raw())), oid)


# --- diff -----------------------------------------------------------------------------


def diff(
    repo: GitRepo, fmt: FileFormat, a: str, b: str | None = None, path: str | None = None, *, head: str | None = None
) -> list[FileDiff]:
    """Unified hunks per changed file from ``a`` to ``b`` (default: ``head``, else ``main``'s head).

    ``path`` narrows to one file (either side of a rename) or, ending in ``/``,
    to a folder. Renames are detected, so a move shows as one ``renamed`` entry.
    """
    exact, prefix = _path_filter(path, fmt)
    with translate_errors(repo.path):
        r = repo.fresh()
        old = r[resolve(repo, a)].peel(pygit2.Commit).tree
        new = r[(head or repo.head()) if b is None else resolve(repo, b)].peel(pygit2.Commit).tree
        changes = file_changes(r, old.id, new.id)
        if _may_rename(changes) or any(side[0] != _FILE_MODE for c in changes for side in (c.old, c.new) if side):
            return _libgit2_diff(old, new, exact, prefix)
        out: list[FileDiff] = []
        for change in changes:
            if (exact is not None and change.path != exact) or (prefix is not None and not change.path.startswith(prefix)):
                continue
            before = r[change.old[1]].peel(pygit2.Blob) if change.old is not None else None
            after = r[change.new[1]].peel(pygit2.Blob) if change.new is not None else None
            patch = pygit2.Patch.create_from(
                before, after, old_as_path=change.path, new_as_path=change.path, context_lines=3, interhunk_lines=0
            )
            out.append(_file_diff(patch.delta, patch))
        return out


def _libgit2_diff(old: pygit2.Tree, new: pygit2.Tree, exact: str | None, prefix: str | None) -> list[FileDiff]:
    """The tree diff by libgit2, for what needs its rename detection or file modes.

    It visits every entry of both trees (tens of ms at 100k files), so plain
    edits take the path above, which reads only the folders that changed.
    """
    d = old.diff_to_tree(new, context_lines=3, interhunk_lines=0)
    d.find_similar()
    out: list[FileDiff] = []
    for i, delta in enumerate(d.deltas):
        names = (delta.old_file.path, delta.new_file.path)
        if exact is not None and exact not in names:
            continue
        if prefix is not None and not any(n.startswith(prefix) for n in names):
            continue
        out.append(_file_diff(delta, d[i]))
    return out


def _path_filter(path: str | None, fmt: FileFormat) -> tuple[str | None, str | None]:
    if path is None or path == "":
        return None, None
    if isinstance(path, str) and path.endswith("/"):
        return None, validate_directory(path, fmt)
    return validate_path(path, fmt), None


def _file_diff(delta: pygit2.DiffDelta, patch: pygit2.Patch | None) -> FileDiff:
    status = _STATUS.get(delta.status, "modified")
    old_version = None if status == "added" else str(delta.old_file.id)
    new_version = None if status == "deleted" else str(delta.new_file.id)
    hunks: list[DiffHunk] = []
    binary = bool(delta.is_binary)
    if patch is not None and not binary:
        for hunk in patch.hunks:
            lines: list[str] = []
            for line in hunk.lines:
                text = line.content.rstrip("\n")
                if line.origin in (" ", "+", "-"):
                    lines.append(line.origin + text)
                elif line.origin in ("=", ">", "<"):
                    lines.append("\\ No newline at end of file")
            hunks.append(
                DiffHunk(
                    hunk.old_start,
                    hunk.old_lines,
                    hunk.new_start,
                    hunk.new_lines,
                    hunk.header.rstrip("\n"),
                    tuple(lines),
                )
            )
    text = (patch.text or "") if patch is not None else ""
    return FileDiff(
        path=delta.new_file.path,
        old_path=delta.old_file.path,
        status=status,
        old_version=old_version if old_version != _NO_FILE else None,
        new_version=new_version if new_version != _NO_FILE else None,
        hunks=tuple(hunks),
        binary=binary,
        patch=text,
    )


# --- blame --------------------------------------------------------------------------------


def blame(
    repo: GitRepo, fmt: FileFormat, path: str, rev: str | None = None, *, head: str | None = None
) -> list[BlameLine]:
    """For each line of ``path`` (at ``rev``, else ``head``, else ``main``'s head), the change that last touched it."""
    path = validate_path(path, fmt)
    with translate_errors(repo.path):
        r = repo.fresh()
        start = (head or repo.head()) if rev is None else resolve(repo, rev)
        found = repo.read_at(start, path)
        if found is None:
            where = "" if rev is None else f" at {rev}"
            raise MemoryStoreError("not_found", f"{path} does not exist{where}")
        lines = decode_stored(found[1]).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            return []
        seen: dict[str, tuple[pygit2.Commit, CommitInfo]] = {}
        out: list[BlameLine] = []
        for hunk in _blame_hunks(repo, r, start, path):
            if hunk.commit not in seen:
                commit = r[hunk.commit].peel(pygit2.Commit)
                seen[hunk.commit] = (commit, parse_message(commit.message))
            commit, info = seen[hunk.commit]
            for n in range(hunk.start, hunk.start + hunk.lines):
                if 1 <= n <= len(lines):
                    out.append(
                        BlameLine(
                            n,
                            lines[n - 1],
                            hunk.commit,
                            commit_time(commit),
                            info.origin,
                            info.op,
                            info.summary,
                            hunk.path,
                            commit.author.name,
                        )
                    )
        return out


def _blame_hunks(repo: GitRepo, r: pygit2.Repository, start: str, path: str) -> list[gitblame.Hunk]:
    """``git blame``'s answer where git is installed (libgit2's grows with the memory), else libgit2's."""
    from gitmem.git import gitblame  # subprocess loads for blame only, not for every read

    found = gitblame.blame(repo.path, start, path)
    if found is not None:
        return found
    return [
        gitblame.Hunk(str(h.final_commit_id), h.final_start_line_number, h.lines_in_hunk, h.orig_path or path)
        for h in r.blame(path, newest_commit=pygit2.Oid(hex=start))
    ]


# --- restore and revert -----------------------------------------------------------------


def _checked_content(repo: GitRepo, fmt: FileFormat, path: str, oid: str) -> int:
    """Hold content brought back from history to today's file rules; return its size."""
    data = repo.blob(oid)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MemoryStoreError("invalid_file", f"{path} at that revision is not UTF-8 text") from None
    try:
        encode_text(text, fmt)
    except MemoryStoreError as exc:
        raise MemoryStoreError(exc.code, f"{path} at that revision breaks today's rules: {exc.message}") from None  # type: ignore[arg-type]
    return len(data)


def check_room(
    fmt: FileFormat,
    snap: Snapshot,
    path: str,
    current: FileText | None,
    new_size: int,
    size_of: Callable[[str], int],
) -> None:
    """Refuse a change that would take the memory past its file count or byte limit.

    ``size_of`` gives a blob's size (the store's cache), so a check reads the
    tree but no file content it has seen before.
    """
    if fmt.max_files is None and fmt.max_memory_bytes is None:
        return
    if current is None:
        # A file/folder collision is the answer even when the memory is full (as in the twin).
        check_shape(snap, path)
    files = list(snap.files())
    total = sum(blob_size(snap, size_of, oid) for _, oid in files) if fmt.max_memory_bytes is not None else 0
    check_capacity(
        path,
        creating=current is None,
        files=len(files),
        total_bytes=total,
        new_size=new_size,
        old_size=current.size if current is not None else 0,
        max_files=fmt.max_files,
        max_bytes=fmt.max_memory_bytes,
    )


def restore(
    repo: GitRepo,
    fmt: FileFormat,
    path: str,
    rev: str,
    *,
    expected: str | None,
    origin: Origin | None = None,
    ref: str = MAIN,
    size_of: Callable[[str], int] | None = None,
    delete: bool = False,
) -> str | None:
    """Set ``path`` back to its content at ``rev`` in one new commit.

    ``expected`` is the version the caller saw now (``None``: the file is absent
    now). When the file did not exist at ``rev`` a restore would delete it, which
    a careless ``rev`` must not do by surprise: that is ``not_found`` unless
    ``delete=True`` asks for the deletion. The content must
    pass today's file rules (size, format, secrets) like any write. Returns the
    new version, or ``None`` when the file is now absent. Restoring the state the
    file is already in commits nothing. ``ref`` is the branch the change lands on
    (a run's proposal under the review gate); ``size_of`` a cached blob size.
    """
    path = validate_path(path, fmt)
    origin = origin or Origin()

    def plan(snap: Snapshot) -> Plan[str | None]:
        # History is read under the writer lock, so a forget cannot prune it meanwhile.
        commit = resolve(repo, rev)
        old = repo.read_at(commit, path)
        target = old[0] if old is not None else None
        current = stored_file(snap, path)
        check_expected(path, current, expected)
        now = current.version if current is not None else None
        if now == target:
            return Plan.nothing(target)
        if target is None and not delete:
            raise MemoryStoreError(
                "not_found",
                f"{path} did not exist at {rev} ({commit[:12]}), so restoring it would delete it; "
                "pass delete=True (gitmem restore --delete) to delete it",
            )
        if target is not None:
            size = _checked_content(repo, fmt, path, target)
            check_room(fmt, snap, path, current, size, size_of or (lambda oid: len(repo.blob(oid))))
        return Plan(((path, target),), "restore", (path,), origin, target, detail=commit[:12], extra=((T_REV, commit),))

    from gitmem.git import engine  # a write: read commands (log, blame, diff) never load the engine

    return engine.transact(repo, plan, ref=ref).result


def revert(repo: GitRepo, fmt: FileFormat, commit: str, *, origin: Origin | None = None, ref: str = MAIN) -> str | None:
    """Undo one change in a new commit; returns its id, or ``None`` when nothing is left to undo.

    Every path the change touched must still be as the change left it; a later
    change to any of them is ``version_mismatch`` naming the path (``current``
    is that file now), and nothing is committed. A merge is undone against its
    first parent. ``ref`` is the branch the change lands on, as for :func:`restore`.
    """
    origin = origin or Origin()

    def plan(snap: Snapshot) -> Plan[None]:
        # History is read under the writer lock, so a forget cannot prune it meanwhile.
        cid = resolve(repo, commit)
        changes: list[tuple[str, str | None, str | None]] = []
        for change in _file_changes(repo.repo, repo.repo[cid].peel(pygit2.Commit)):
            changes.append((change.path, change.old and change.old[1], change.new and change.new[1]))
        now = {p: (f.version if f is not None else None) for p, _, _ in changes for f in [stored_file(snap, p)]}
        if all(now[p] == before for p, before, _ in changes):
            return Plan.nothing(None)
        short = cid[:12]
        for p, _, after in changes:
            if now[p] != after:
                others = len([q for q, _, a in changes if now[q] != a]) - 1
                more = f" (and {others} more)" if others else ""
                raise MemoryStoreError(
                    "version_mismatch",
                    f"cannot revert {short}: {p} changed after it{more}; restore the file instead",
                    current=plain(stored_file(snap, p)),
                )
        for p, before, _ in changes:
            if before is not None:
                _checked_content(repo, fmt, p, before)
        edits = tuple((p, before) for p, before, _ in changes)
        paths = tuple(p for p, _, _ in changes)
        return Plan(edits, "revert", paths, origin, None, detail=f"undo {short}", extra=((T_REV, cid),))

    from gitmem.git import engine

    return engine.transact(repo, plan, ref=ref).commit
