"""Who a commit from outside names, checked at one rule: the identity gate.

``gitmem log`` shows a commit's ``Gitmem-Principal`` trailer as who made it, or,
without one, its git author's name; ``Gitmem-Approved-By`` says who let a change
into ``main``. Every trailer that names a person or a decision is listed once, in
:data:`gitmem.provenance.IDENTITY_TRAILERS`, and read once, as git reads it
(:func:`gitmem.provenance.identity_claims`). :func:`identity_problems` is the rule
every way in applies to a commit the mount does not hold yet:

- **always** (a push over HTTP, ssh or a file path, a pull, an approval, a push
  to ``refs/for/main``, a history import; :mod:`gitmem.git.pushcheck` asks): each
  identity trailer appears at most once, written exactly as gitmem writes it,
  and no other line of the message starts with one of those keys: otherwise
  gitmem, ``git log`` and a person reading the message could see different
  names (rule ``identity``);
- **when the pusher is known** (a ``gitmem serve`` token that names a principal;
  :func:`foreign_claims`, asked by :mod:`gitmem.adapters.pushaccess`): the commit
  shows the pusher as who made it, and every identity trailer names the pusher:
  nobody can push an approval, or a change, in someone else's name (rule
  ``principal``).

Commits already reachable from a ref of the mount were checked when they came
in (or were written by gitmem) and are not checked again.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gitmem.errors import MemoryStoreError
from gitmem.provenance import T_FROM, T_PATH, T_PRINCIPAL, identity_claims

RULE_IDENTITY = "identity"
"""A commit whose identity trailers could be read more than one way."""
RULE_PRINCIPAL = "principal"
"""A pushed commit that names someone other than the pusher."""


@dataclass(frozen=True)
class Claim:
    """A name a new commit of a push shows that is not the pusher's: where it is shown, and the name."""

    commit: str
    shown: str
    key: str = T_PRINCIPAL
    """The trailer that names it (``Gitmem-Principal`` also when the git author names it)."""


def commit_message(data: bytes) -> str:
    """The message of a raw commit object, as text (bytes that are not UTF-8 kept as surrogates)."""
    return _message_bytes(data).decode("utf-8", "surrogateescape")


def identity_problems(data: bytes) -> list[str]:
    """Why who the raw commit ``data`` names could be read more than one way (rule ``identity``).

    A commit that declares an ``encoding`` is shown by ``git log`` re-encoded from
    it, and pygit2 (what ``gitmem log`` reads) decodes it strictly: its names must
    read the same that way too, and its message must decode at all (else every
    later read of it fails). One declared twice is refused: git reads the first,
    libgit2 the last.
    """
    claims = identity_claims(commit_message(data))
    out = [f"who this commit names is ambiguous: {p}" for p in claims.problems]
    readings = message_readings(data)
    if isinstance(readings, str):
        out.append(readings)
    elif len(readings) > 1:
        other = identity_claims(readings[1])
        if other.names != claims.names or other.problems:
            encoding = _declared_encodings(data)[0]
            out.append(f"re-encoded from its declared encoding {encoding!r}, the commit names someone else")
    return out


def message_readings(data: bytes) -> tuple[str, ...] | str:
    """The raw commit's message as each reader sees it, or why the readers cannot agree on it.

    First as stored, bytes that are not UTF-8 kept as surrogates (gitmem's gates and
    its raw history walks); then, for a commit that declares an ``encoding``, as
    ``git log`` and pygit2 show it, decoded from that encoding. A text (the reason)
    when it declares one twice (git reads the first, libgit2 the last), one Python
    does not know or git does not read as one (:data:`NOT_CHARSETS`), or one its message
    does not decode from (pygit2 raises there).
    """
    stored = _message_bytes(data)
    encodings = _declared_encodings(data)
    if not encodings:
        return (stored.decode("utf-8", "surrogateescape"),)
    if len(encodings) > 1:
        return f"the commit declares its encoding {len(encodings)} times ({encodings!r}); git and libgit2 read different ones"
    encoding = encodings[0]
    try:
        if codecs.lookup(encoding).name in NOT_CHARSETS:
            raise LookupError(encoding)
        shown = stored.decode(encoding)
    except (LookupError, ValueError):
        return f"the commit declares encoding {encoding!r}, which gitmem cannot read as git may"
    return (stored.decode("utf-8", "surrogateescape"), shown)


NOT_CHARSETS = frozenset({"punycode", "idna"})
"""Python's codecs of domain names, not of text: git's ``iconv`` knows neither (``git log`` shows such a
message as stored, pygit2 decodes it), and Python decodes them in time quadratic in the text (a
400 KB message took seconds, one of a few MB would hold a push's or pull's checks for an hour)."""


def _declared_encodings(data: bytes) -> list[str]:
    """The value of each ``encoding`` header of the commit (git reads the first, libgit2 the last)."""
    head = data.split(b"\n\n", 1)[0]
    return [line[9:].decode("ascii", "replace").strip() for line in head.split(b"\n") if line.startswith(b"encoding ")]


def _message_bytes(data: bytes) -> bytes:
    at = data.find(b"\n\n")
    return data[at + 2 :] if at >= 0 else b""


def _names(names: Sequence[tuple[str, str]], author: str, commit: str) -> list[Claim]:
    """Every name a commit shows: its principal (the trailer, else the author) and each identity trailer."""
    shown = [Claim(commit, v, k) for k, v in names]
    if not any(k == T_PRINCIPAL for k, _ in names):
        shown.insert(0, Claim(commit, author, T_PRINCIPAL))
    return shown


def foreign_claims(path: str, object_dirs: Sequence[str], new: str, principal: str) -> list[Claim]:
    """The names that the commits ``new`` brings (beyond every ref of the mount) show and that are not ``principal``."""
    import pygit2  # a pushed ref's names: only the server's access check asks

    from gitmem.git.loose import open_repository

    try:
        repo = open_repository(path, extra_objects=object_dirs)
        walker = repo.walk(new, pygit2.enums.SortMode.TOPOLOGICAL)
        for name in repo.references:
            if name.startswith("refs/"):
                try:
                    walker.hide(repo.references[name].resolve().target)
                except (KeyError, pygit2.GitError, ValueError):
                    continue
        out: list[Claim] = []
        for commit in walker:
            data = bytes(repo.odb.read(commit.id)[1])
            claims = identity_claims(commit_message(data))
            commit_id = str(commit.id)
            out.extend(c for c in _names(claims.names, commit.author.name, commit_id) if c.shown != principal)
        return out
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise MemoryStoreError("unavailable", f"cannot read the pushed commits: {exc}") from exc


_CLAIM = re.compile(rb"(?im)^gitmem-[a-z-]+:")


def unnamed_changes(data: bytes, changed: Iterable[str]) -> list[str]:
    """Of the paths a commit changed, those its ``Gitmem-Path``/``Gitmem-From`` lines do not name.

    ``data`` is the raw commit. Only a commit that carries a ``Gitmem-*`` line at
    all is held to this (``[]`` otherwise): readers skip a gitmem commit whose
    trailers do not mention a path (:class:`Follower`, ``may_have_moved_to``) and
    list a change's paths from its trailers, so a commit that claims to be
    gitmem's must name every path it changes, byte for byte as they look.
    """
    if _CLAIM.search(data) is None:
        return []
    readings = message_readings(data)
    if isinstance(readings, str):
        return list(changed)  # no reading everybody shares names anything (the identity rule says why)
    keys = (f"{T_PATH}: ", f"{T_FROM}: ")
    named = [
        {line[len(k) :] for line in text.split("\n")[:-1] for k in keys if line.startswith(k)} for text in readings
    ]
    return [p for p in changed if not all(p in names for names in named)]  # a set: each path not a scan of the text
