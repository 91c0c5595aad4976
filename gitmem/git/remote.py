"""Remotes of a mount, and pushing to them (pulling is :mod:`gitmem.git.pull`).

The transport is the real git client (``git push``, ``git fetch``): it speaks
every protocol a hosting service offers, with the user's credential helpers.
Remotes are plain git config (``remote.<name>.url``) with no fetch refspec: the
mount keeps no remote-tracking refs.

This module is what a ``gitmem push`` through the store loads: it names no
merge, conflict, quarantine or review module (a push sends what the mount
already holds; only a pull checks and merges what it brings), so a push pays for
none of them. Running ``git push`` itself is :mod:`gitmem.git.transport`'s,
which a push of ``main`` alone uses without this module or libgit2
(:func:`gitmem.remotepush.push_named`).
"""

from __future__ import annotations

import os
import re
import urllib.parse

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git import erasures
from gitmem.git.cli import run_git
from gitmem.git.erasures import LEDGER_REF
from gitmem.git.refs import CONFLICT_PROPOSALS, MAIN, PROPOSALS, read_ref
from gitmem.git.repo import GitRepo, translate_errors
from gitmem.git.transport import DEFAULT_REMOTE as DEFAULT_REMOTE
from gitmem.git.transport import MAIN_SPEC, check_remote_name, send
from gitmem.git.transport import PushedRef as PushedRef
from gitmem.git.transport import Remote as Remote


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


# --- push ---------------------------------------------------------------------------


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
    specs = [MAIN_SPEC]
    if proposals:
        # Every proposal but conflict proposals, which are this memory's own unfinished merges.
        specs += [f"{PROPOSALS}*:{PROPOSALS}*", f"^{CONFLICT_PROPOSALS}*"]
    leases: list[str] = []
    with translate_errors(git.path):
        handle = git.fresh()
        if read_ref(handle, LEDGER_REF) is not None:
            specs.append(f"{LEDGER_REF}:{LEDGER_REF}")
            leases = _erasure_leases(git, target, handle, proposals=proposals)
    pushed = send(git.path, target, specs, leases)
    _remember_pushed(git, target, [p.ref[len(PROPOSALS) :] for p in pushed if p.ref.startswith(PROPOSALS)])
    return pushed


# A proposal pushed to a remote is recorded (its run id, in the mount's git config) so that a
# later pull can tell a pull request closed there without merging from one never pushed.
PUSHED_KEY = "gitmemproposal"


def _remember_pushed(git: GitRepo, target: Remote, runs: list[str]) -> None:
    if not runs:
        return
    key = f"remote.{target.name}.{PUSHED_KEY}"
    with translate_errors(git.path), git.lock.hold():
        known = set(pushed_runs(git, target))
        config = git.repo.config
        for run in runs:
            if run not in known:
                config.set_multivar(key, "^" + re.escape(run) + "$", run)


def pushed_runs(git: GitRepo, target: Remote) -> list[str]:
    try:
        return [str(v) for v in git.repo.config.get_multivar(f"remote.{target.name}.{PUSHED_KEY}")]
    except (KeyError, pygit2.GitError):
        return []


def _erasure_leases(git: GitRepo, target: Remote, handle: pygit2.Repository, *, proposals: bool) -> list[str]:
    """``--force-with-lease`` options for the remote refs that still hold pre-erasure history of this memory."""
    before = {t for e in erasures.entries(handle) for t in e.tips}
    listed = run_git(["ls-remote", "--heads", "--", target.url], cwd=git.path, what=f"git ls-remote {target.name}")
    if listed.returncode != 0:
        return []  # the push itself reports an unreachable remote
    leases = []
    for line in listed.stdout.splitlines():
        value, _, ref = line.partition("\t")
        if value in before and (ref == MAIN or (proposals and ref.startswith(PROPOSALS))):
            leases.append(f"--force-with-lease={ref}:{value}")
    return leases
