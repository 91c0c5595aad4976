"""The erasure ledger: what ``forget`` and ``purge`` erased, so that it stays erased.

Erasing a path from one repository is not enough: a stale clone can push the
old blob back, a remote that still has it can be pulled, an import can carry
the same text in again. Every one of those ways back in runs through gitmem
code (the push check, the pull's and an approval's integration, the write
engine), and each asks this ledger whether an incoming blob was erased.

What an entry holds, and why no more::

    {"id": "3f…", "kind": "forget", "at": "2026-…Z", "by": "admin",
     "names": ["<hmac of each erased name>"], "blobs": ["<blob id>", …],
     "tips": ["<commit a ref held before the rewrite>", …]}

- **blob ids**: the check needs them, and a blob id reveals nothing without
  the content (it can only confirm a guess of the whole file);
- **names**: keyed fingerprints (HMAC-SHA256) of the erased paths and
  namespaces, under a per-mount key kept in ``gitmem/erasure-key`` beside the
  repository, never in the ledger ref: a reader of the ledger (a clone, a
  remote) cannot test a guessed name, the mount itself can tell "this path was
  forgotten" (``log`` of the path shows its forget);
- **tips**: what the refs held before the rewrite, so ``gitmem push`` can
  overwrite a remote's pre-forget history with a lease (only if the remote
  still holds one of those commits, never work made there since);
- **who and when**.

The ledger is a chain of commits on :data:`LEDGER_REF`, each tree holding one
file ``entries.jsonl``; ``forget``, ``purge`` and every other ref rewrite leave
that ref alone, ``gitmem push`` sends it and a clone can fetch it. The ref
moves by compare-and-swap under the writer lock. A blob that another live file
still holds when the prune is done is left out: it was not erased.

Crash safety: the entry is written to ``gitmem/erasure-pending.json`` before
the refs move, and appended to the ledger by whichever prune finishes the
erasure (the forget itself, or the next ``gc``, ``forget`` or ``purge``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import itertools
import json
import os
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace

import pygit2

from gitmem.errors import MemoryStoreError
from gitmem.git.perms import open_private, write_private
from gitmem.git.refs import read_ref, read_ref_file, swap_ref
from gitmem.git.transport import LEDGER_REF as LEDGER_REF
from gitmem.localfile import parse_json, read_local
from gitmem.model import is_object_id
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME

LEDGER_FILE = "entries.jsonl"
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
"""Never recorded: an empty file carries nothing to erase, and refusing it would refuse every empty file."""
RULE_ERASED = "erased"
ERASURE_TRAILER = "Gitmem-Erasure"
"""On a forget commit: the ledger entry it made."""
PRINT_TRAILER = "Gitmem-Erased"
"""On a forget commit: the keyed fingerprint of the path it erased (``log`` of that path finds it)."""
OVERRIDE_TRAILER = "Gitmem-Allow-Erased"
"""A batch trailer that lets an admin write content the ledger names; it stays in the commit."""

_KEY_FILE = ("gitmem", "erasure-key")
_PENDING_FILE = ("gitmem", "erasure-pending.json")
_MAX_LEDGER_BYTES = 256 * 1024 * 1024
_cache: dict[tuple[str, str, bool], frozenset[str]] = {}


@dataclass(frozen=True, slots=True)
class Entry:
    """One erasure: no content, path or namespace in clear (see the module docstring)."""

    id: str
    kind: str  # "forget" or "purge"
    at: str
    by: str
    names: tuple[str, ...]
    blobs: tuple[str, ...]
    tips: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Entry:
        try:
            data = parse_json(line, what="an erasure ledger entry")
            entry = cls(
                id=str(data["id"]),
                kind=str(data["kind"]),
                at=str(data["at"]),
                by=str(data["by"]),
                names=tuple(str(n) for n in data.get("names", ())),
                blobs=tuple(str(b) for b in data.get("blobs", ())),
                tips=tuple(str(t) for t in data.get("tips", ())),
            )
        except MemoryStoreError as exc:
            raise MemoryStoreError(
                "unavailable", f"the erasure ledger holds an unreadable entry ({exc.message})"
            ) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise MemoryStoreError("unavailable", f"the erasure ledger holds an unreadable entry ({exc})") from exc
        if not all(is_object_id(b) for b in (*entry.blobs, *entry.tips)):
            raise MemoryStoreError("unavailable", f"the erasure ledger entry {entry.id} names an object id badly")
        return entry


def new_entry(kind: str, by: str, names: Iterable[str], blobs: Iterable[str], tips: Iterable[str]) -> Entry:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kept = sorted({b for b in blobs if b != EMPTY_BLOB})
    return Entry(secrets.token_hex(8), kind, now, by, tuple(sorted(set(names))), tuple(kept), tuple(sorted(set(tips))))


# --- keyed fingerprints -------------------------------------------------------------


def _key(repo_path: str) -> bytes:
    """The mount's fingerprint key, created on first use (32 random bytes, ``0600``)."""
    path = os.path.join(repo_path, *_KEY_FILE)
    found = read_local(path, 1024)
    if found is not None and len(found) >= 32:
        return found
    try:
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:  # another process made it first
        found = read_local(path, 1024)
        if found is None or len(found) < 32:
            raise MemoryStoreError("unavailable", f"{path} is not a usable erasure key") from None
        return found
    key = secrets.token_bytes(32)
    with os.fdopen(fd, "wb") as out:
        out.write(key)
        out.flush()
        os.fsync(out.fileno())
    return key


def known_fingerprint(repo_path: str, name: str) -> str | None:
    """:func:`fingerprint` for a reader: ``None`` when the mount never made a key (it never forgot anything)."""
    key = read_local(os.path.join(repo_path, *_KEY_FILE), 1024)
    if key is None or len(key) < 32:
        return None
    return hmac.new(key, name.encode("utf-8"), hashlib.sha256).hexdigest()


def fingerprint(repo_path: str, name: str) -> str:
    """The keyed fingerprint of a path or namespace: equal names give equal prints, nothing else can."""
    return hmac.new(_key(repo_path), name.encode("utf-8"), hashlib.sha256).hexdigest()


# --- reading ------------------------------------------------------------------------


def entries(r: pygit2.Repository) -> tuple[Entry, ...]:
    """Every entry of the ledger, oldest first (none when the mount never erased anything)."""
    tip = read_ref(r, LEDGER_REF)
    return () if tip is None else entries_at(r, tip)


def entries_at(r: pygit2.Repository, tip: str) -> tuple[Entry, ...]:
    try:
        tree = r[tip].peel(pygit2.Tree)
        blob = tree[LEDGER_FILE]
        # Its size first: a pulled ledger is anyone's, and 600 MB of zeros is a 2.7 MB pack that held 1.8 GB.
        if blob.type_str == "blob" and r.odb.read_header(blob.id)[1] > _MAX_LEDGER_BYTES:
            raise MemoryStoreError("unavailable", "the erasure ledger is larger than gitmem reads")
        data = r[blob.id].read_raw() if blob.type_str == "blob" else b""
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise MemoryStoreError("unavailable", f"the erasure ledger at {tip[:12]} cannot be read ({exc})") from exc
    return tuple(Entry.from_json(line) for line in data.decode("utf-8", "replace").splitlines() if line.strip())


def erased_blobs(r: pygit2.Repository, repo_path: str, *, purged: bool = True) -> frozenset[str]:
    """Every blob id the ledger names, cached per ledger commit (one ref read when it did not move).

    ``purged=False`` leaves out what only a ``purge`` erased: see :func:`refuse_erased`.
    """
    tip = _ledger_tip(r)
    if tip is None:
        return frozenset()
    key = (repo_path, str(tip), purged)
    found = _cache.get(key)
    if found is None:
        found = frozenset(b for e in entries_at(r, tip) if purged or e.kind != "purge" for b in e.blobs)
        if len(_cache) > 64:
            _cache.clear()
        _cache[key] = found
    return found


def _ledger_tip(r: pygit2.Repository) -> str | None:
    """The ledger's commit, read from its loose file when it has one, else through libgit2.

    Every write asks (:func:`refuse_erased`), and most memories have no ledger:
    no loose file and no ``packed-refs`` answer that in two failed lookups,
    where libgit2's lookup of a missing ref cost a write ~5 % of its CPU (and a
    failed open of the loose file first, one syscall more).
    """
    root = r.path
    paths = _ledger_paths.get(root)
    if paths is None:
        if len(_ledger_paths) >= 64:
            _ledger_paths.clear()
        paths = _ledger_paths[root] = (os.path.join(root, *_LEDGER_PARTS), os.path.join(root, "packed-refs"))
    loose, packed = paths
    # Whether anything is there, a link included: what a failed lstat answers, without its exception.
    if os.access(loose, os.F_OK, follow_symlinks=False):
        tip = read_ref_file(loose)
        if tip is not None:
            return tip
    elif not os.access(packed, os.F_OK, follow_symlinks=False):
        return None
    return read_ref(r, LEDGER_REF)


_LEDGER_PARTS = tuple(LEDGER_REF.split("/"))
_ledger_paths: dict[str, tuple[str, str]] = {}  # the ledger's loose file and packed-refs, by the repository's path


def erased_names(r: pygit2.Repository) -> frozenset[str]:
    return frozenset(n for e in entries(r) for n in e.names)


def lend_ledger(mount: pygit2.Repository, scratch: pygit2.Repository) -> None:
    """Point ``scratch``'s ledger ref at the mount's, so checks run there refuse what the mount erased.

    A scratch repository (a pull's, an approval's, an import's) borrows the
    mount's objects but has refs of its own; without this its checks would see
    no ledger at all.
    """
    tip = read_ref(mount, LEDGER_REF)
    if tip is not None:
        scratch.references.create(LEDGER_REF, pygit2.Oid(hex=tip), force=True)


def refuse_erased(
    r: pygit2.Repository, repo_path: str, blobs: Iterable[tuple[str, str]], trailers: Iterable[tuple[str, str]]
) -> bool:
    """Refuse (``forbidden``, rule ``erased``) a write of a blob a ``forget`` erased, unless overridden.

    What a ``purge`` erased is refused on every way old history comes back (a
    push, a pull, an approval: :mod:`gitmem.git.pushcheck`), but not as a new
    write: a purge resets a memory that agents then fill again, and text they
    write afresh ("- likes tea") is not the old history returning. ``forget``
    is the erasure of one person's data or one secret: that text stays out.

    ``blobs`` are ``(path, blob id)`` of what a write adds; an override is the
    :data:`OVERRIDE_TRAILER` among the batch's trailers (it lands in the commit,
    so the log shows who let erased content back in, and why). Returns whether
    the override was needed.
    """
    erased = erased_blobs(r, repo_path, purged=False)
    if not erased:
        return False
    hit = [(path, oid) for path, oid in blobs if oid in erased]
    if not hit:
        return False
    if any(k == OVERRIDE_TRAILER for k, _ in trailers):
        return True
    path, oid = hit[0]
    raise MemoryStoreError(
        "forbidden",
        f"{RULE_ERASED}: the content written to {path} ({oid[:12]}) was erased from this memory by forget; "
        f"an admin can write it again with the {OVERRIDE_TRAILER} trailer, which the commit keeps",
    )


# --- writing ------------------------------------------------------------------------


def append(r: pygit2.Repository, repo_path: str, entry: Entry, *, stale_after: float, timeout: float) -> str:
    """Add ``entry`` to the ledger (writer lock held); returns the new ledger commit."""
    for _ in range(10):
        old = read_ref(r, LEDGER_REF)
        earlier = entries_at(r, old) if old is not None else ()
        if any(e.id == entry.id for e in earlier):
            return str(old)
        commit = _ledger_commit(r, old, _ledger_text((*earlier, entry)), entry)
        if swap_ref(
            r, repo_path, LEDGER_REF, old, commit, message="gitmem erasure", stale_after=stale_after, timeout=timeout
        ):
            return commit
    raise MemoryStoreError("unavailable", "the erasure ledger kept moving; try again")


def _ledger_commit(r: pygit2.Repository, parent: str | None, text: bytes, entry: Entry) -> str:
    """The ledger commit :func:`append` writes on ``parent`` adding ``entry``: ``text`` is every entry's line."""
    builder = r.TreeBuilder()
    builder.insert(LEDGER_FILE, r.create_blob(text), pygit2.GIT_FILEMODE_BLOB)
    sig = pygit2.Signature(COMMITTER_NAME, COMMITTER_EMAIL)
    parents = [pygit2.Oid(hex=parent)] if parent is not None else []
    return str(r.create_commit(None, sig, sig, f"erasure {entry.id} ({entry.kind})\n", builder.write(), parents))


MAX_PUSHED_ENTRIES = 1000
"""Ledger commits one push may add (each is one forget or purge made elsewhere); bounds the check's work."""
MAX_TAKEN_ENTRIES = 100_000
"""Ledger commits a pull may take as they are (:func:`take_chain`): a team's every erasure, checked once each."""
MAX_TAKEN_BYTES = 4 * _MAX_LEDGER_BYTES
"""What checking them may hash: each commit's file holds every entry before it (SHA-1 in C, seconds at most)."""


def take_chain(r: pygit2.Repository, old: str | None, new: str) -> int | None:
    """How many ledger commits ``new`` adds to ``old`` (``None``: none yet) when they are exactly what
    :func:`append` writes on it (:func:`foreign_ledger`), so a pull can take them as they are; ``None``
    when not (a ledger made by hand, or one that does not build on ``old``: entries are adopted instead).

    A remote's ledger pushed by gitmem is that chain, however long: taking it writes nothing
    but its objects, where adopting it entry by entry rewrites the whole ledger once per
    entry, which :func:`merge_entries` bounds (a clone of a memory with many erasures, or
    erasures of many files, was refused ``too_large``).
    """
    if old is not None and not r.descendant_of(pygit2.Oid(hex=new), pygit2.Oid(hex=old)):
        return None
    earlier = entries_at(r, old) if old is not None else ()
    latest = entries_at(r, new)
    size = len(_ledger_text(earlier))
    hashed = 0
    for entry in latest[len(earlier) :]:
        size += len(entry.to_json()) + 1
        hashed += size
    if hashed > MAX_TAKEN_BYTES or foreign_ledger(r, old, new, most=MAX_TAKEN_ENTRIES) is not None:
        return None
    return len(latest) - len(earlier)


MAX_ADOPTED_ENTRIES = 1000
"""Erasures one pull may adopt from a remote's ledger (as many as one push may add)."""
MAX_ADOPTED_BYTES = _MAX_LEDGER_BYTES
"""What adopting them may write: each new ledger commit's file holds every entry before it too."""


def merge_entries(
    r: pygit2.Repository, repo_path: str, theirs: Iterable[Entry], *, stale_after: float, timeout: float
) -> int:
    """Add the entries of another copy's ledger (a pull's remote) that this one lacks; returns how many.

    The remote's ledger is whatever anyone could push to a plain forge, so what
    it may cost is bounded before anything is written (``too_large``: at most
    :data:`MAX_ADOPTED_ENTRIES` new entries and :data:`MAX_ADOPTED_BYTES` of
    ledger text), and the new commits, one per entry exactly as :func:`append`
    writes them, are written as loose objects no ref names yet and land by one
    compare-and-swap of the ledger ref (a lost race leaves them to ``gc``): a
    remote's thousands of entries once took one ``append`` each, rereading and
    rewriting the whole ledger under the writer lock (2,000 took minutes, and
    the time grows with their square). A ledger gitmem wrote is taken whole
    instead (:func:`take_chain`); this is for any other.
    """
    offered = tuple(theirs)
    for _ in range(10):
        old = read_ref(r, LEDGER_REF)
        tip, added = chain_entries(r, old, offered)
        if tip is None:
            return 0
        if swap_ref(
            r, repo_path, LEDGER_REF, old, tip, message="gitmem erasure", stale_after=stale_after, timeout=timeout
        ):
            return added
    raise MemoryStoreError("unavailable", "the erasure ledger kept moving; try again")


def chain_entries(r: pygit2.Repository, old: str | None, theirs: Iterable[Entry]) -> tuple[str | None, int]:
    """The ledger commits adding to ledger commit ``old`` the entries of ``theirs`` it lacks, one per entry as
    :func:`append` writes them, written in ``r`` with no ref moved: the new tip (``None``: nothing to add) and
    how many. Bounded before anything is written (``too_large``, see :func:`merge_entries`).

    A pull builds them in its quarantine, so its checks read the ledger it would adopt, and
    the mount takes them only once the pull lands (:func:`gitmem.git.pull.pull`).
    """
    chain = list(entries_at(r, old)) if old is not None else []
    known = {e.id for e in chain}
    new: list[Entry] = []
    for entry in theirs:
        if entry.id not in known:
            new.append(entry)
            known.add(entry.id)
    if not new:
        return None, 0
    text = _ledger_text(chain)
    lines = _bounded_lines(len(text), new)
    tip: str | None = old
    for entry, line in zip(new, lines, strict=True):
        text += line
        tip = _ledger_commit(r, tip, text, entry)
    return tip, len(new)


def _bounded_lines(size: int, new: list[Entry]) -> list[bytes]:
    """The ledger lines of ``new``; ``too_large`` when adding them after ``size`` bytes of ledger would
    write more than a pull may."""
    if len(new) > MAX_ADOPTED_ENTRIES:
        raise MemoryStoreError(
            "too_large",
            f"the remote's erasure ledger adds {len(new)} erasures this memory lacks; a pull adopts at most "
            f"{MAX_ADOPTED_ENTRIES}, so nothing was adopted or pulled (ask who keeps the remote what its ledger holds)",
        )
    lines = [e.to_json().encode() + b"\n" for e in new]
    written = 0
    for line in lines:
        size += len(line)
        written += size
        if written > MAX_ADOPTED_BYTES:
            raise MemoryStoreError(
                "too_large",
                f"adopting the remote's {len(new)} new erasures would write more than {MAX_ADOPTED_BYTES} bytes of "
                "erasure ledger, so nothing was adopted or pulled (ask who keeps the remote what its ledger holds)",
            )
    return lines


_SIGNATURE = re.compile(
    rb"(author|committer) "
    + re.escape(f"{COMMITTER_NAME} <{COMMITTER_EMAIL}>".encode())
    + rb" [0-9]{1,12} [+-][0-9]{4}"
)


def _ledger_text(found: Iterable[Entry]) -> bytes:
    return "".join(e.to_json() + "\n" for e in found).encode()


def _tree_of(blob: str) -> str:
    """The id of the one tree :func:`append` writes: ``entries.jsonl`` (mode 100644) pointing at ``blob``."""
    body = b"100644 " + LEDGER_FILE.encode() + b"\x00" + bytes.fromhex(blob)
    return hashlib.sha1(b"tree %d\x00" % len(body) + body).hexdigest()


def foreign_ledger(r: pygit2.Repository, old: str | None, new: str, *, most: int = MAX_PUSHED_ENTRIES) -> str | None:
    """Why the ledger line from ``old`` (``None``: none yet) to ``new`` is not one gitmem writes, or ``None``.

    The ledger is a ref gitmem owns: whatever another copy sends for it (a
    ``gitmem push`` of its ledger) must be exactly what :func:`append` would
    have written there, byte for byte, or anything could ride in on it. Each
    new commit has at most one parent, the commit before it; its tree holds one
    file, ``entries.jsonl`` (mode 100644), whose text is the entries of its
    parent plus one more, each in :meth:`Entry.to_json`'s form; its message is
    ``erasure <id> (<kind>)``, gitmem is its author and committer, and it has
    no other header. ``unavailable`` when an object cannot be read. At most
    ``most`` new commits are walked (a push's bound, or :data:`MAX_TAKEN_ENTRIES`).
    """
    chain: list[pygit2.Commit] = []
    at = r[new]
    if not isinstance(at, pygit2.Commit):
        return "the erasure ledger must point at a commit"
    while str(at.id) != old:
        chain.append(at)
        if len(chain) > most:
            return f"at most {most} erasures may be added to the ledger at once"
        if len(at.parent_ids) > 1:
            return f"ledger commit {str(at.id)[:12]} has more than one parent; gitmem never writes a merge there"
        if not at.parent_ids:
            if old is not None:
                return "the new erasure ledger does not build on the current one"
            break
        at = r[at.parent_ids[0]]
    earlier = entries_at(r, old) if old is not None else ()
    latest = entries_at(r, new)
    if latest[: len(earlier)] != earlier or len(latest) != len(earlier) + len(chain):
        return "each new ledger commit must keep every entry before it and add exactly one"
    if len({e.id for e in latest}) != len(latest):
        return "the erasure ledger names one erasure twice"
    lines = [e.to_json().encode() + b"\n" for e in latest]  # each prefix a slice: no entry serialised twice
    text, ends = b"".join(lines), list(itertools.accumulate(map(len, lines)))
    for count, commit in enumerate(reversed(chain), start=len(earlier) + 1):
        entry = latest[count - 1]
        blob = str(pygit2.hash(text[: ends[count - 1]]))
        parent = [] if count == 1 else [b"parent " + str(commit.parent_ids[0]).encode()]
        lines = [b"tree " + _tree_of(blob).encode(), *parent]
        header, _, message = bytes(r.odb.read(commit.id)[1]).partition(b"\n\n")
        rows = header.split(b"\n")
        if (
            rows[: len(lines)] != lines
            or len(rows) != len(lines) + 2
            or not all(_SIGNATURE.fullmatch(row) for row in rows[len(lines) :])
            or not rows[len(lines)].startswith(b"author ")
            or message != f"erasure {entry.id} ({entry.kind})\n".encode()
        ):
            return (
                f"ledger commit {str(commit.id)[:12]} is not one gitmem writes (one file, entries.jsonl, holding "
                "the entries before it and one more; gitmem's message and signature)"
            )
    return None


def write_pending(repo_path: str, entry: Entry) -> None:
    """Keep ``entry`` beside the repository until the prune that completes it has run.

    Added to what is pending already: an erasure killed before its prune keeps
    its entry until the next prune, which records both.
    """
    write_private(os.path.join(repo_path, *_PENDING_FILE), _ledger_text((*pending(repo_path), entry)).decode())


def drop_pending(repo_path: str, entry_id: str) -> None:
    """Take back an entry whose erasure did not happen (its refs moved under it; it starts again)."""
    kept = [e for e in pending(repo_path) if e.id != entry_id]
    write_private(os.path.join(repo_path, *_PENDING_FILE), _ledger_text(kept).decode())


def pending(repo_path: str) -> tuple[Entry, ...]:
    data = read_local(os.path.join(repo_path, *_PENDING_FILE), _MAX_LEDGER_BYTES)
    if data is None:
        return ()
    return tuple(Entry.from_json(line) for line in data.decode("utf-8", "replace").splitlines() if line.strip())


def finish_pending(
    r: pygit2.Repository, repo_path: str, survivors: frozenset[str], *, stale_after: float, timeout: float
) -> tuple[Entry, ...]:
    """After a prune: record the pending entries without the blobs that survived it (another file holds them)."""
    done = tuple(replace(e, blobs=tuple(b for b in e.blobs if b not in survivors)) for e in pending(repo_path))
    for entry in done:
        append(r, repo_path, entry, stale_after=stale_after, timeout=timeout)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(repo_path, *_PENDING_FILE))
    return done
