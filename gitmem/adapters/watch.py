"""Watch mounts for ref changes, whoever makes them, and keep their indexes current.

A ref of a mount can move through a store write, another process, a push
(``gitmem serve``, a hook-checked push over a path), plain ``git update-ref``, or
``git gc``/``git pack-refs`` moving loose refs into ``packed-refs``. Each writer
touches different files in different orders (loose ref files, ``packed-refs``,
lock files renamed into place), so a file-system event
is only ever a hint::

    inotify (watchdog) ──► "mount M may have changed" ──► debounce ──► re-read M's refs
                                                                        │ compare with last seen
        callback / iterator ◄── RefChange (old, new, paths, origins) ◄──┘ main moved: index catch-up

- Each mount's ``refs/`` is watched recursively, and the mount folder itself for
  ``packed-refs``; without names the root folder is watched too, so new mounts
  are picked up.
- Events are coalesced for ``debounce`` seconds, then every ref is read and
  compared with the last values seen. A ref missing from that listing is looked
  up on its own before it is reported deleted, so ``pack-refs`` (which writes
  ``packed-refs`` before deleting the loose files) never causes a false deletion.
- As a safety net against an event lost while inotify adds a watch to a new
  folder, every mount is also re-read every ``poll_interval`` seconds.
- When ``main`` moved, the mount's search index catches up on a separate thread
  (:class:`gitmem.index.refresher.Refresher`, the queue ``gitmem serve`` uses
  too), so a slow Whoosh commit never delays events.

Python API: :class:`Watcher` calls a callback for each change;
:func:`watch` is a context manager whose value iterates over changes::

    with watch("memories", ["user"], timeout=30) as changes:
        for change in changes:          # stops after 30 s without a change
            print(change.line())

MCP hook point: the MCP server can hand a callback to :class:`Watcher` and, for
every change of ``refs/heads/main`` of mount ``NAME``, tell its subscribed
sessions that ``memory://NAME/context`` changed.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from gitmem.errors import MemoryStoreError
from gitmem.git.perms import make_private_dir
from gitmem.git.refs import MAIN
from gitmem.git.refwatch import CommitOrigin, movement, read_ref, read_refs
from gitmem.git.repo import GitRepo
from gitmem.index.refresher import Refresher
from gitmem.root import Root

log = logging.getLogger("gitmem.watch")

DEFAULT_DEBOUNCE = 0.05
DEFAULT_POLL = 2.0

Callback = Callable[["RefChange"], None]


@dataclass(frozen=True, slots=True)
class RefChange:
    """One ref of one mount moved: ``created``, ``updated`` or ``deleted``."""

    mount: str
    ref: str
    kind: str
    old: str | None
    new: str | None
    paths: tuple[str, ...]
    commits: tuple[CommitOrigin, ...]
    more_commits: int = 0
    rewritten: bool = False

    @property
    def is_main(self) -> bool:
        """The live memory moved (``refs/heads/main``), not a proposal or another ref."""
        return self.ref == MAIN

    @property
    def branch(self) -> str:
        for prefix in ("refs/heads/", "refs/"):
            if self.ref.startswith(prefix):
                return self.ref[len(prefix) :]
        return self.ref

    def to_json(self) -> dict[str, Any]:
        """The CLI's one shape: ``memory`` names the mount, each commit's who is ``origin{…}`` as in ``log``."""
        out = asdict(self)
        out["memory"] = out.pop("mount")
        out["commits"] = [
            {
                "commit": c.commit,
                "op": c.op,
                "summary": c.summary,
                "origin": {"run_id": c.run, "principal_id": c.principal, "tool_call_id": c.tool_call},
                "author": c.author,
            }
            for c in self.commits
        ]
        out["paths"] = list(self.paths)
        return out

    def line(self) -> str:
        """One human line: mount, ref, old..new, the paths, and who made each new commit."""
        old = self.old[:12] if self.old else "(none)"
        new = self.new[:12] if self.new else "(deleted)"
        parts = [f"{self.mount} {self.branch} {old}..{new}"]
        if self.rewritten:
            parts.append("history rewritten")
        if self.paths:
            shown = ", ".join(self.paths[:10])
            parts.append(shown if len(self.paths) <= 10 else f"{shown} (+{len(self.paths) - 10} more)")
        origins = [_origin_text(c) for c in self.commits[:5]]
        hidden = len(self.commits) - len(origins) + self.more_commits
        if hidden:
            origins.append(f"+{hidden} more commits")
        if origins:
            parts.append("[" + "; ".join(origins) + "]")
        return "  ".join(parts)


def _origin_text(c: CommitOrigin) -> str:
    who = [f"{c.commit[:7]} {c.summary}"]
    if c.principal or c.op == "unknown":
        who.append(f"by {c.principal or c.author}")
    if c.run:
        who.append(f"run {c.run}")
    if c.tool_call:
        who.append(f"tool call {c.tool_call}")
    return " ".join(who)


class _Mount:
    """What the watcher keeps per mount: its repo handle, watches and last seen refs."""

    def __init__(self, name: str, path: str) -> None:
        self.name = name
        self.path = path
        self.git = GitRepo(path)
        self.watches: list[ObservedWatch] = []
        self.refs: dict[str, str] = {}


#: The events that can mean a ref moved, the only ones inotify is asked for: a file renamed into place
#: (git's lock files, ``packed-refs``), written and closed, created or deleted, and folders coming and
#: going (a new mount, a new ref folder). Reads are left out: every write of a store opens its ref files
#: a few times and the watcher's own re-read opens them again, and each such event cost watchdog's
#: thread more than the re-read it never caused (taken as hints they made the watcher read the refs
#: again and again, for ever). A write's in-place modifications end in a close, so those are left out too.
_EVENTS: Final[list[type[FileSystemEvent]]] = [
    FileMovedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    DirCreatedEvent,
    FileDeletedEvent,
    DirDeletedEvent,
]


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.watcher._hint(os.fsdecode(event.src_path), os.fsdecode(event.dest_path or b""))


class Watcher:
    """Reports every ref change of the watched mounts to ``callback``; see the module docstring.

    ``names`` limits the watch to those mounts (each must exist); without names
    every mount under the root is watched, including ones created later. The
    callback runs on the watcher's own thread, one change at a time.
    ``details=False`` reports only which ref moved, from what to what: no paths
    and no commits, whose tree diff and history walk cost more CPU than the
    commit that moved the ref (a server that only tells clients *that* a memory
    moved needs none of it).
    """

    def __init__(
        self,
        root: Root | str | os.PathLike[str],
        names: Sequence[str] | None = None,
        callback: Callback | None = None,
        *,
        debounce: float = DEFAULT_DEBOUNCE,
        poll_interval: float = DEFAULT_POLL,
        index: bool = True,
        details: bool = True,
    ) -> None:
        self.root = root if isinstance(root, Root) else Root(root)
        self.details = details
        self.names = list(dict.fromkeys(names)) if names else None
        self.callback = callback
        self.debounce = debounce
        self.poll_interval = poll_interval
        self._mounts: dict[str, _Mount] = {}
        self._dirty: set[str] = set()
        self._rescan_root = False
        self._cond = threading.Condition()
        self._stopped = False
        self._observer: BaseObserver | None = None
        self._thread: threading.Thread | None = None
        self._indexer = Refresher("gitmem-watch-index") if index else None
        self._handler = _Handler(self)
        self._rounds = 0  # completed re-read rounds, for quiesce()
        self._in_round = False
        if self.names is not None:
            for name in self.names:
                path = self.root.mount_path(name)
                if not (path / "HEAD").is_file():
                    raise MemoryStoreError("unknown_memory", f"no memory named {name!r} under {self.root.path}")

    # -- lifecycle --

    def start(self) -> Watcher:
        observer = Observer()
        self._observer = observer
        if self.names is None:
            make_private_dir(self.root.path, parents=True)  # 0700 like every root gitmem makes
            observer.schedule(self._handler, os.fspath(self.root.path), recursive=False, event_filter=_EVENTS)
        for name in self.names if self.names is not None else self.root.mounts():
            self._add_mount(name)
        observer.start()
        self._thread = threading.Thread(target=self._run, name="gitmem-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._observer is not None:
            # watchdog logs an error when an event races its emitter's shutdown; harmless here.
            quiet = logging.getLogger("watchdog.observers.inotify")
            level = quiet.level
            quiet.setLevel(logging.CRITICAL)
            try:
                self._observer.stop()
                self._observer.join(timeout)
            finally:
                quiet.setLevel(level)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._indexer is not None:
            self._indexer.close(timeout)

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def mounts(self) -> list[str]:
        with self._cond:
            return sorted(self._mounts)

    def quiesce(self, timeout: float = 30.0) -> bool:
        """Wait until pending hints are handled and the indexes caught up; ``False`` on timeout.

        For tests and scripts that change a mount and then want to see every
        resulting change delivered (and the index current) before going on.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            # A round already under way may have taken its hints before this call.
            target = self._rounds + (2 if self._in_round else 1)
            self._dirty.update(self._mounts)  # force one full round after this call
            self._cond.notify_all()
            while self._rounds < target:
                left = deadline - time.monotonic()
                if left <= 0 or self._stopped:
                    return False
                self._cond.wait(left)
        if self._indexer is not None:
            return self._indexer.idle(max(0.0, deadline - time.monotonic()))
        return True

    # -- mounts --

    def _add_mount(self, name: str) -> None:
        path = os.fspath(self.root.mount_path(name))
        mount = _Mount(name, path)
        observer = self._observer
        assert observer is not None
        try:
            os.makedirs(os.path.join(path, "refs"), exist_ok=True)
            refs = os.path.join(path, "refs")
            mount.watches.append(observer.schedule(self._handler, refs, recursive=True, event_filter=_EVENTS))
            mount.watches.append(observer.schedule(self._handler, path, recursive=False, event_filter=_EVENTS))
            mount.refs = read_refs(mount.git)
        except (OSError, MemoryStoreError) as exc:
            log.warning("cannot watch %s: %s", path, exc)
            for watch in mount.watches:
                observer.unschedule(watch)
            return
        with self._cond:
            self._mounts[name] = mount

    def _drop_mount(self, mount: _Mount) -> None:
        observer = self._observer
        if observer is not None:
            for watch in mount.watches:
                try:
                    observer.unschedule(watch)
                except KeyError:
                    pass
        with self._cond:
            self._mounts.pop(mount.name, None)

    # -- events --

    def _hint(self, src: str, dest: str) -> None:
        """Called on watchdog's thread: note which mount may have changed, nothing more."""
        root = os.fspath(self.root.path)
        with self._cond:
            for path in (src, dest):
                if not path:
                    continue
                rel = os.path.relpath(path, root)
                if rel.startswith(".."):
                    continue
                top, _, rest = rel.partition(os.sep)
                if not rest:
                    if self.names is None:
                        self._rescan_root = True
                    continue
                name = top[:-4] if top.endswith(".git") else None
                if name is None or name not in self._mounts:
                    continue
                if rest.startswith("refs") or rest.startswith("packed-refs"):
                    self._dirty.add(name)
            if self._dirty or self._rescan_root:
                self._cond.notify_all()

    def _run(self) -> None:
        next_poll = time.monotonic() + self.poll_interval
        while True:
            with self._cond:
                while not self._dirty and not self._rescan_root and not self._stopped:
                    left = next_poll - time.monotonic()
                    if left <= 0:
                        self._dirty.update(self._mounts)
                        break
                    self._cond.wait(left)
                if self._stopped:
                    return
            time.sleep(self.debounce)  # let a burst of writes settle into one re-read
            with self._cond:
                dirty, self._dirty = self._dirty, set()
                rescan, self._rescan_root = self._rescan_root, False
                self._in_round = True
                mounts = [self._mounts[n] for n in sorted(dirty) if n in self._mounts]
            try:
                if rescan:
                    self._rescan()
                for mount in mounts:
                    self._reread(mount)
            except Exception:  # never let one bad read end the watch
                log.warning("watching failed for a moment; retrying on the next event", exc_info=True)
            with self._cond:
                self._rounds += 1
                self._in_round = False
                self._cond.notify_all()
            next_poll = time.monotonic() + self.poll_interval

    def _rescan(self) -> None:
        present = set(self.root.mounts())
        with self._cond:
            known = dict(self._mounts)
        for name in sorted(present - set(known)):
            self._add_mount(name)
            with self._cond:
                mount = self._mounts.get(name)
            if mount is not None:
                for ref, value in sorted(mount.refs.items()):
                    self._emit(mount, ref, None, value)
        for name in sorted(set(known) - present):
            mount = known[name]
            self._drop_mount(mount)
            for ref, value in sorted(mount.refs.items()):
                self._emit(mount, ref, value, None)

    def _reread(self, mount: _Mount) -> None:
        if not os.path.isdir(os.path.join(mount.path, "objects")):
            if self.names is None:
                with self._cond:
                    self._rescan_root = True
            return
        try:
            now = read_refs(mount.git)
        except MemoryStoreError:
            return
        before = mount.refs
        for ref in before.keys() - now.keys():
            confirmed = read_ref(mount.git, ref)  # packed meanwhile, not deleted?
            if confirmed is not None:
                now[ref] = confirmed
        mount.refs = now
        main_moved = False
        for ref in sorted(before.keys() | now.keys()):
            old, new = before.get(ref), now.get(ref)
            if old != new:
                main_moved |= ref == MAIN
                self._emit(mount, ref, old, new)
        if main_moved and self._indexer is not None:
            self._indexer.request(mount.path)

    def _emit(self, mount: _Mount, ref: str, old: str | None, new: str | None) -> None:
        base = mount.refs.get(MAIN) if ref != MAIN and old is None else None
        moved = None
        if self.details:
            try:
                moved = movement(mount.git, old, new, base=base)
            except MemoryStoreError:
                pass
        kind = "created" if old is None else "deleted" if new is None else "updated"
        change = RefChange(
            mount.name,
            ref,
            kind,
            old,
            new,
            moved.paths if moved else (),
            moved.commits if moved else (),
            moved.more_commits if moved else 0,
            moved.rewritten if moved else False,
        )
        if self.callback is not None:
            try:
                self.callback(change)
            except Exception:
                log.warning("a watch callback failed on %s", change.line(), exc_info=True)


class Watch:
    """The value of :func:`watch`: iterate for changes, or :meth:`get` one with a timeout."""

    def __init__(self, watcher: Watcher, changes: queue.Queue[RefChange], timeout: float | None) -> None:
        self.watcher = watcher
        self._changes = changes
        self.timeout = timeout

    def get(self, timeout: float | None = None) -> RefChange | None:
        """The next change, or ``None`` when none came within ``timeout`` seconds."""
        try:
            return self._changes.get(timeout=timeout)
        except queue.Empty:
            return None

    def __iter__(self) -> Iterator[RefChange]:
        """Changes as they come; ends after ``timeout`` seconds without one (never, if ``None``)."""
        while True:
            change = self.get(self.timeout)
            if change is None:
                return
            yield change

    def quiesce(self, timeout: float = 30.0) -> bool:
        return self.watcher.quiesce(timeout)


@contextmanager
def watch(
    root: Root | str | os.PathLike[str] | Path,
    names: Sequence[str] | None = None,
    *,
    timeout: float | None = None,
    callback: Callback | None = None,
    debounce: float = DEFAULT_DEBOUNCE,
    poll_interval: float = DEFAULT_POLL,
    index: bool = True,
) -> Iterator[Watch]:
    """A context manager watching ``names`` (or every mount) under ``root``; see the module docstring.

    Changes are queued for iteration (at most 100,000; older ones are
    dropped first when nobody reads) and also passed to ``callback`` if given.
    """
    changes: queue.Queue[RefChange] = queue.Queue(maxsize=100_000)

    def deliver(change: RefChange) -> None:
        while True:
            try:
                changes.put_nowait(change)
                break
            except queue.Full:
                with suppress(queue.Empty):
                    changes.get_nowait()
        if callback is not None:
            callback(change)

    watcher = Watcher(root, names, deliver, debounce=debounce, poll_interval=poll_interval, index=index).start()
    try:
        yield Watch(watcher, changes, timeout)
    finally:
        watcher.stop()
