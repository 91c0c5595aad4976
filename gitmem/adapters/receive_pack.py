"""The receive side of ``gitmem serve``: dulwich's receive-pack made safe for a live memory.

dulwich speaks the protocol; :class:`GuardedReceivePack` replaces what it does with
a push once the commands are read (dulwich reports "ok" for a ref update its CAS
dropped, checks nothing, and stores whatever objects it is sent):

1. the commands are read leniently (a push from a shallow clone sends ``shallow``
   lines first; dulwich failed on them), and a ref named twice in one push is
   refused rather than half applied;
2. the pack is streamed into ``git index-pack --strict --fix-thin`` inside a
   quarantine of the mount (:class:`gitmem.git.quarantine.Quarantine`, the one
   every way in uses): git itself checks every object with fsck's rules and
   resolves deltas against the mount. A broken, truncated or incomplete pack is
   an ``unpack`` error in the report, never a server error;
3. :func:`gitmem.git.pushcheck.check_updates` decides every ref update; refusals
   are sent to the client as ``remote:`` lines and ``ng`` statuses;
4. under the mount's writer lock (so it serialises with store writes), refs whose
   value moved since the client read them are reported failed, a new pack of
   exactly the objects the remaining updates reach is moved in
   (:meth:`~gitmem.git.quarantine.Quarantine.admit`), and each ref moves by
   compare-and-swap through :func:`gitmem.git.refs.swap_ref` like every store
   write. Nothing a refused or failed update carried, nor any object no update
   reaches, enters the mount; if a CAS still fails (a foreign git raced), the pack
   is replaced by one for the updates that landed;
5. after the report, the mount's index catches up in a background thread
   (:class:`gitmem.index.refresher.Refresher`, the queue the watcher uses too).

A pack larger than the server's cap (``gitmem serve --max-push-bytes``, or the
mount's ``receive.maxInputSize`` when that is lower) is refused while it is read:
nothing of it stays, and the pusher is told the limit.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dulwich.errors import GitProtocolError, HangupException
from dulwich.protocol import (
    CAPABILITY_ATOMIC,
    CAPABILITY_REPORT_STATUS,
    SIDE_BAND_CHANNEL_PROGRESS,
    extract_capabilities,
)
from dulwich.refs import Ref
from dulwich.server import Backend, ReceivePackHandler

from gitmem.adapters.pushaccess import PushPolicy
from gitmem.adapters.upload_pack import MAX_ERROR_CHARS
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, visible
from gitmem.git.merge import MergeRefused
from gitmem.git.mountconfig import format_from_repo
from gitmem.git.packs import PackError, PackTooLarge, ref_tips, remove_pack
from gitmem.git.pushcheck import ZERO, RefUpdate, Refusal, check_updates, reason
from gitmem.git.quarantine import Quarantine
from gitmem.git.queue import QUEUE_MAIN, land_queued
from gitmem.git.refs import MAIN, swap_ref
from gitmem.git.repo import GitRepo
from gitmem.index.refresher import Refresher
from gitmem.model import Origin, is_object_id

log = logging.getLogger(__name__)

BeforeUpdate = Callable[[str, Sequence[RefUpdate]], None]
"""Called with the mount name and the accepted updates just before they are applied."""

DEFAULT_MAX_PUSH_BYTES = 64 * 1024 * 1024
"""The largest pack ``gitmem serve`` takes by default: a memory is text of at most
64 KiB per file, so even a long imported history packs far smaller; the cap keeps
one push from filling the disk or memory while it is received and checked."""


class InputTooLarge(OSError):
    """Raised by a request body reader past its cap (the server's inflated-size limit)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request is larger than this server takes ({limit} bytes once decompressed)")
        self.limit = limit


_DUPLICATE = b"this ref is named more than once in the push; nothing was done to it"


# --- receive-pack --------------------------------------------------------------------


@dataclass
class MountContext:
    """What a push to one mount needs besides dulwich's repo: its name, path and writer lock."""

    name: str
    path: str
    git: GitRepo
    before_update: BeforeUpdate | None = None
    refresher: Refresher | None = None
    max_push_bytes: int | None = DEFAULT_MAX_PUSH_BYTES
    """The largest pack taken (``None``: no cap but the mount's ``receive.maxInputSize``)."""
    policy: PushPolicy | None = None
    """What the pushing token may do (:mod:`gitmem.adapters.pushaccess`); ``None``: anything pushcheck allows."""
    principal: str | None = None
    """The pushing token's principal: the author of a merge made for a push to ``refs/for/main``."""


class GuardedReceivePack(ReceivePackHandler):
    """dulwich's receive-pack with quarantine, pushcheck and a real ref CAS.

    Repository hooks are not run: the server applies gitmem's checks itself.
    """

    def __init__(
        self,
        backend: Backend,
        args: Sequence[str],
        proto: Any,
        stateless_rpc: bool = False,
        advertise_refs: bool = False,
        *,
        mount: MountContext,
    ) -> None:
        super().__init__(backend, args, proto, stateless_rpc=stateless_rpc, advertise_refs=advertise_refs)
        self.mount = mount
        self._reached: dict[str, set[bytes]] = {}

    def _say(self, message: str) -> None:
        """``remote:`` lines on the client's terminal, each made :func:`~gitmem.fileformat.visible`.

        A message can quote what the pusher sent (a path, git's complaint about an
        object): an escape sequence in it must show as text, not act on a terminal.
        """
        if self.has_capability(b"side-band-64k"):
            for line in message.splitlines() or [""]:
                self.proto.write_sideband(SIDE_BAND_CHANNEL_PROGRESS, (visible(line) + "\n").encode("utf-8"))

    def handle(self) -> None:
        """dulwich's ``handle`` with lenient command reading; the rest is :meth:`_apply_pack`."""
        if self.advertise_refs or not self.stateless_rpc:
            # The advertisement is dulwich's; it returns before reading commands when asked to.
            if self.advertise_refs:
                super().handle()
                return
            raise GitProtocolError("gitmem serves receive-pack over stateless HTTP only")
        try:
            commands = self._read_commands()
        except HangupException:
            self._refuse_request("the request ended early")
            return
        except (GitProtocolError, ValueError) as exc:  # garbage, a bad length, not gzip, a capability never offered
            self._refuse_request(str(exc))
            return
        if not commands:
            return
        status = list(self._apply_pack(commands))
        updated = [ref for (_, _, ref), (_, msg) in zip(commands, status[1:], strict=True) if msg == b"ok"]
        if MAIN.encode() in updated and self.mount.refresher is not None:
            self.mount.refresher.request(self.mount.path)
        if self.has_capability(CAPABILITY_REPORT_STATUS):
            self._report_status(status)

    def _refuse_request(self, what: str) -> None:
        """A request that is not git's protocol, answered as upload-pack answers one: an ``ERR`` line, nothing done.

        Raised on, it was HTTP 500 and a traceback in the server's log for every
        hand-built body a token holder cared to send.
        """
        log.info("receive-pack refused a request: %s", what)
        if len(what) > MAX_ERROR_CHARS:
            what = what[:MAX_ERROR_CHARS] + "…"
        self.proto.write_pkt_line(f"ERR receive-pack: protocol error: {visible(what)}".encode("utf-8", "replace"))

    def _read_commands(self) -> list[tuple[bytes, bytes, bytes]]:
        """``(old, new, ref)`` per command; ``shallow`` lines (a shallow clone's push) are skipped.

        The server keeps its full history, so the pusher's shallow boundary does
        not matter here: the checks walk the pushed commits down to what the
        mount has, and a commit missing below that boundary is a refusal.
        """
        commands: list[tuple[bytes, bytes, bytes]] = []
        caps_seen = False
        while True:
            line = self.proto.read_pkt_line()
            if line is None:
                return commands
            if line.startswith(b"shallow ") and not commands:
                continue
            if not caps_seen:
                line, caps = extract_capabilities(line)
                self.set_client_capabilities(caps)
                caps_seen = True
            fields = line.rstrip(b"\n").split(b" ")
            if len(fields) != 3 or not all(is_object_id(f.decode("latin-1")) for f in fields[:2]):
                raise GitProtocolError(f"invalid ref update line from the client: {line[:200]!r}")
            commands.append((fields[0], fields[1], fields[2]))

    def _apply_pack(self, refs: Any) -> Iterator[tuple[bytes, bytes]]:
        updates = [
            RefUpdate(ref.decode("utf-8", "replace"), old.decode("ascii"), new.decode("ascii"))
            for old, new, ref in refs
        ]
        statuses = self._decide_and_apply(updates)
        yield (b"unpack", statuses.pop("", b"ok"))
        for update in updates:
            yield (update.ref.encode("utf-8"), statuses[update.ref])

    def _decide_and_apply(self, updates: list[RefUpdate]) -> dict[str, bytes]:
        """Status per ref (``b"ok"`` or a reason); key ``""`` holds an unpack failure."""
        mark = self.mount.git.history_mark()  # changes whenever purge or forget deletes objects
        try:
            quarantine = Quarantine(self.mount.path)
        except MemoryStoreError as exc:
            self._say(f"gitmem: push refused: {exc.message}")
            return {"": b"cannot receive the pack", **{u.ref: b"cannot receive the pack" for u in updates}}
        try:
            if any(not u.deleting for u in updates):
                limit = self._push_limit()
                try:
                    quarantine.receive(self.proto.read, limit)
                except (PackTooLarge, InputTooLarge) as exc:
                    limit = exc.limit
                    self._say(
                        f"gitmem: push refused: the pack is larger than this server takes ({limit} bytes); "
                        "push fewer commits at a time, or raise gitmem serve --max-push-bytes"
                    )
                    message = f"pack exceeds the server's limit of {limit} bytes"
                    return {"": message.encode(), **{u.ref: b"pack too large" for u in updates}}
                except (PackError, OSError) as exc:
                    text = str(exc).replace("\n", " ") or type(exc).__name__
                    self._say(f"gitmem: push refused: git rejects the pushed objects: {text}")
                    return {"": f"index-pack failed: {text}".encode(), **{u.ref: b"unpacker error" for u in updates}}
            named = Counter(u.ref for u in updates)
            single = [u for u in updates if named[u.ref] == 1]
            queued = [u for u in single if u.ref == QUEUE_MAIN]
            try:
                fmt = format_from_repo(GitRepo(self.mount.path))
                verdicts = check_updates(
                    self.mount.path,
                    [u for u in single if u.ref != QUEUE_MAIN],
                    fmt,
                    object_dirs=[quarantine.objects],
                    reached=self._reached,
                )
                verdicts.update(_queue_refusals(queued))
            except MemoryStoreError as exc:
                self._say(f"gitmem: cannot check this push, so it is refused: {exc}")
                return {u.ref: b"cannot check the push; see the remote messages" for u in updates}
            for ref in (r for r, n in named.items() if n > 1):
                verdicts[ref] = [Refusal(ref, "duplicate_ref", _DUPLICATE.decode())]
            refused_by_policy = self._policy_refusals(single, quarantine)
            if refused_by_policy is None:
                return {u.ref: b"cannot check the push; see the remote messages" for u in updates}
            for ref, refusals in refused_by_policy.items():
                verdicts[ref] = [*refusals, *verdicts.get(ref, [])] if refusals else verdicts.get(ref, [])
            merging = [u for u in queued if not verdicts[u.ref]]
            statuses = self._apply([u for u in updates if u not in merging], verdicts, quarantine, mark)
            statuses.update(self._land_queued(merging, quarantine, fmt, failed=any(verdicts.values())))
            return statuses
        finally:
            quarantine.close()

    def _land_queued(
        self, updates: list[RefUpdate], quarantine: Quarantine, fmt: FileFormat, *, failed: bool
    ) -> dict[str, bytes]:
        """Merge each push to ``refs/for/main`` into ``main`` as it is now (:mod:`gitmem.git.queue`)."""
        out: dict[str, bytes] = {}
        for update in updates:
            if failed and self.has_capability(CAPABILITY_ATOMIC):
                out[update.ref] = b"atomic push failed"
                continue
            try:
                result = land_queued(
                    self.mount.git, fmt, quarantine, update.new, origin=Origin(principal_id=self.mount.principal)
                )
            except MergeRefused as exc:
                self._say(f"gitmem: {update.ref}: not merged into main: {exc.message}")
                out[update.ref] = ("; ".join(exc.reasons[:3]) or exc.message).replace("\n", " ").encode()
                continue
            except MemoryStoreError as exc:
                self._say(f"gitmem: {update.ref}: could not merge into main: {exc.message}")
                out[update.ref] = f"could not merge: {exc.message}".replace("\n", " ").encode()
                continue
            self._say(f"gitmem: {update.ref}: {result.kind.replace('_', ' ')}: main is now {result.after[:12]}")
            out[update.ref] = b"ok"
            if self.mount.refresher is not None:
                self.mount.refresher.request(self.mount.path)
        return out

    def _policy_refusals(self, updates: list[RefUpdate], quarantine: Quarantine) -> dict[str, list[Refusal]] | None:
        """The token's refusals per ref (access, review gate, principal); ``None`` when they cannot be checked."""
        if self.mount.policy is None:
            return {}
        try:
            return self.mount.policy(updates, [quarantine.objects])
        except MemoryStoreError as exc:
            self._say(f"gitmem: cannot check who may push this, so it is refused: {exc}")
            return None

    def _push_limit(self) -> int | None:
        """The lower of the server's cap and the mount's own ``receive.maxInputSize`` (git's setting)."""
        caps = [c for c in (self.mount.max_push_bytes, self._receive_max_input_size()) if c]
        return min(caps) if caps else None

    def _apply(
        self,
        updates: list[RefUpdate],
        verdicts: dict[str, list[Refusal]],
        quarantine: Quarantine,
        mark: tuple[int, int],
    ) -> dict[str, bytes]:
        statuses: dict[str, bytes] = {}
        refused = [r for ref in dict.fromkeys(u.ref for u in updates) for r in verdicts[ref]]
        if refused:
            self._say("gitmem: push refused; a memory only takes changes a store write would accept:")
            for refusal in refused:
                self._say(f"gitmem:   {refusal}")
        for update in updates:
            if verdicts[update.ref]:
                statuses[update.ref] = reason(verdicts[update.ref]).encode("utf-8")
        accepted = [u for u in updates if not verdicts[u.ref]]
        if refused and self.has_capability(CAPABILITY_ATOMIC):
            statuses.update({u.ref: b"atomic push failed" for u in accepted})
            return statuses
        if not accepted:
            return statuses
        if self.mount.before_update is not None:
            self.mount.before_update(self.mount.name, accepted)
        with self.mount.git.lock.hold():
            if self.mount.git.history_mark() != mark:
                # A purge or forget deleted objects this push was checked against (and may
                # build on): landing it could bring erased content back or leave refs dangling.
                statuses.update({u.ref: _REWRITTEN for u in accepted})
            else:
                statuses.update(self._land(accepted, quarantine))
        for update in accepted:
            if statuses[update.ref] != b"ok":
                self._say(f"gitmem: {update.ref}: {statuses[update.ref].decode()}")
        return statuses

    def _land(self, accepted: list[RefUpdate], quarantine: Quarantine) -> dict[str, bytes]:
        """Under the writer lock: bring in what the still-current updates need, then move their refs."""
        current = {u.ref: self._current(u.ref) for u in accepted}
        stale = {u.ref for u in accepted if current[u.ref] != u.old}
        if stale and self.has_capability(CAPABILITY_ATOMIC):
            return {
                u.ref: self._stale_reason(u, current[u.ref]) if u.ref in stale else b"atomic push failed"
                for u in accepted
            }
        out = {u.ref: self._stale_reason(u, current[u.ref]) for u in accepted if u.ref in stale}
        movable = [u for u in accepted if u.ref not in stale]
        known = ref_tips(self.mount.path)
        durable = self.mount.git.durable()
        try:
            landing = [u for u in movable if not u.deleting]
            reached = set().union(*(self._reached.get(u.ref, set()) for u in landing)) if landing else set()
            landed = quarantine.admit([u.new for u in landing], known=known, reached=reached, durable=durable)
        except (PackError, OSError) as exc:
            text = str(exc).replace("\n", " ")
            return {**out, **{u.ref: f"could not store the pushed objects: {text}".encode() for u in movable}}
        out.update(self._compare_and_swap(movable))
        failed = [u for u in movable if out[u.ref] != b"ok"]
        if failed and landed:
            # A foreign git moved a ref between our read and the CAS: keep only what landed needs.
            kept = [u.new for u in movable if out[u.ref] == b"ok" and not u.deleting]
            try:
                quarantine.admit(kept, known=known, durable=durable)
            except (PackError, OSError):
                return out  # the objects stay unreferenced; gc prunes them
            remove_pack(landed)
        return out

    def _compare_and_swap(self, accepted: list[RefUpdate]) -> dict[str, bytes]:
        """Move each ref from the value the client saw; never report ``ok`` for a ref that did not move."""
        out: dict[str, bytes] = {}
        done: list[RefUpdate] = []
        for update in accepted:
            moved = self._swap(update.ref, update.old, update.new)
            if moved is True:
                out[update.ref] = b"ok"
                done.append(update)
                continue
            out[update.ref] = (
                moved if isinstance(moved, bytes) else self._stale_reason(update, self._current(update.ref))
            )
            if self.has_capability(CAPABILITY_ATOMIC):
                for applied in done:  # a foreign git process raced us: put the others back
                    self._swap(applied.ref, applied.new, applied.old)
                    out[applied.ref] = b"atomic push failed"
                return {u.ref: out.get(u.ref, b"atomic push failed") for u in accepted}
        return out

    def _current(self, ref: str) -> str:
        try:
            found = self.repo.refs[Ref(ref.encode())]
        except KeyError:
            return ZERO
        return found.decode("ascii")

    @staticmethod
    def _stale_reason(update: RefUpdate, now: str) -> bytes:
        if update.old == ZERO:
            return b"the ref already exists; fetch and push again"
        if now == ZERO:
            return b"the ref was deleted meanwhile; fetch and push again"
        queue = f"; or push to {QUEUE_MAIN} to have the server merge it" if update.ref == MAIN else ""
        return (
            f"the ref moved to {now[:12]} while this push was checked (an agent or another push wrote); "
            f"fetch, rebase or merge, and push again{queue}"
        ).encode()

    def _swap(self, ref: str, old: str, new: str) -> bool | bytes:
        """One CAS through the store's ref mover; ``True``, ``False`` (the ref moved) or why it failed."""
        git = self.mount.git
        try:
            return swap_ref(
                git.fresh(),
                git.path,
                ref,
                None if old == ZERO else old,
                None if new == ZERO else new,
                message="push via gitmem serve",
                stale_after=git.stale_lock_seconds,
                wait=False,  # we hold the writer lock: a live foreign lock is reported, not waited for
            )
        except MemoryStoreError as exc:
            return f"could not update the ref: {exc.message}; push again shortly".replace("\n", " ").encode()


_REWRITTEN = b"the memory's history was rewritten (purge or forget) while this push was checked; clone again"


def _queue_refusals(updates: Sequence[RefUpdate]) -> dict[str, list[Refusal]]:
    """``refs/for/main`` takes a commit to merge, and is never a ref that could be deleted."""
    message = (
        f"{QUEUE_MAIN} is not a ref: push a commit to it (git push origin HEAD:{QUEUE_MAIN}) to merge it into main"
    )
    return {u.ref: [Refusal(u.ref, "ref_name", message)] if u.deleting else [] for u in updates}
