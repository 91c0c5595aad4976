"""Bring an existing git repository of notes into a memory with its history (``gitmem import --history``).

A plain ``gitmem import`` of a folder makes one commit; a team whose notes already
live in git wants their past too, and a later ``git push`` of that repository to work.
So the source's commits are brought in unchanged (same ids: authors, dates and
messages kept) and ``main`` is set to them:

1. the source's ``REV`` (default ``HEAD``) is fetched into a quarantine that
   borrows the mount's objects (:mod:`gitmem.git.quarantine`); nothing reaches
   the mount yet;
2. every commit it brings is held to the push rules (:mod:`gitmem.git.pushcheck`),
   one verdict per commit; a commit is taken when it passes and every parent was
   taken, and the newest taken commit on the source's first-parent line is what
   lands. Refused commits are listed with file and rule; the commits after them
   (which contain them) are listed as following a refused commit. ``strict`` takes
   nothing when anything is refused;
3. the landing commit passes :func:`~gitmem.git.pushcheck.check_updates` for
   ``main`` (git's strict object checks and the memory's file and byte limits);
4. only then do objects move into the mount: exactly those the landing commit
   reaches (:meth:`~gitmem.git.quarantine.Quarantine.admit`), never a refused
   commit's nor anything else the fetch brought; ``main`` then moves by
   compare-and-swap under the writer lock.

A new memory's ``main`` is its one "init memory" commit with an empty tree. That
commit is replaced, not kept as an unrelated root: the memory's history *is* the
source's, so the source repository and the memory push and pull with each other.
A memory that already holds work takes a history only when its ``main`` is part of
it (bringing in what the source gained since an earlier import); anything else is
``version_mismatch`` and nothing changes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git import erasures
from gitmem.git.cli import FETCH, run_git
from gitmem.git.historyrewrite import Dropped, imported_ids, rewrite_history
from gitmem.git.loose import open_repository
from gitmem.git.merge import fresh_memory, refused_by_rules, store_objects
from gitmem.git.pushcheck import ZERO, CommitVerdict, RefUpdate, Refusal, check_commits, check_updates
from gitmem.git.quarantine import open_quarantine
from gitmem.git.refs import MAIN, swap_ref
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.secrets import scrub_credentials

_INCOMING = "refs/heads/incoming"


@dataclass
class HistoryImport:
    """What an import of history did: the commit ``main`` is at, the commits taken, the ones left out.

    ``source`` is the repository as shown: a URL's credentials hidden
    (:func:`gitmem.secrets.scrub_credentials`), since reports are printed.
    """

    source: str
    rev: str
    before: str
    head: str | None = None
    imported: list[str] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    after_refused: list[str] = field(default_factory=list)
    replaced_init: bool = False
    rewritten: dict[str, str] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)


def _fetch(scratch: str, source: str, rev: str) -> str:
    """Fetch ``rev`` of the repository at ``source`` into ``scratch``; the commit it names."""
    if rev.startswith("-") or not rev.strip() or any(c in rev for c in ": \t\n\\^~"):
        raise MemoryStoreError("not_found", f"{rev!r} is not a branch or tag name")
    # A folder is named absolutely (the fetch runs in the scratch folder); anything else is a URL for git.
    where = os.path.abspath(source) if os.path.exists(source) else source
    what = f"git fetch from {source}"
    done = run_git(
        [
            *FETCH,
            "--",
            where,
            f"+{rev}:{_INCOMING}",
        ],
        cwd=scratch,
        what=what,
    )
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-3:])
        if "does not appear to be a git repository" in done.stderr or "not a git repository" in done.stderr:
            raise MemoryStoreError("not_found", f"{source} is not a git repository")
        if "couldn't find remote ref" in done.stderr.lower():
            raise MemoryStoreError("not_found", f"{source} has no {rev!r}")
        raise MemoryStoreError("unavailable", f"{what} failed: {tail}")
    with open_repository(scratch) as r:
        try:
            tip = str(r.references[_INCOMING].peel(pygit2.Commit).id)
            r.references.delete(_INCOMING)  # no ref may exempt the fetched commits from the check
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise MemoryStoreError("unavailable", f"{what} brought no commit: {exc}") from exc
        return tip


def _first_parents(scratch: str, tip: str) -> list[str]:
    with open_repository(scratch) as r:
        line, at = [], r[tip].peel(pygit2.Commit)
        while True:
            line.append(str(at.id))
            if not at.parent_ids:
                return line
            at = r[at.parent_ids[0]].peel(pygit2.Commit)


def _choose(verdicts: Sequence[CommitVerdict], line: list[str], hidden: set[str]) -> tuple[set[str], str | None]:
    """The commits taken (passing, with every parent taken) and the newest of them on the first-parent line."""
    taken: set[str] = set()
    for v in verdicts:  # parents first
        if not v.refusals and all(p in taken or p in hidden for p in v.parents):
            taken.add(v.commit)
    land = next((c for c in line if c in taken), None)
    return taken, land


def import_history(
    git: GitRepo,
    fmt: FileFormat,
    source: str,
    *,
    rev: str = "HEAD",
    strict: bool = False,
    rewrite: bool = False,
    exclude: Sequence[str] = (),
    gitignore: bool = False,
) -> HistoryImport:
    """Bring the history of ``rev`` in the repository at ``source`` into ``main``; see the module docstring.

    ``rewrite`` first rewrites the fetched commits without the entries the rules
    refuse or ``exclude`` and ``gitignore`` leave out (:mod:`gitmem.git.historyrewrite`),
    in the quarantine; the rewritten history is then checked and lands as above.
    """
    with translate_errors(git.path):
        before = git.head()
        fresh = fresh_memory(git.repo, before)
        report = HistoryImport(scrub_credentials(source), rev, before, replaced_init=False)
        with open_quarantine(git.path) as held:
            scratch = held.path
            tip = _fetch(scratch, source, rev)
            with open_repository(scratch) as lent:
                erasures.lend_ledger(git.repo, lent)  # what the mount erased is refused here too
            hidden: set[str] = set() if fresh else {str(before)}
            if rewrite:
                done = {} if fresh else imported_ids(git.repo, before)
                result = rewrite_history(scratch, tip, fmt, exclude=exclude, gitignore=gitignore, done=done)
                tip, report.rewritten, report.dropped = result.tip, result.rewritten, result.dropped
            if not fresh:
                with open_repository(scratch) as r:
                    if tip != before and not r.descendant_of(pygit2.Oid(hex=tip), pygit2.Oid(hex=before)):
                        raise MemoryStoreError(
                            "version_mismatch",
                            "this memory already has its own history, which the source's does not build on; "
                            "import a history into a new memory (--create) or an empty one; main was not changed",
                        )
            verdicts = check_commits(scratch, tip, fmt, hide=sorted(hidden))
            taken, land = _choose(verdicts, _first_parents(scratch, tip), hidden)
            for v in verdicts:
                report.refused.extend(v.refusals)
                if not v.refusals and v.commit not in taken:
                    report.after_refused.append(v.commit)
            if strict and (report.refused or report.after_refused):
                return report
            if land is None or land == before:
                report.head = before
                return report
            with git.lock.hold():
                ours = git.head()
                if ours != before:
                    raise MemoryStoreError("version_mismatch", "main moved while the history was checked; try again")
                if not fresh:
                    with open_repository(scratch) as r:
                        r.references.create(MAIN, pygit2.Oid(hex=ours), force=True)
                final = check_updates(
                    scratch, [RefUpdate(MAIN, ZERO if fresh else ours, land)], fmt, strict_objects=True
                )
                if final[MAIN]:
                    raise refused_by_rules(f"the history of {source}", final[MAIN])
                store_objects(git, held, land, f"the history of {source}")
                if not swap_ref(
                    git.repo,
                    git.path,
                    MAIN,
                    ours,
                    land,
                    message=f"gitmem import history from {report.source}",
                    stale_after=git.stale_lock_seconds,
                    timeout=git.lock_timeout,
                ):
                    raise MemoryStoreError("version_mismatch", "main moved while the history was imported; try again")
        reachable = {str(c.id) for c in git.repo.walk(pygit2.Oid(hex=land), pygit2.enums.SortMode.NONE)}
        report.imported = [v.commit for v in verdicts if v.commit in taken and v.commit in reachable]
        report.head = land
        report.replaced_init = fresh
        return report
