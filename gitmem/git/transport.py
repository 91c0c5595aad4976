"""``git push`` of a mount to a remote: the part of a push that needs no libgit2.

A push is the real git client's work (:mod:`gitmem.git.remote` says why); what
gitmem adds around the process is small: the remote's name rules, the refspecs,
reading ``--porcelain`` and turning a rejection into an error that says what to
do. That part lives here, importing neither pygit2 nor the erasure ledger's
module, so a ``gitmem push`` that has nothing else to do (no ledger to send, no
proposals to record: :func:`gitmem.remotepush.push_named`) runs without them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gitmem.errors import MemoryStoreError
from gitmem.git.cli import run_git
from gitmem.model import Value

REMOTE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
DEFAULT_REMOTE = "origin"
MAIN_SPEC = "refs/heads/main:refs/heads/main"
"""The refspec of every push: ``main`` to ``main``, never forced."""
LEDGER_REF = "refs/gitmem/erasures"
"""The erasure ledger (:mod:`gitmem.git.erasures`), named here because every push of a memory
that has one sends it along with ``main``: a push that finds none needs nothing of that module."""


class Remote(Value):
    """A remote of a mount. ``url`` is what git is given (credentials and all); anything
    shown or logged uses ``shown_url``, and the repr shows only that."""

    __match_args__ = __slots__ = ("name", "url")
    name: str
    url: str

    def __init__(self, name: str, url: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "url", url)

    @property
    def shown_url(self) -> str:
        from gitmem.secrets import scrub_credentials

        return scrub_credentials(self.url)

    def __repr__(self) -> str:
        return f"Remote(name={self.name!r}, url={self.shown_url!r})"


class PushedRef(Value):
    """One line of ``git push --porcelain``: the ref, its fate and git's summary."""

    __match_args__ = __slots__ = ("ref", "status", "summary")
    ref: str
    status: str  # "ok", "new", "up_to_date", "rejected", "deleted", "forced"
    summary: str

    def __init__(self, ref: str, status: str, summary: str) -> None:
        object.__setattr__(self, "ref", ref)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "summary", summary)


def check_remote_name(name: object) -> str:
    if not isinstance(name, str) or not REMOTE_NAME.fullmatch(name) or name.endswith(".lock"):
        raise MemoryStoreError(
            "invalid_path", f"{name!r} is not a remote name: use letters, digits, '.', '_' and '-' (at most 63)"
        )
    return name


def tail(stderr: str, lines: int = 6) -> str:
    """The last lines git wrote, on one line, with any URL's credentials hidden."""
    from gitmem.secrets import scrub_credentials

    kept = [line for line in stderr.strip().splitlines() if line.strip()][-lines:]
    return scrub_credentials(" | ".join(kept)) or "no message"


_PORCELAIN_FLAGS: dict[str, str] = {
    " ": "ok",
    "+": "forced",
    "-": "deleted",
    "*": "new",
    "!": "rejected",
    "=": "up_to_date",
}


def send(git_dir: str, target: Remote, specs: Sequence[str], leases: Sequence[str] = ()) -> list[PushedRef]:
    """``git push --porcelain`` of ``specs`` from the mount at ``git_dir`` to ``target``; one :class:`PushedRef` per ref.

    Nothing is forced but what ``leases`` (``--force-with-lease=...`` options) allow.
    A ref the remote refuses because it has commits this memory lacks is
    ``version_mismatch`` (pull first); any other refusal or failure ``unavailable``.
    """
    done = run_git(
        ["push", "--porcelain", "--no-verify", *leases, "--", target.url, *specs],
        cwd=git_dir,
        what=f"git push to {target.name}",
    )
    pushed = parse_porcelain(done.stdout)
    rejected = [p for p in pushed if p.status == "rejected"]
    if rejected:
        behind = any("fetch first" in p.summary or "non-fast-forward" in p.summary for p in rejected)
        listing = "; ".join(f"{p.ref}: {p.summary}" for p in rejected)
        if behind:
            raise MemoryStoreError(
                "version_mismatch",
                f"{target.name} has commits this memory lacks ({listing}); run a pull first, then push again",
            )
        raise MemoryStoreError("unavailable", f"{target.name} refused the push: {listing}; {tail(done.stderr)}")
    if done.returncode != 0:
        raise MemoryStoreError("unavailable", f"git push to {target.name} failed: {tail(done.stderr)}")
    return pushed


def parse_porcelain(out: str) -> list[PushedRef]:
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


INCOMING = "refs/heads/incoming"
"""Where a pull's fetch puts the remote's ``main`` in its quarantine."""
INCOMING_LEDGER = "refs/incoming-ledger"
"""Where it puts the remote's erasure ledger (when the remote has one)."""


def fetch_main(scratch: str, remote: Remote) -> None:
    """Fetch ``remote``'s ``main`` (to :data:`INCOMING`) and erasure ledger into the quarantine at ``scratch``.

    One connection brings both: the ledger's refspec is a pattern, so a remote
    without a ledger fails nothing (an exact refspec would fail the fetch).
    ``not_found`` when the remote has no ``main``, ``unavailable`` when the fetch fails.
    """
    from gitmem.git.cli import FETCH

    what = f"git fetch from {remote.name}"
    done = run_git(
        # unpackLimit=1: what comes in stays one pack, which moves into the mount as it is once checked
        [
            "-c",
            "fetch.unpackLimit=1",
            *FETCH,
            "--",
            remote.url,
            f"+refs/heads/main:{INCOMING}",
            f"+{LEDGER_REF}*:{INCOMING_LEDGER}*",
        ],
        cwd=scratch,
        what=what,
    )
    if done.returncode != 0:
        said = done.stderr.lower()
        if "couldn't find remote ref" in said:
            raise MemoryStoreError("not_found", f"{remote.name} has no main branch (push this memory to it first)")
        raise MemoryStoreError("unavailable", f"{what} failed: {tail(done.stderr)}")
