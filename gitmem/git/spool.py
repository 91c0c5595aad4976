"""Group commit across processes: a writer queued on the lock hands its request to the holder.

The in-process group (:mod:`gitmem.git.group`) commits the threads of one process
together; writers in *different* processes still took the writer lock one commit
each, and a commit's fixed cost (a pack, a ref update) is most of what the lock
is held for. Here a process whose leader finds the writer lock taken *publishes*
its queued requests before it waits: the holder takes them into its round, each
still its own commit decided on the head the one before it made, and leaves the
outcomes where the waiter finds them once it gets the lock.

The spool is ``<repo>/gitmem/spool/``. Each process that ever waited keeps two
files there for its life (created once, so a request costs no file creation):

- ``<token>.live``: the process holds an ``flock`` on it for as long as it lives; a
  holder that can take that flock knows the process is gone and drops its slot
  (a request of a killed waiter is never applied after its death was seen);
- ``<token>.slot``: a header (state, lengths, checksums, the round's tip commit),
  then the request, then the outcomes, both in the plain versioned encoding of
  :mod:`gitmem.git.spoolcodec` (never pickles: decoding runs nothing).

A third file, ``bell``, is shared: every move of a slot *into* ``queued`` appends
one byte to it (``O_APPEND``, so concurrent appends never overwrite each other).
A holder that finds it non-empty empties it, then scans the folder (writer lock
held: a byte appended after the truncation is heard at the next look, and one
appended before it was appended after its slot was queued, which the scan
finds), and remembers the size left; while the size has not changed and that
scan left nothing queued behind, nothing can be queued, and one ``stat``
replaces listing the folder and reading every slot's header (:func:`take`,
:func:`queued`, :func:`gather`): an uncontended writer pays that ``stat`` and
nothing else. So the bell holds at most a byte per request queued since the
last scan (it used to grow by one per request for good, emptied only past a
megabyte). The bell only ever says "look"; the slots' headers stay the truth,
so a missed or extra byte costs a scan or a wait, never a request.

The slot's states and who moves them (always under the writer lock, except the
two moves of the waiter itself, which a holder's checksum check and the claim
``flock`` on the slot keep apart from its reads)::

    empty ──waiter──► queued ──holder──► pending(tip) ──holder, after the ref moved──► done
      ▲                 │  ▲                  │                                         │
      │                 │  └─ dead holder's ──┘ (tip not on main)                      │
      └─waiter: withdraw┘    round recovered                                           │
      └────────────────────────────── waiter, under the writer lock ◄──────────────────┘

Exactly once: a holder writes ``pending`` with the outcomes *and* the round's tip
commit before it moves ``main``, and ``done`` after. A holder killed between the
two leaves ``pending``; the next taker of the writer lock sees the crash (the lock
record, :mod:`gitmem.git.locks`) and settles every pending slot before anything
else runs (:func:`recover`): the tip reachable from ``main`` means the round
landed (``done``, outcomes as written), otherwise it did not (``queued`` again,
to be taken or run by its own waiter). A waiter that gets the lock and finds its
slot still ``queued`` clears it and commits the request itself, so a request is
applied by exactly one round. A waiter that gives up waiting (the lock timeout)
withdraws its request only if no holder has claimed it; otherwise it waits on.

What is *not* covered: a waiter killed after a holder checked that it lives (the
holder applies the request; nobody reads the answer, exactly as when a writer is
killed right after its own ref update), and requests of a gitmem version whose
spool format differs (the slot name carries :data:`VERSION`; a holder ignores
other versions and their waiters commit for themselves). A request a holder
cannot decode is never run: the holder marks its slot ``refused`` and its waiter
answers ``unavailable``; an answer the waiter cannot decode is ``unavailable``
too.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from gitmem.errors import MemoryStoreError
from gitmem.git import spoolcodec
from gitmem.git.locks import process_token
from gitmem.git.perms import make_private_dir, open_private

VERSION = f"v{spoolcodec.FORMAT}"
"""In every slot's name: a holder reads only slots of its own format (an older gitmem's waiters commit for themselves)."""
GATHER_POLL = 0.0002
_HEADER = 160
_MAGIC = f"GMSPOOL{spoolcodec.FORMAT}".encode()

Spec = spoolcodec.SpecType
"""A request's plan as plain data: called with the holder's ``GitRepo``, returns ``plan(snapshot)``."""

hook: Callable[[str], None] | None = None
"""Test seam: called at ``round`` (lock taken, spool not read yet), ``pending`` (outcomes
written, ``main`` not moved) and ``landed`` (``main`` moved, slots not ``done`` yet)."""


def at(point: str) -> None:
    if hook is not None:
        hook(point)


class Header(NamedTuple):
    """A slot's first bytes: its state, the request's sequence number, lengths and checksums, the round's tip."""

    state: str
    seq: int
    req_len: int
    req_crc: int
    out_len: int
    out_crc: int
    tip: str


# magic, state, seq, request length and crc32, answer length and crc32, tip (hex or blank), crc32 of the rest
_LAYOUT = struct.Struct("<8sBQIIII40sI")
_STATES = ("empty", "queued", "pending", "done", "refused")
_STATE_CODES = {name: code for code, name in enumerate(_STATES)}
_BLANK_TIP = b" " * 40


def _encode(h: Header) -> bytes:
    tip = h.tip.encode("ascii") if h.tip else _BLANK_TIP
    body = _LAYOUT.pack(
        _MAGIC, _STATE_CODES[h.state], h.seq, h.req_len, h.req_crc, h.out_len, h.out_crc, tip, 0
    )[:-4]
    return body + zlib.crc32(body).to_bytes(4, "little")


def _decode(raw: bytes) -> Header | None:
    """A header, or ``None`` when torn by a write in flight or not ours (checksum, magic, state)."""
    if len(raw) < _LAYOUT.size:
        return None
    magic, state, seq, req_len, req_crc, out_len, out_crc, tip, crc = _LAYOUT.unpack_from(raw)
    if magic != _MAGIC or crc != zlib.crc32(raw[: _LAYOUT.size - 4]) or state >= len(_STATES):
        return None
    return Header(_STATES[state], seq, req_len, req_crc, out_len, out_crc, "" if tip == _BLANK_TIP else tip.decode("ascii", "replace"))


def _wake_path(slot_path: str) -> str:
    return slot_path[: -len(".slot")] + ".wake"


def spool_dir(repo_path: str) -> str:
    return os.path.join(repo_path, "gitmem", "spool")


def _bell_path(folder: str) -> str:
    return os.path.join(folder, "bell")


def _bell_size(repo_path: str) -> int:
    """The bell's size (bytes appended so far); -1 when the memory has no spool (nobody ever waited)."""
    try:
        return os.stat(_bell_path(spool_dir(repo_path))).st_size
    except FileNotFoundError:
        return -1


def announce(folder: str, fd: int | None = None) -> None:
    """A slot just became ``queued``: append to the bell (a holder's next look then scans the folder)."""
    try:
        if fd is not None:
            os.write(fd, b"q")
            return
        bell = open_private(_bell_path(folder), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(bell, b"q")
        finally:
            os.close(bell)
    except OSError:  # a full disk: holders miss it until the next byte; its waiter still commits it
        pass


class Slot:
    """One process's slot in one repository's spool (the waiter's side, and the holder's view of it)."""

    def __init__(
        self, path: str, fd: int, live_fd: int | None, wake_fd: int | None = None, bell_fd: int | None = None
    ) -> None:
        self.path = path
        self.fd = fd
        self.bell_fd = bell_fd  # ours: the spool's bell, opened for appending
        self.live_fd = live_fd  # ours: the flock that says we live; theirs: a descriptor to test it with
        self.wake_fd = wake_fd  # ours: the FIFO we wait on (read and written); theirs: opened to ring it
        self.seq = 0

    def answered(self) -> bool:
        """Our request is done (a holder moved ``main`` and wrote the outcomes): collect it, lock or not."""
        h = self.header()
        return h is not None and h.state == "done" and h.seq == self.seq

    def ring(self) -> None:
        """Wake the slot's waiter (it may be answered); nothing happens when it is not listening."""
        if self.wake_fd is None:
            try:
                self.wake_fd = os.open(_wake_path(self.path), os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:  # ENXIO: nobody reads it (its owner is gone); ENOENT: an older slot
                return
        try:
            os.write(self.wake_fd, b"d")
        except OSError:  # EAGAIN: it has enough to wake up on already; EPIPE: its owner is gone
            pass

    def header(self) -> Header | None:
        try:
            return _decode(os.pread(self.fd, _LAYOUT.size, 0))
        except OSError:
            return None

    def _put(self, h: Header) -> None:
        os.pwrite(self.fd, _encode(h), 0)

    def request(self, h: Header) -> list[Spec] | None:
        """The queued request's specs; ``None`` if torn (checksum); :class:`~gitmem.git.spoolcodec.Malformed` if not one."""
        if not spoolcodec.can_decode_requests():
            return None  # no batch writer loaded in this process: its waiter commits it itself
        raw = os.pread(self.fd, h.req_len, _HEADER)
        if len(raw) != h.req_len or zlib.crc32(raw) != h.req_crc:
            return None
        return spoolcodec.decode_request(raw)

    def outcomes(self, h: Header) -> list[tuple[Any, BaseException | None]] | None:
        raw = os.pread(self.fd, h.out_len, _HEADER + h.req_len)
        if len(raw) != h.out_len or zlib.crc32(raw) != h.out_crc:
            return None
        return spoolcodec.decode_answer(raw)

    # -- the waiter --

    def publish(self, specs: Sequence[Spec]) -> bool:
        """Queue ``specs`` (the slot is empty: its owner cleared it under the writer lock); whether it worked."""
        try:
            raw = spoolcodec.encode_request(specs)
        except spoolcodec.Malformed:  # a plan that cannot cross processes is committed by its own process
            return False
        self.seq += 1
        try:
            os.pwrite(self.fd, raw, _HEADER)  # the request first: a valid header vouches for it
            self._put(Header("queued", self.seq, len(raw), zlib.crc32(raw), 0, 0, ""))
        except OSError:
            self.clear()
            return False
        announce(os.path.dirname(self.path), self.bell_fd)  # after the header: a holder that hears it sees it
        return True

    def collect(self, on_main: Callable[[Header], bool]) -> list[tuple[Any, BaseException | None]] | None:
        """Under the writer lock: the outcomes a holder left (slot cleared), or ``None``: commit it yourself.

        A slot still ``pending`` (a holder failed between its outcomes and its
        ref update, and no crash was noticed) is settled by ``on_main`` first.
        An answer that cannot be read is ``unavailable``, never a second commit.
        """
        h = self.header()
        if h is not None and h.state == "pending" and h.seq == self.seq:
            self.mark("done" if on_main(h) else "queued")
            h = self.header()
        if h is not None and h.seq == self.seq and h.state == "refused":
            self.clear()
            raise MemoryStoreError("unavailable", "the writer holding the lock could not read this write's request")
        if h is None or h.seq != self.seq or h.state not in ("queued", "done"):
            self.clear()
            raise MemoryStoreError("unavailable", "this write's group-commit slot is unreadable: its outcome is unknown")
        found = None
        if h.state == "done":
            try:
                found = self.outcomes(h)
            except Exception:
                found = None
            if found is None:
                self.clear()
                raise MemoryStoreError("unavailable", "this write's group-commit answer is unreadable: its outcome is unknown")
        self.clear()
        return found

    def withdraw(self) -> bool:
        """Without the writer lock (giving up on it): take the request back unless a holder has claimed it."""
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            h = self.header()
            if h is None or h.state in ("queued", "empty", "refused"):
                self.clear()
                return True
            return False
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def clear(self) -> None:
        try:
            self._put(Header("empty", self.seq, 0, 0, 0, 0, ""))
        except OSError:
            pass

    # -- the holder --

    def settle(self, h: Header, tip: str | None, outcomes: list[tuple[Any, BaseException | None]]) -> Header:
        """Write the outcomes: ``pending`` on ``tip`` (``main`` not moved yet), or ``done`` when ``tip`` is ``None``.

        Returns the header written, for :meth:`landed`.
        """
        raw = spoolcodec.encode_answer(outcomes)
        os.pwrite(self.fd, raw, _HEADER + h.req_len)
        state = "pending" if tip else "done"
        written = Header(state, h.seq, h.req_len, h.req_crc, len(raw), zlib.crc32(raw), tip or "")
        self._put(written)
        return written

    def landed(self, settled: Header) -> None:
        """``main`` moved: the ``pending`` outcomes :meth:`settle` wrote are ``done`` (no need to read them back)."""
        self._put(settled._replace(state="done"))

    def mark(self, state: str) -> None:
        h = self.header()
        if h is not None:
            self._put(Header(state, h.seq, h.req_len, h.req_crc, h.out_len, h.out_crc, h.tip if state != "queued" else ""))
            if state == "queued":  # back in the queue (its round did not land): holders must look again
                announce(os.path.dirname(self.path))


_own: dict[tuple[int, str], Slot] = {}
_own_guard = threading.Lock()
_pid = [os.getpid()]  # this process's id, kept current across fork (os.getpid() is a system call per round)


def own_slot(repo_path: str, *, create: bool = True) -> Slot | None:
    """This process's slot in the repository's spool, made the first time it waits; ``None`` if it cannot be made."""
    key = (_pid[0], repo_path)
    with _own_guard:
        found = _own.get(key)
        if found is not None or not create:
            return found
        folder = spool_dir(repo_path)
        name = f"{VERSION}-{os.getpid()}-{process_token()}"
        try:
            make_private_dir(folder)
            live = open_private(os.path.join(folder, name + ".live"), os.O_RDWR | os.O_CREAT)
            fcntl.flock(live, fcntl.LOCK_EX)
            fd = open_private(os.path.join(folder, name + ".slot"), os.O_RDWR | os.O_CREAT | os.O_TRUNC)
            wake_path = os.path.join(folder, name + ".wake")
            with contextlib.suppress(FileExistsError):
                os.mkfifo(wake_path, 0o600)
            # Read and written by us (the lock helper writes when it has the lock), so it never blocks.
            wake = os.open(wake_path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            bell = open_private(_bell_path(folder), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError:
            return None
        slot = _own[key] = Slot(os.path.join(folder, name + ".slot"), fd, live, wake, bell)
        slot.clear()
        return slot


def _forget_inherited() -> None:
    """A forked child drops its parent's slots: holding their flocks would make a dead parent look alive."""
    for slot in _own.values():
        for fd in (slot.fd, slot.live_fd, slot.wake_fd, slot.bell_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
    _own.clear()
    _theirs.clear()
    _seen.clear()
    _left.clear()
    _pid[0] = os.getpid()


os.register_at_fork(after_in_child=_forget_inherited)


@atexit.register
def _remove_own() -> None:
    """A process leaving removes its slots (a killed one's are removed by the next holder that sees it gone)."""
    for (pid, _), slot in list(_own.items()):
        if pid == os.getpid():
            for path in (slot.path, slot.path[: -len(".slot")] + ".live", _wake_path(slot.path)):
                with contextlib.suppress(OSError):
                    os.unlink(path)

_theirs: dict[str, tuple[int, Slot]] = {}  # slot path -> (inode, the slot opened by a holder)
_seen: dict[str, int] = {}  # repo path -> the bell's size when this process last scanned its spool
_left: set[str] = set()  # repo paths whose last scan left a queued request untaken


def _open_theirs(path: str) -> Slot | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        _drop(path)
        return None
    cached = _theirs.get(path)
    if cached is not None and cached[0] == st.st_ino:
        return cached[1]
    _drop(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        live = os.open(path[: -len(".slot")] + ".live", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        live = None
    slot = Slot(path, fd, live)
    _theirs[path] = (st.st_ino, slot)
    return slot


def _drop(path: str) -> None:
    cached = _theirs.pop(path, None)
    if cached is not None:
        for fd in (cached[1].fd, cached[1].live_fd, cached[1].wake_fd):
            if fd is not None:
                os.close(fd)


def _owner_gone(slot: Slot) -> bool:
    if slot.live_fd is None:
        return True
    try:
        fcntl.flock(slot.live_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(slot.live_fd, fcntl.LOCK_UN)
    return True


def _remove(slot: Slot) -> None:
    for path in (slot.path, slot.path[: -len(".slot")] + ".live", _wake_path(slot.path)):
        try:
            os.unlink(path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
    _drop(slot.path)


@dataclass(slots=True)
class Taken:
    """A slot a holder claimed for its round, and the requests it read from it."""

    slot: Slot
    header: Header
    specs: list[Spec]
    outcomes: list[tuple[Any, BaseException | None] | None]


def _slots(repo_path: str, own: Slot | None) -> list[Slot]:
    folder = spool_dir(repo_path)
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    found = []
    prefix = VERSION + "-"
    for name in names:
        if not name.endswith(".slot") or not name.startswith(prefix):
            continue
        path = os.path.join(folder, name)
        if own is not None and path == own.path:
            continue
        slot = _open_theirs(path)
        if slot is not None:
            found.append(slot)
    return found


def take(repo_path: str, own: Slot | None, limit: int) -> list[Taken]:
    """Writer lock held: claim the queued requests of live waiters (at most ``limit``); drop dead waiters' slots.

    Nothing to do, without listing the folder, when the bell has not rung since
    this process's last scan and that scan left nothing queued (see the module's notes).
    """
    size = _bell_size(repo_path)
    if size < 0 or (_seen.get(repo_path) == size and repo_path not in _left):
        return []
    if size > 0:
        # Under the writer lock, before the scan: a byte appended after this is heard next
        # time, and the slot of one appended before is queued already (the scan finds it).
        with contextlib.suppress(OSError):
            os.truncate(_bell_path(spool_dir(repo_path)), 0)
            size = 0
    _seen[repo_path] = size
    _left.discard(repo_path)
    taken: list[Taken] = []
    count = 0
    for slot in _slots(repo_path, own):
        h = slot.header()
        if h is None or h.state not in ("queued", "empty", "done", "refused"):
            continue
        if _owner_gone(slot):
            _remove(slot)  # a dead waiter's request (or answer) is never applied after this
            continue
        if h.state != "queued" or count >= limit:
            if h.state == "queued":
                _left.add(repo_path)  # over the limit: the next round takes it
            continue
        try:
            fcntl.flock(slot.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _left.add(repo_path)  # its waiter is withdrawing it (or not: look again next time)
            continue
        h = slot.header()
        try:
            specs = slot.request(h) if h is not None and h.state == "queued" else None
        except spoolcodec.Malformed:
            # Not a request in this format's shapes: never run it; its waiter is answered unavailable.
            specs = None
            if h is not None:
                slot.mark("refused")
                slot.ring()
        if h is None or specs is None:
            if h is not None and h.state == "queued":
                _left.add(repo_path)  # torn, or no batch writer here: its waiter commits it
            fcntl.flock(slot.fd, fcntl.LOCK_UN)
            continue
        taken.append(Taken(slot, h, specs, [None] * len(specs)))
        count += len(specs)
    return taken


def release(taken: Sequence[Taken]) -> None:
    for t in taken:
        fcntl.flock(t.slot.fd, fcntl.LOCK_UN)


def left_queued(repo_path: str) -> None:
    """Requests this process took were put back unrun: its next look scans the spool whatever the bell says."""
    _left.add(repo_path)


def recover(repo_path: str, on_main: Callable[[Header], bool]) -> None:
    """Writer lock just taken from a holder that died: settle the slots its round left ``pending``.

    ``on_main(header)`` says whether the slot's round tip is reachable from ``main`` (the dead
    holder's half-done ref update has been cleared before this runs).
    """
    own = _own.get((_pid[0], repo_path))
    slots = _slots(repo_path, None)
    if own is not None and own not in slots:
        slots.append(own)
    for slot in slots:
        h = slot.header()
        if h is None or h.state != "pending":
            continue
        fcntl.flock(slot.fd, fcntl.LOCK_EX)  # a withdrawing waiter holds it for microseconds
        try:
            h = slot.header()
            if h is not None and h.state == "pending":
                slot.mark("done" if on_main(h) else "queued")
                slot.ring()
        finally:
            fcntl.flock(slot.fd, fcntl.LOCK_UN)


def queued(repo_path: str) -> int:
    """Writer lock held: how many other processes have a request queued (a cheap look, no claim).

    Zero without listing the folder when the bell is as this process's last scan left it.
    """
    size = _bell_size(repo_path)
    if size < 0 or (_seen.get(repo_path) == size and repo_path not in _left):
        return 0
    count = 0
    for slot in _slots(repo_path, _own.get((_pid[0], repo_path))):
        h = slot.header()
        if h is not None and h.state == "queued":
            count += 1
    return count


def gather(repo_path: str, want: int, seconds: float) -> None:
    """Writer lock held: wait up to ``seconds`` until ``want`` other processes have queued.

    The writers a round answered come back with their next change a moment
    later; taking them in one round rather than one round each saves a pack
    and a ref update per writer. The caller asks only for as many as its last
    round took, so a writer that stopped writing costs one wait, once.
    """
    deadline = time.monotonic() + seconds
    seen = _seen.get(repo_path, -1)
    while time.monotonic() < deadline:
        # Publications since this process's last scan (the bell grows a byte per request
        # queued), read with one stat per poll: the slots themselves are read by take().
        size = _bell_size(repo_path)
        if size < 0 or size - max(seen, 0) >= want or size < seen:
            return
        time.sleep(GATHER_POLL)
