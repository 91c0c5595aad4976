"""The proof that an erasure holds: what ``gitmem fsck NAME --erasures`` checks, and who still holds an erased blob.

Run by an admin after ``forget`` or ``purge``, never on a write or read path:
it lists the whole object store with ``git cat-file`` and walks the refs, the
reflogs, the quarantines left by killed transfers and the derived files under
``gitmem/``, each read through the mount's one bounded opener.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import pygit2

from gitmem.git import cli, quarantine
from gitmem.git.erasures import LEDGER_REF, entries
from gitmem.localfile import read_local_head


def paths_holding(repo_path: str, blobs: frozenset[str]) -> list[str]:
    """Every path that some commit of some ref (the ledger aside) holds one of ``blobs`` at."""
    if not blobs:
        return []
    listed = cli.run_git(
        ["rev-list", "--objects", f"--exclude={LEDGER_REF}", "--all"], git_dir=repo_path, check=True
    ).stdout
    return sorted({line[41:] for line in listed.splitlines() if line[:40] in blobs and len(line) > 41})


@dataclass(frozen=True, slots=True)
class Audit:
    """What ``gitmem fsck NAME --erasures`` found: ``holders`` name what still holds an erased object.

    ``written_again`` are blobs only a purge erased that agents have written
    afresh since (allowed, see :func:`refuse_erased`); they are listed, not failures.
    """

    entries: int
    blobs: int
    holders: tuple[str, ...]
    written_again: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.holders


_HEX_ID = re.compile(rb"(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])")
_NOT_DERIVED = frozenset({"erasure-key", "erasure-pending.json", "generation", "forget-pending"})
_DERIVED_READ = 256 * 1024 * 1024


def audit(r: pygit2.Repository, repo_path: str) -> Audit:
    """Check every ledger entry against the objects, refs, reflogs, packs and derived files of the mount."""
    found = entries(r)
    forgotten = {b: e.id for e in found if e.kind != "purge" for b in e.blobs}
    purged = {b: e.id for e in found if e.kind == "purge" for b in e.blobs if b not in forgotten}
    tips = {t: e.id for e in found for t in e.tips}
    listed = cli.run_git(
        ["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], git_dir=repo_path, check=True
    ).stdout.split()
    present = set(listed)
    holders: list[str] = []
    for oid, entry in sorted(forgotten.items()):
        if oid in present:
            holders.append(
                f"object {oid} (erasure {entry}) is still in the object store{_reached_from(repo_path, oid)}"
            )
    for oid, entry in sorted(tips.items()):
        if oid in present:
            holders.append(
                f"commit {oid} from before erasure {entry} is still in the object store{_reached_from(repo_path, oid)}"
            )
    logs = os.path.join(repo_path, "logs")
    for folder, _, files in os.walk(logs):
        for name in files:
            path = os.path.join(folder, name)
            for oid in _ids_in(path, set(tips) | set(forgotten)):
                holders.append(f"reflog {os.path.relpath(path, repo_path)} names {oid} from before an erasure")
    for left in quarantine.leftovers(repo_path):
        where = os.path.relpath(left.path, repo_path)
        for oid in quarantine.holds(left.objects, sorted({*forgotten, *tips})):
            holders.append(
                f"object {oid} is in {where}, the quarantine of a push, pull or import that was killed "
                "(not in the object store); the next one or gitmem gc NAME deletes it"
            )
        if found and quarantine.unindexed(left.objects):
            holders.append(
                f"{where}, the quarantine of a push, pull or import that was killed, holds a partly received "
                "pack whose objects cannot be listed; the next one or gitmem gc NAME deletes it"
            )
    gitmem_dir = os.path.join(repo_path, "gitmem")
    for folder, dirs, files in os.walk(gitmem_dir):
        dirs[:] = [
            d
            for d in dirs
            if not os.path.islink(os.path.join(folder, d))
            and not (folder == gitmem_dir and quarantine.is_quarantine(d))
        ]
        for name in files:
            if folder == gitmem_dir and name in _NOT_DERIVED:
                continue
            path = os.path.join(folder, name)
            for oid in _ids_in(path, set(forgotten)):
                holders.append(f"derived file {os.path.relpath(path, repo_path)} names erased version {oid}")
    again = tuple(sorted(oid for oid in purged if oid in present))
    return Audit(len(found), len(forgotten) + len(purged), tuple(holders), again)


def _reached_from(repo_path: str, oid: str) -> str:
    """Where ``oid`` is reachable from: the first ref (the ledger counts: clones fetch it), else the reflogs, else none."""
    refs = cli.run_git(["for-each-ref", "--format=%(refname)"], git_dir=repo_path, check=True).stdout.split()
    for ref in refs:
        listed = cli.run_git(["rev-list", "--objects", ref], git_dir=repo_path, check=True).stdout
        if any(line[:40] == oid for line in listed.splitlines()):
            return f", reachable from {ref}"
    listed = cli.run_git(["rev-list", "--objects", "--reflog"], git_dir=repo_path, check=False).stdout
    if any(line[:40] == oid for line in listed.splitlines()):
        return ", reachable from no ref, only from a reflog"
    return (
        ", reachable from no ref or reflog (only a prune deletes it: gitmem gc NAME runs one "
        "when an erasure did not finish)"
    )


def _ids_in(path: str, wanted: set[str]) -> list[str]:
    data = read_local_head(path, _DERIVED_READ) if wanted else None  # a link or FIFO holds none
    if data is None:
        return []
    return sorted({m.group(0).decode() for m in _HEX_ID.finditer(data)} & wanted)
