"""``gitmem pull`` of a fast-forward without libgit2: what a CLI pull runs first.

A CLI pull is a whole process, and loading libgit2 and the merge engine cost it
about as much as git's own ``git pull`` (docs/benchmarks.md, "Teams on a plain
forge"). Most pulls of a team's memory are fast-forwards: the remote's ``main``
builds on this one and nobody wrote here since. :func:`pull_named` answers those
with the pieces a pull always uses, none of which loads libgit2:

1. the mount is looked at with :class:`gitmem.git.peek.Peek` (what opening the
   store checks: the control files, ``main``, the limits' values, the remote's URL);
2. the remote's ``main`` is fetched into a quarantine
   (:func:`gitmem.git.transport.fetch_main`, the pull's own fetch);
3. under the mount's writer lock, the new commits are held to the very rules
   every pull, push and clone meets (:func:`gitmem.git.pushcheck.check_updates`,
   git's strict object checks run by gitmem included), read through
   :class:`gitmem.git.peekreader.PeekReader`;
4. the fetched pack moves in as it is when the checks saw every object in it
   (:meth:`gitmem.git.quarantine.Quarantine.admit`), and ``main`` moves by the
   compare-and-swap of one loose ref (:func:`gitmem.git.looseref.swap_loose_ref`).

Anything else goes to :func:`gitmem.remotes.pull` through the store, whose
answers and errors are the reference: not a fast-forward (a merge, a join, a
conflict), a refusal (it refuses the same commits, saying why), an
erasure ledger here or on the remote, file or byte limits for the whole memory, review proposals or records of pushed
ones, a ref or object the peek leaves to libgit2, a crashed writer's leftovers,
a ``main`` that moved meanwhile. Nothing this path did is then undone or needed:
at most the objects of a checked fast-forward are already in the mount.
``GITMEM_FULL_PULL=1`` sends every pull the full way (the benchmark's off row).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from gitmem.errors import MemoryStoreError
from gitmem.git.looseref import MAIN, read_ref_file
from gitmem.git.mergeresult import MergeRefused as MergeRefused
from gitmem.git.peek import CannotPeek, Peek, parse_config
from gitmem.git.transport import DEFAULT_REMOTE, INCOMING, Remote

if TYPE_CHECKING:
    from gitmem.fileformat import FileFormat
    from gitmem.git.locks import Holder
    from gitmem.git.mergeresult import MergeResult
    from gitmem.git.peekreader import PeekReader
    from gitmem.git.quarantine import Quarantine
    from gitmem.model import Origin
    from gitmem.root import Root

FULL_PULL_ENV = "GITMEM_FULL_PULL"
"""Set to ``1``: every pull goes through the store (the fast-forward path's off switch)."""

_DURABLE = ("true", "yes", "on", "1")


class _Declined(Exception):
    """This pull is not for the quick path: the store's pull runs it."""


def pull_named(
    root: Root, name: str, remote: str = DEFAULT_REMOTE, *, origin: Origin | None = None, propose: bool = False
) -> MergeResult:
    """:func:`gitmem.remotes.pull` of memory ``name`` of ``root``: what ``gitmem pull`` runs (see the module docstring)."""
    if os.environ.get(FULL_PULL_ENV) != "1":
        try:
            return _fast_forward(root, name, remote)
        except (_Declined, CannotPeek):
            pass
    from gitmem import remotepush

    remotepush.load_libgit2_for_cli()
    from gitmem import remotes

    return remotes.pull(root.mount(name), remote, origin=origin, propose=propose)


def _fast_forward(root: Root, name: str, remote: str) -> MergeResult:
    from gitmem.remotepush import look

    looked = look(root, name, remote)
    if looked is None:
        raise _Declined
    folder, limits, url = looked
    if "max_files" in limits or "max_memory_bytes" in limits:
        raise _Declined  # the memory's size limits read every file's size: libgit2 reads headers, the peek whole objects
    if _refs_besides(folder, MAIN):  # proposals, a conflict proposal or any other ref: the store's pull closes
        raise _Declined  # merged proposals and hides every ref
    durable = _durable(folder, remote)
    from gitmem.fileformat import FileFormat
    from gitmem.git.quarantine import open_quarantine
    from gitmem.git.transport import fetch_main

    fmt = FileFormat(**limits)  # type: ignore[arg-type]
    mark = _history_mark(folder)
    with open_quarantine(folder) as held:
        fetch_main(held.path, Remote(remote, url))
        incoming = read_ref_file(os.path.join(held.path, *INCOMING.split("/")))
        if incoming is None or _refs_besides(held.path, INCOMING):
            raise _Declined  # a packed or odd ref; the remote's erasure ledger, to adopt first
        return _land(folder, held, incoming, fmt, mark, durable)


def _land(
    folder: str, held: Quarantine, incoming: str, fmt: FileFormat, mark: tuple[int, int], durable: bool
) -> MergeResult:
    """Under the writer lock: check the new commits, move their objects in, swap ``main``."""
    from gitmem.git.locks import WriterLock
    from gitmem.git.looseref import swap_loose_ref
    from gitmem.git.mergeresult import MergeResult
    from gitmem.git.packs import PackError
    from gitmem.git.peekreader import PeekReader
    from gitmem.git.pushcheck import RefUpdate, check_updates

    lock = WriterLock(os.path.join(folder, "gitmem", "write.lock"), on_crash=_crashed)
    with lock.hold():
        if _history_mark(folder) != mark:
            raise _Declined  # a purge or forget ran meanwhile: the store's pull says so
        if _refs_besides(folder, MAIN):
            raise _Declined  # a ref made since the first look (a forget's erasure ledger, a proposal)
        ours = read_ref_file(os.path.join(folder, *MAIN.split("/")))
        if ours is None:
            raise _Declined
        if incoming == ours:
            return MergeResult("up_to_date", ours, ours, ())
        reader = PeekReader(Peek(folder, extra_objects=[held.objects]), ours)
        if not reader.above(incoming, ours)[1]:
            raise _Declined
        seen: dict[str, set[bytes]] = {}
        verdict = check_updates(
            held.path, [RefUpdate(MAIN, ours, incoming)], fmt, strict_objects=True, reached=seen, reader=reader
        )
        if verdict[MAIN]:
            raise _Declined  # the store's pull refuses the same commits, listing each file and rule
        paths = _changed(reader, ours, incoming)
        try:
            held.admit([incoming], reached=seen[MAIN], durable=durable)
        except (PackError, OSError) as exc:
            raise MemoryStoreError("unavailable", f"cannot store the objects of {incoming[:12]}: {exc}") from exc
        try:
            moved = swap_loose_ref(folder, MAIN, ours, incoming, durable=durable)
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot update {MAIN}: {exc}") from exc
        if not moved:
            raise _Declined  # main moved, or is not a plain loose ref: the store's pull retries
    return MergeResult("fast_forward", ours, incoming, paths)


def _changed(reader: PeekReader, old: str, new: str) -> tuple[str, ...]:
    """Files that differ between two commits' trees: what the fast-forward changes on main."""
    from gitmem.git.objectread import commit_parts, tree_body
    from gitmem.git.treediff import changes_between

    trees = [bytes.fromhex(commit_parts(reader.body(c)[1])[0]) for c in (old, new)]
    found = changes_between(lambda raw: tree_body(reader, raw.hex()), trees[0], trees[1])
    return tuple(change.path for change in found)


def _refs_besides(folder: str, ref: str) -> bool:
    """Whether the repository at ``folder`` has any ref but ``ref`` (loose or packed)."""
    from gitmem.localfile import read_control

    for top, folders, files in os.walk(os.path.join(folder, "refs")):
        if any(os.path.islink(os.path.join(top, f)) for f in folders):
            return True
        for file in files:
            if os.path.relpath(os.path.join(top, file), folder).replace(os.sep, "/") != ref:
                return True
    try:
        packed = read_control(os.path.join(folder, "packed-refs"), 1 << 20)
    except MemoryStoreError:
        return True
    return packed is not None and any(line and not line.startswith((b"#", b"^")) for line in packed.splitlines())


def _durable(folder: str, remote: str) -> bool:
    """The mount's ``gitmem.durable`` (its own config only, as the store reads it); declines when
    proposals were pushed to ``remote`` (their records are the store's pull's to keep)."""
    from gitmem.localfile import read_control

    raw = read_control(os.path.join(folder, "config"), 1 << 20)
    text = "" if raw is None else raw.decode("utf-8", "replace")
    if "gitmemproposal" in text.lower():
        raise _Declined
    value = parse_config(text).get("gitmem.durable")
    return value is not None and value.strip().lower() in _DURABLE


def _history_mark(folder: str) -> tuple[int, int]:
    """:meth:`gitmem.git.repo.GitRepo.history_mark`: changes whenever a purge or forget deletes objects."""
    try:
        st = os.stat(os.path.join(folder, "gitmem", "generation"))
    except FileNotFoundError:
        return (0, 0)
    return (st.st_ino, st.st_mtime_ns)


def _crashed(holder: Holder) -> None:
    """The writer lock's previous holder died holding it: its leftovers are the store's to clear."""
    raise _Declined
