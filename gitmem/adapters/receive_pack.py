"""The receive side of ``gitmem serve``: dulwich's receive-pack made safe for a live memory.

dulwich speaks the protocol; :class:`GuardedReceivePack` replaces what it does with
a push once the commands are read (dulwich on its own reports "ok" for a ref
update its CAS dropped, and checks nothing):

1. the pack goes into a quarantine directory inside the mount (:class:`Quarantine`),
   not into the mount's object store;
2. :func:`gitmem.git.pushcheck.check_updates` decides every ref update; refusals
   are sent to the client as ``remote:`` lines and ``ng`` statuses;
3. under the mount's writer lock (so it serialises with store writes), the objects
   of accepted updates move in and each ref moves by compare-and-swap from the
   value the client started from, through :func:`gitmem.git.refs.swap_ref` like
   every store write. A CAS that fails is reported as failed;
4. after the report, the mount's index catches up in a background thread
   (:class:`gitmem.index.refresher.Refresher`, the queue the watcher uses too).

A pack larger than the server's cap (``gitmem serve --max-push-bytes``, or the
mount's ``receive.maxInputSize`` when that is lower) is refused while it is read:
nothing of it stays, and the pusher is told the limit.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dulwich.errors import ApplyDeltaError, ChecksumMismatch, ObjectFormatException
from dulwich.object_store import DiskObjectStore, PackInputTooLarge
from dulwich.protocol import CAPABILITY_ATOMIC, SIDE_BAND_CHANNEL_PROGRESS
from dulwich.refs import Ref
from dulwich.server import Backend, ReceivePackHandler

from gitmem.errors import MemoryStoreError
from gitmem.git.merge import migrate_objects
from gitmem.git.mountconfig import format_from_repo
from gitmem.git.pushcheck import ZERO, RefUpdate, Refusal, check_updates, reason
from gitmem.git.refs import MAIN, swap_ref
from gitmem.git.repo import GitRepo
from gitmem.index.refresher import Refresher

BeforeUpdate = Callable[[str, Sequence[RefUpdate]], None]
"""Called with the mount name and the accepted updates just before they are applied."""

DEFAULT_MAX_PUSH_BYTES = 64 * 1024 * 1024
"""The largest pack ``gitmem serve`` takes by default: a memory is text of at most
64 KiB per file, so even a long imported history packs far smaller; the cap keeps
one push from filling the disk or memory while it is received and checked."""

_UNPACK_ERRORS = (OSError, ChecksumMismatch, ApplyDeltaError, AssertionError, ObjectFormatException, ValueError)


# --- quarantine --------------------------------------------------------------------


class Quarantine:
    """A temporary object directory inside the mount that receives a push's pack.

    Like git's own receive-pack quarantine: objects become part of the mount only
    when an update that needs them is accepted; otherwise they are deleted.
    """

    def __init__(self, repo_path: str) -> None:
        self.objects = os.path.join(repo_path, "objects")
        # git gc/prune clean up "tmp_*" leftovers if this process dies here.
        self.path = tempfile.mkdtemp(prefix="tmp_objdir-gitmem-", dir=self.objects)
        os.mkdir(os.path.join(self.path, "pack"))
        self.received = 0

    def receive(self, read: Callable[[int], bytes], recv: Callable[[int], bytes] | None, max_size: int | None) -> None:
        store = DiskObjectStore(self.path, alternates=[self.objects])
        try:
            pack = store.add_thin_pack(read, recv, max_input_size=max_size)
            self.received = len(pack)
            pack.close()
        finally:
            store.close()

    def migrate(self) -> None:
        """Move the received objects into the mount (:func:`gitmem.git.merge.migrate_objects`).

        An empty pack (a push of commits the mount already has) is not kept.
        """
        if self.received:
            migrate_objects(self.path, self.objects)

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


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

    def _on_pre_receive(self, client_refs: Any) -> None:
        return None

    def _on_update(self, ref_name: Any, old_sha: Any, new_sha: Any) -> bytes | None:
        return None

    def _on_post_receive(self, client_refs: Any) -> None:
        if any(ref == MAIN.encode() for _, _, ref in client_refs) and self.mount.refresher is not None:
            self.mount.refresher.request(self.mount.path)

    def _say(self, line: str) -> None:
        """One ``remote:`` line on the client's terminal."""
        if self.has_capability(b"side-band-64k"):
            self.proto.write_sideband(SIDE_BAND_CHANNEL_PROGRESS, (line + "\n").encode("utf-8"))

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
        mark = _history_mark(self.mount.git)
        quarantine = Quarantine(self.mount.path)
        try:
            if any(not u.deleting for u in updates):
                limit = self._push_limit()
                try:
                    recv = getattr(self.proto, "recv", None)
                    quarantine.receive(self.proto.read, recv, limit)
                except PackInputTooLarge:
                    self._say(
                        f"gitmem: push refused: the pack is larger than this server takes ({limit} bytes); "
                        "push fewer commits at a time, or raise gitmem serve --max-push-bytes"
                    )
                    message = f"pack exceeds the server's limit of {limit} bytes"
                    return {"": message.encode(), **{u.ref: b"pack too large" for u in updates}}
                except _UNPACK_ERRORS as exc:
                    message = str(exc).replace("\n", " ") or type(exc).__name__
                    return {"": message.encode("utf-8"), **{u.ref: b"unpacker error" for u in updates}}
            try:
                fmt = format_from_repo(GitRepo(self.mount.path))
                verdicts = check_updates(self.mount.path, updates, fmt, object_dirs=[quarantine.path])
            except MemoryStoreError as exc:
                self._say(f"gitmem: cannot check this push, so it is refused: {exc}")
                return {u.ref: b"cannot check the push; see the remote messages" for u in updates}
            return self._apply(updates, verdicts, quarantine, mark)
        finally:
            quarantine.discard()

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
        refused = [r for u in updates for r in verdicts[u.ref]]
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
            if _history_mark(self.mount.git) != mark:
                # A purge or forget deleted objects this push was checked against (and may
                # build on): landing it could bring erased content back or leave refs dangling.
                statuses.update({u.ref: _REWRITTEN for u in accepted})
            else:
                if any(not u.deleting for u in accepted):
                    quarantine.migrate()
                statuses.update(self._compare_and_swap(accepted))
        for update in accepted:
            if statuses[update.ref] != b"ok":
                self._say(f"gitmem: {update.ref}: {statuses[update.ref].decode()}")
        return statuses

    def _compare_and_swap(self, accepted: list[RefUpdate]) -> dict[str, bytes]:
        """Move each ref from the value the client saw; never report ``ok`` for a ref that did not move."""
        current = {u.ref: self._current(u.ref) for u in accepted}
        stale = {u.ref for u in accepted if current[u.ref] != u.old}
        if stale and self.has_capability(CAPABILITY_ATOMIC):
            return {
                u.ref: self._stale_reason(u, current[u.ref]) if u.ref in stale else b"atomic push failed"
                for u in accepted
            }
        out: dict[str, bytes] = {}
        done: list[RefUpdate] = []
        for update in accepted:
            if update.ref in stale:
                out[update.ref] = self._stale_reason(update, current[update.ref])
                continue
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
        return (
            f"the ref moved to {now[:12]} while this push was checked (an agent or another push wrote); "
            "fetch, rebase or merge, and push again"
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


def _history_mark(git: GitRepo) -> tuple[int, int]:
    """Changes whenever purge or forget deletes objects (the repo's generation file)."""
    return git.history_mark()
