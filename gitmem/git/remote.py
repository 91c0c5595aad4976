"""Remotes of a mount: where it is pushed to, and pulling merged work back into ``main``.

The transport is the real git client (``git push``, ``git fetch``): it speaks
every protocol a hosting service offers, with the user's credential helpers.
What gitmem adds is on the receiving side of a pull:

1. the remote's ``main`` is fetched into a quarantine, a bare repository inside
   the mount's ``gitmem/`` folder (:mod:`gitmem.git.quarantine`), which borrows
   the mount's objects through ``objects/info/alternates``; nothing reaches the
   mount yet;
2. :func:`gitmem.git.merge.integrate` lands it on ``main`` (fast-forward, or a
   clean three-way merge commit when agents wrote meanwhile, or a refusal naming
   the conflicting files), after every commit brought in passed the push rules
   (:mod:`gitmem.git.pushcheck`): paths, text, size, frontmatter, secrets, limits,
   and every object git's strict checks (``index-pack --strict``, as for a push);
3. only then do objects move into the mount, exactly those the new ``main``
   reaches (not the remote's erasure ledger, not anything else the fetch
   brought), and ``main`` moves by compare-and-swap under the writer lock.

Remotes are plain git config (``remote.<name>.url``) with no fetch refspec: the
mount keeps no remote-tracking refs. Every pulled commit that ``main`` does not
already hold is checked, whatever other refs of the mount point at.
"""

from __future__ import annotations

import dataclasses
import os
import re
import urllib.parse
from dataclasses import dataclass

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat
from gitmem.git import conflict, erasures
from gitmem.git.cli import run_git
from gitmem.git.erasures import LEDGER_REF
from gitmem.git.loose import open_repository
from gitmem.git.merge import MergeRefused, MergeResult, integrate
from gitmem.git.quarantine import open_quarantine
from gitmem.git.refs import MAIN, read_ref
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.review import PROPOSALS, drop_merged
from gitmem.model import Origin
from gitmem.secrets import scrub_credentials

REMOTE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
DEFAULT_REMOTE = "origin"



@dataclass(frozen=True, slots=True, repr=False)
class Remote:
    """A remote of a mount. ``url`` is what git is given (credentials and all); anything
    shown or logged uses ``shown_url``, and the repr shows only that."""

    name: str
    url: str

    @property
    def shown_url(self) -> str:
        return scrub_credentials(self.url)

    def __repr__(self) -> str:
        return f"Remote(name={self.name!r}, url={self.shown_url!r})"


@dataclass(frozen=True, slots=True)
class PushedRef:
    """One line of ``git push --porcelain``: the ref, its fate and git's summary."""

    ref: str
    status: str  # "ok", "new", "up_to_date", "rejected", "deleted", "forced"
    summary: str


def check_remote_name(name: object) -> str:
    if not isinstance(name, str) or not REMOTE_NAME.fullmatch(name) or name.endswith(".lock"):
        raise MemoryStoreError(
            "invalid_path", f"{name!r} is not a remote name: use letters, digits, '.', '_' and '-' (at most 63)"
        )
    return name


def _url(url: object) -> str:
    if not isinstance(url, str) or not url.strip() or "\n" in url or url.startswith("-"):
        raise MemoryStoreError("invalid_path", f"{url!r} is not a repository URL or path")
    url = url.strip()
    if "://" not in url and os.path.exists(url):
        return os.path.abspath(url)  # git would read a relative path from inside the mount
    return url


def add_remote(git: GitRepo, name: str, url: str) -> Remote:
    """Record remote ``name`` at ``url`` (a hosting URL or a local path); ``already_exists`` if taken.

    A password in an http(s) URL goes to the user's git credential helper when
    one is configured (``credential.helper``), and the URL is recorded without
    it: the helper serves it to every later push and pull, and the mount's
    config never holds it in clear. With no helper the URL is kept as given
    (the config file is the user's own, mode 0600), and only ever shown scrubbed.
    """
    name = check_remote_name(name)
    url = _url(url)
    key = f"remote.{name}.url"
    with translate_errors(git.path), git.lock.hold():
        if git.config_get(key) is not None:
            raise MemoryStoreError("already_exists", f"this memory already has a remote named {name!r}")
        url = _hand_password_to_helper(git, url)
        git.config_set(key, url)
    return Remote(name, url)


def _hand_password_to_helper(git: GitRepo, url: str) -> str:
    """``url`` without its password once a credential helper holds it (``git credential approve``); else ``url``."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.password is None or parts.hostname is None:
        return url
    helpers = run_git(["config", "--get-all", "credential.helper"], cwd=git.path, what="git config credential.helper")
    if helpers.returncode != 0 or not any(line.strip() for line in helpers.stdout.splitlines()):
        return url
    user = urllib.parse.unquote(parts.username or "")
    host = parts.netloc.rpartition("@")[2]
    password = urllib.parse.unquote(parts.password)
    fields = {"protocol": parts.scheme, "host": host, "username": user, "password": password}
    if any("\n" in v or "\0" in v for v in fields.values()):
        return url
    feed = "".join(f"{k}={v}\n" for k, v in fields.items()) + "\n"
    done = run_git(["credential", "approve"], cwd=git.path, stdin=feed.encode(), what="git credential approve")
    if done.returncode != 0:
        return url
    userinfo = urllib.parse.quote(user, safe="") + "@" if user else ""
    return urllib.parse.urlunsplit((parts.scheme, userinfo + host, parts.path, parts.query, parts.fragment))


def remove_remote(git: GitRepo, name: str) -> None:
    name = check_remote_name(name)
    with translate_errors(git.path), git.lock.hold():
        config = git.repo.config
        if f"remote.{name}.url" not in config:
            raise MemoryStoreError("not_found", f"this memory has no remote named {name!r}")
        for entry in list(config):
            if entry.name.lower().startswith(f"remote.{name.lower()}."):
                del config[entry.name]


def remotes(git: GitRepo) -> list[Remote]:
    """The mount's remotes, sorted by name."""
    found: dict[str, str] = {}
    with translate_errors(git.path):
        for entry in git.repo.config:
            parts = entry.name.split(".")
            if len(parts) == 3 and parts[0] == "remote" and parts[2] == "url" and entry.value is not None:
                found[parts[1]] = entry.value
    return [Remote(n, u) for n, u in sorted(found.items())]


def get_remote(git: GitRepo, name: str) -> Remote:
    name = check_remote_name(name)
    url = git.config_get(f"remote.{name}.url")
    if url is None:
        known = ", ".join(r.name for r in remotes(git)) or "none"
        raise MemoryStoreError("not_found", f"this memory has no remote named {name!r} (remotes: {known})")
    return Remote(name, url)


def _tail(stderr: str, lines: int = 6) -> str:
    kept = [line for line in stderr.strip().splitlines() if line.strip()][-lines:]
    return scrub_credentials(" | ".join(kept)) or "no message"


# --- push ---------------------------------------------------------------------------

_PORCELAIN_FLAGS: dict[str, str] = {" ": "ok", "+": "forced", "-": "deleted", "*": "new", "!": "rejected", "=": "up_to_date"}


def push(git: GitRepo, remote: str = DEFAULT_REMOTE, *, proposals: bool = False) -> list[PushedRef]:
    """Push ``main`` (and with ``proposals`` every proposal branch) to ``remote``, and the erasure ledger.

    Nothing is forced, with one exception: after a ``forget`` or ``purge`` the
    rewritten history replaces the remote's, with a lease, where the remote ref
    still holds exactly a commit the ledger says this memory held before the
    erasure (so work pushed there since is never overwritten). When the remote's
    ``main`` has other commits this memory lacks (a pull request merged there),
    the push is refused with ``version_mismatch``: pull first. Returns one
    :class:`PushedRef` per ref git reported.
    """
    target = get_remote(git, remote)
    specs = ["refs/heads/main:refs/heads/main"]
    if proposals:
        # Every proposal but conflict proposals, which are this memory's own unfinished merges.
        specs += [f"{PROPOSALS}*:{PROPOSALS}*", f"^{conflict.BRANCHES}*"]
    leases: list[str] = []
    with translate_errors(git.path):
        handle = git.fresh()
        if read_ref(handle, LEDGER_REF) is not None:
            specs.append(f"{LEDGER_REF}:{LEDGER_REF}")
            leases = _erasure_leases(git, target, handle, proposals=proposals)
    done = run_git(
        ["push", "--porcelain", "--no-verify", *leases, target.url, *specs], cwd=git.path, what=f"git push to {remote}"
    )
    pushed = _parse_porcelain(done.stdout)
    rejected = [p for p in pushed if p.status == "rejected"]
    if rejected:
        behind = any("fetch first" in p.summary or "non-fast-forward" in p.summary for p in rejected)
        listing = "; ".join(f"{p.ref}: {p.summary}" for p in rejected)
        if behind:
            raise MemoryStoreError(
                "version_mismatch",
                f"{remote} has commits this memory lacks ({listing}); run a pull first, then push again",
            )
        raise MemoryStoreError("unavailable", f"{remote} refused the push: {listing}; {_tail(done.stderr)}")
    if done.returncode != 0:
        raise MemoryStoreError("unavailable", f"git push to {remote} failed: {_tail(done.stderr)}")
    _remember_pushed(git, target, [p.ref[len(PROPOSALS) :] for p in pushed if p.ref.startswith(PROPOSALS)])
    return pushed


# A proposal pushed to a remote is recorded (its run id, in the mount's git config) so that a
# later pull can tell a pull request closed there without merging from one never pushed.
_PUSHED_KEY = "gitmemproposal"


def _remember_pushed(git: GitRepo, target: Remote, runs: list[str]) -> None:
    if not runs:
        return
    key = f"remote.{target.name}.{_PUSHED_KEY}"
    with translate_errors(git.path), git.lock.hold():
        known = set(_pushed(git, target))
        config = git.repo.config
        for run in runs:
            if run not in known:
                config.set_multivar(key, "^" + re.escape(run) + "$", run)


def _pushed(git: GitRepo, target: Remote) -> list[str]:
    try:
        return [str(v) for v in git.repo.config.get_multivar(f"remote.{target.name}.{_PUSHED_KEY}")]
    except (KeyError, pygit2.GitError):
        return []


def _forget_pushed(git: GitRepo, target: Remote, runs: list[str]) -> None:
    key = f"remote.{target.name}.{_PUSHED_KEY}"
    for run in runs:
        try:
            git.repo.config.delete_multivar(key, "^" + re.escape(run) + "$")
        except (KeyError, pygit2.GitError):
            continue


def _abandoned(git: GitRepo, target: Remote) -> tuple[str, ...]:
    """Proposals pushed to ``target`` and still open here whose branch is gone there (closed unmerged).

    Run after merged ones were closed (a pull request merged on the forge and its
    branch deleted is closed, not reported). Records of proposals no longer open
    here are dropped.
    """
    recorded = _pushed(git, target)
    if not recorded:
        return ()
    with translate_errors(git.path), git.lock.hold():
        open_here = {run for run in recorded if git.ref_target(PROPOSALS + run) is not None}
        _forget_pushed(git, target, [run for run in recorded if run not in open_here])
    if not open_here:
        return ()
    what = f"git ls-remote {target.name}"
    listed = run_git(["ls-remote", "--heads", target.url, f"{PROPOSALS}*"], cwd=git.path, what=what)
    if listed.returncode != 0:
        return ()  # the pull itself reached the remote; a failed listing reports nothing rather than guess
    there = {line.partition("\t")[2][len(PROPOSALS) :] for line in listed.stdout.splitlines()}
    return tuple(sorted(run for run in open_here if run not in there))


def _erasure_leases(git: GitRepo, target: Remote, handle: pygit2.Repository, *, proposals: bool) -> list[str]:
    """``--force-with-lease`` options for the remote refs that still hold pre-erasure history of this memory."""
    before = {t for e in erasures.entries(handle) for t in e.tips}
    listed = run_git(["ls-remote", "--heads", target.url], cwd=git.path, what=f"git ls-remote {target.name}")
    if listed.returncode != 0:
        return []  # the push itself reports an unreachable remote
    leases = []
    for line in listed.stdout.splitlines():
        value, _, ref = line.partition("\t")
        if value in before and (ref == MAIN or (proposals and ref.startswith(PROPOSALS))):
            leases.append(f"--force-with-lease={ref}:{value}")
    return leases


def _parse_porcelain(out: str) -> list[PushedRef]:
    pushed: list[PushedRef] = []
    for line in out.splitlines():
        if len(line) < 3 or line[1] != "\t" or line[0] not in _PORCELAIN_FLAGS:
            continue
        fields = line[2:].split("\t")
        refs = fields[0]
        dest = refs.split(":", 1)[1] if ":" in refs else refs
        summary = fields[1] if len(fields) > 1 else ""
        pushed.append(PushedRef(dest, _PORCELAIN_FLAGS[line[0]], summary.strip()))
    return pushed


# --- pull ---------------------------------------------------------------------------


_INCOMING_LEDGER = "refs/incoming-ledger"


def fetch_main(git: GitRepo, scratch: str, remote: Remote) -> str:
    """Fetch the remote's ``main`` and erasure ledger into the quarantine at ``scratch``; returns ``main``'s commit id.

    One connection brings both: the ledger's refspec is a pattern, so a remote
    without a ledger fails nothing (an exact refspec would fail the fetch).
    :func:`_adopt_ledger` reads what it brought.
    """
    what = f"git fetch from {remote.name}"
    done = run_git(
        [
            "-c",
            "gc.auto=0",
            "-c",
            "fetch.writeCommitGraph=false",
            "fetch",
            "--no-tags",
            "--no-write-fetch-head",
            remote.url,
            "+refs/heads/main:refs/heads/incoming",
            f"+{LEDGER_REF}*:{_INCOMING_LEDGER}*",
        ],
        cwd=scratch,
        what=what,
    )
    if done.returncode != 0:
        if "couldn't find remote ref" in done.stderr.lower():
            raise MemoryStoreError("not_found", f"{remote.name} has no main branch (push this memory to it first)")
        raise MemoryStoreError("unavailable", f"{what} failed: {_tail(done.stderr)}")
    try:
        r = open_repository(scratch)
        try:
            incoming = str(r.references["refs/heads/incoming"].peel(pygit2.Commit).id)
            r.references.delete("refs/heads/incoming")  # a ref here would exempt it from the check
            return incoming
        finally:
            r.free()
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
        raise MemoryStoreError("unavailable", f"{what} brought no usable main: {exc}") from exc


def _adopt_ledger(git: GitRepo, scratch: str) -> int:
    """Add the remote's erasure ledger entries this memory lacks, before what it brings is checked.

    An erasure made on another copy then holds here too: the pull (and every
    later push, pull and write) refuses what it erased. Returns how many entries
    were added (none when the remote has no ledger).
    """
    r = open_repository(scratch)
    try:
        brought = [name for name in r.references if name.startswith(_INCOMING_LEDGER)]
        tip = r.references[_INCOMING_LEDGER].target if _INCOMING_LEDGER in brought else None
        theirs = erasures.entries_at(r, str(tip)) if tip is not None else ()
        for name in brought:  # a ref in the quarantine would exempt what it reaches from the check
            r.references.delete(name)
    finally:
        r.free()
    if not theirs:
        return 0
    with translate_errors(git.path), git.lock.hold():
        return erasures.merge_entries(
            git.fresh(), git.path, theirs, stale_after=git.stale_lock_seconds, timeout=git.lock_timeout
        )


def pull(
    git: GitRepo, fmt: FileFormat, remote: str = DEFAULT_REMOTE, *, origin: Origin | None = None, propose: bool = False
) -> MergeResult:
    """Fetch ``remote``'s ``main`` and integrate it into this memory's ``main``.

    Fast-forward when ``main`` has not moved since; a merge commit when agents
    wrote other files meanwhile; :class:`gitmem.git.merge.MergeRefused` listing
    the files when both sides changed the same file, or when what the remote
    brings breaks the memory's rules. ``main`` is untouched by a refusal.
    Review proposals whose work ``main`` now holds (pull requests merged upstream
    by a merge commit, a squash or a rebase) are deleted and named in ``closed``;
    proposals pushed to ``remote`` whose branch is gone there unmerged are named
    in ``abandoned``.

    A new memory (``main`` only its "init memory" commit) takes the remote's
    ``main`` whole (kind ``joined``): that is how ``gitmem clone`` and ``init``
    + ``remote add`` + ``pull`` join a memory kept on a forge. With ``propose``,
    a conflict opens a conflict proposal (:mod:`gitmem.git.conflict`) and the
    result's kind is ``conflict``: ``main`` still does not move.
    """
    who = origin or Origin()
    target = get_remote(git, remote)
    mark = git.history_mark()
    with open_quarantine(git.path) as held:
        incoming = fetch_main(git, held.path, target)
        _adopt_ledger(git, held.path)

        def history_unchanged() -> None:
            if git.history_mark() != mark:
                raise MemoryStoreError(
                    "unavailable",
                    "this memory's history was rewritten (purge or forget) during the pull; pull again",
                )

        closed: list[str] = []

        def close_merged_proposals(result: MergeResult) -> None:
            closed.extend(drop_merged(git, result.after))

        try:
            result = integrate(
                git,
                fmt,
                incoming,
                what=f"{remote}/main",
                origin=who,
                detail=f"pull {remote}",
                scratch=held,
                precheck=history_unchanged,
                after_swap=close_merged_proposals,
                strict_objects=True,  # fetched objects meet git's strict rules, as pushed ones do
                join=True,
            )
        except MergeRefused as exc:
            if not (propose and exc.code == "version_mismatch" and exc.paths):
                raise
            ours = git.head()
            run, paths = conflict.open_draft(git, fmt, held, ours, incoming, target.name, who)
            return MergeResult("conflict", ours, ours, paths, proposal=run)
        abandoned = _abandoned(git, target)
        return dataclasses.replace(result, closed=tuple(closed), abandoned=abandoned)


# --- erasure on remotes ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RemoteErasure:
    """One remote after ``forget --remotes``: whether the push landed, and what there still reaches erased objects.

    ``holding`` names each remote ref from which an object the ledger names is
    still reachable (empty: no ref there reaches erased content); ``error`` is
    why the push or the check failed (then ``holding`` is what the check saw).
    """

    remote: str
    pushed: tuple[PushedRef, ...]
    holding: tuple[str, ...]
    error: str | None = None

    @property
    def clean(self) -> bool:
        return self.error is None and not self.holding


def erase_on_remotes(git: GitRepo, names: list[str] | None = None, *, proposals: bool = True) -> list[RemoteErasure]:
    """Push the rewritten history and the ledger to every remote (or ``names``), then check each one."""
    chosen = [get_remote(git, n) for n in names] if names else remotes(git)
    out = []
    for target in chosen:
        pushed: list[PushedRef] = []
        error = None
        try:
            pushed = push(git, target.name, proposals=proposals)
        except MemoryStoreError as exc:
            error = exc.message
        try:
            holding = remote_holdings(git, target)
        except MemoryStoreError as exc:
            holding, error = (), error or exc.message
        out.append(RemoteErasure(target.name, tuple(pushed), holding, error))
    return out


def remote_holdings(git: GitRepo, target: Remote) -> tuple[str, ...]:
    """The refs of ``target`` from which a blob the ledger names is reachable.

    Every ref of the remote is fetched into a quarantine (deleted after, with
    whatever erased objects it brought; nothing of it is admitted) and walked with
    ``git rev-list --objects``.
    """
    with translate_errors(git.path):
        erased = erasures.erased_blobs(git.fresh(), git.path)
    if not erased:
        return ()
    what = f"git fetch from {target.name}"
    with open_quarantine(git.path) as held:
        scratch = held.path
        done = run_git(
            ["-c", "gc.auto=0", "fetch", "--no-tags", "--no-write-fetch-head", target.url, "+refs/*:refs/check/*"],
            cwd=scratch,
            what=what,
        )
        if done.returncode != 0:
            raise MemoryStoreError("unavailable", f"{what} failed: {_tail(done.stderr)}")
        listed = run_git(["for-each-ref", "--format=%(objectname) %(refname)", "refs/check/"], cwd=scratch, what=what)
        holding = []
        for line in listed.stdout.splitlines():
            value, _, ref = line.partition(" ")
            objects = run_git(["rev-list", "--objects", value], cwd=scratch, what=what)
            if any(row[:40] in erased for row in objects.stdout.splitlines()):
                holding.append("refs/" + ref.removeprefix("refs/check/"))
        return tuple(sorted(holding))
