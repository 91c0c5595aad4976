"""Hold the commits of any plain git repository to a memory's rules (``gitmem check``).

A team that keeps its memory on a forge (GitHub, GitLab, Gitea) runs no gitmem
code there, so nothing stops a commit a gitmem push would refuse (a binary, a
secret, a link) from reaching the forge's ``main``; every root's next ``pull``
then refuses it. The forge's own gate is a required status check: a CI job on a
checkout runs this module, and branch protection keeps ``main`` from moving to a
commit it refused.

There is no second rule set here: every commit of the range is judged by
:func:`gitmem.git.pushcheck.check_commits` (each commit against its parents: paths,
modes, contents, secrets, identity and ``Gitmem-*`` trailers, erased content when
the repository carries gitmem's erasure ledger), and the range's tip by
:func:`gitmem.git.pushcheck.tip_limits` (the memory's file and byte limits), the
same functions a push to gitmem, a pull and ``import --history`` go through.

The repository is only read: a CI checkout or a bare repository on the forge's
disk, which may be read-only for the job.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git.loose import open_repository
from gitmem.git.mountconfig import format_from_repo
from gitmem.git.pushcheck import ZERO, Refusal, check_commits, tip_limits

_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass
class RangeCheck:
    """The verdict on a range: how many commits were read, and every refusal (commit, file, rule)."""

    repository: str
    range: str
    tip: str
    base: str | None
    commits: int = 0
    refused: list[Refusal] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.refused

    def refused_commits(self) -> list[tuple[str, list[Refusal]]]:
        """The refusals grouped by commit, oldest commit first (limits, which name the tip, last)."""
        groups: dict[str, list[Refusal]] = {}
        for r in self.refused:
            groups.setdefault(r.commit or self.tip, []).append(r)
        return list(groups.items())


def git_dir(path: str) -> str:
    """The git folder of the repository at ``path`` (a bare repository, or a work tree's ``.git``).

    ``not_found`` when ``path`` is not inside a git repository.
    """
    try:
        found = pygit2.discover_repository(os.path.abspath(path))
    except (pygit2.GitError, OSError) as exc:
        raise MemoryStoreError("not_found", f"{path} is not a git repository ({exc})") from exc
    if found is None:
        raise MemoryStoreError("not_found", f"{path} is not a git repository")
    return os.path.abspath(found)


def _resolve(repo: pygit2.Repository, rev: str) -> str:
    if rev.startswith("-") or not rev.strip():
        raise MemoryStoreError("not_found", f"{rev!r} is not a revision")
    try:
        return str(repo.revparse_single(rev).peel(pygit2.Commit).id)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
        raise MemoryStoreError("not_found", f"{rev!r} names no commit of this repository ({exc})") from None


def resolve_range(repo: pygit2.Repository, spec: str) -> tuple[str | None, str]:
    """``(base, tip)`` of ``REV`` (the whole history of REV) or ``BASE..TIP``.

    A ``BASE`` of all zeros (a forge's "before" for a branch that did not exist),
    an empty one, or a full commit id the repository does not have (a "before" that
    a force push left behind) means the whole history of ``TIP``; an empty ``TIP``
    is ``HEAD``.
    """
    if "..." in spec:
        raise MemoryStoreError("not_found", f"{spec!r}: give BASE..TIP (two dots), not a symmetric range")
    if ".." not in spec:
        return None, _resolve(repo, spec)
    left, right = spec.split("..", 1)
    tip = _resolve(repo, right or "HEAD")
    if not left or left.strip("0") == "":
        return None, tip
    try:
        return _resolve(repo, left), tip
    except MemoryStoreError:
        if _FULL_ID.fullmatch(left) is None:
            raise
        # A forge's "before" that the checkout lacks (main was force-pushed past it):
        # checking TIP's whole history instead is stricter, never looser.
        return None, tip


def check_range(path: str, spec: str = "HEAD", fmt: FileFormat | None = None) -> RangeCheck:
    """Every commit of ``spec`` in the repository at ``path`` held to the memory rules.

    ``fmt`` defaults to the limits in the repository's own config (``gitmem.*``
    keys; a plain repository has none, so the defaults a new memory has).
    """
    folder = git_dir(path)
    try:
        repo = open_repository(folder)
    except (pygit2.GitError, OSError) as exc:
        raise MemoryStoreError("unavailable", f"cannot read the repository at {path}: {exc}") from exc
    with repo:
        base, tip = resolve_range(repo, spec)
        if fmt is None:
            fmt = format_from_repo(_Config(repo))
    report = RangeCheck(path, spec, tip, base)
    verdicts = check_commits(folder, tip, fmt, hide=[base] if base else [])
    report.commits = len(verdicts)
    for verdict in verdicts:
        report.refused.extend(verdict.refusals)
    if verdicts:
        report.refused.extend(tip_limits(folder, tip, base or ZERO, fmt))
    return report


class _Config:
    """The ``config_get`` that :func:`format_from_repo` reads, over a pygit2 handle's config."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self._config = repo.config
        self.path = repo.path

    def config_get(self, key: str) -> str | None:
        try:
            return str(self._config[key])
        except (KeyError, pygit2.GitError):
            return None
