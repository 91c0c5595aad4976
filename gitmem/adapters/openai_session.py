"""``GitMemSession``: the OpenAI Agents SDK's ``Session`` on a gitmem session mount (the ``openai-agents`` extra).

``Runner.run(agent, text, session=GitMemSession.open("conv-42", "memories"))``
keeps the conversation in git instead of SQLite: each item one JSON file, each
``add_items`` batch one commit, so a person can read, review, restore or erase
a conversation with gitmem's history commands. Layout::

    conversations/<session id>/<sequence>.json   one item each (12 digits, in order)
    conversations/<session id>/head.json         {"last": <newest sequence>}

The session id is encoded like a record namespace (one safe path segment,
one-to-one). Every change moves ``head.json`` by compare-and-swap in the same
commit: ``add_items`` creates its files (expected absent) after the head it read,
``pop_item`` deletes the newest item expecting both its version and the head's,
and ``clear_session`` deletes everything at the versions it read. Two writers
that read the same head cannot both commit; the loser reads again and retries, so
concurrent adds never overwrite each other and two pops never return one item.

Compaction: ``OpenAIResponsesCompactionSession(id, GitMemSession(...))`` (and either
order of it and ``EncryptedSession`` around it) replaces the compacted part of the
history in ONE commit, as it does for the SDK's SQLite session: the session offers
the SDK's ``_get_compaction_snapshot`` (the newest items and an atomic "replace the
suffix if it is still the newest" that also drops an expired prefix the encrypted
wrapper can authenticate) and ``_atomic_replace_items`` (a manual compaction's whole
history swap). Without them the SDK fell back to a clear then an add, which skipped
automatic compaction and, under the encrypted wrapper, deleted items written under
another key. Both hooks are the SDK's private names; the ``openai-agents`` extra pins
the release range they are tested on (tests/adapters/frameworks copies its tests).
A subclass that overrides how items are read or written gets neither (the SDK would
bypass its transform), exactly as a subclass of ``SQLiteSession`` does.

Differences from ``SQLiteSession`` (tests/adapters/frameworks/DIFFERENCES.md): an
item is held to the mount's file rules (at most ``max_file_bytes``, 64 KiB by
default, and no credential-looking text, because git keeps every version), and a
refused write raises :class:`~gitmem.errors.MemoryStoreError` with nothing written.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

# _CompactionSnapshot and _await_mutation are the SDK's private compaction protocol (see
# "Compaction" in the module docstring): pyproject's openai-agents extra pins the releases it is tested on.
from agents.memory.session import SessionABC, _await_mutation, _CompactionSnapshot
from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit

from gitmem import aio
from gitmem.adapters.langgraph_items import RETRIES, try_commit
from gitmem.catchup import files_under
from gitmem.errors import MemoryStoreError, if_found
from gitmem.localfile import json_nesting_within, parse_json
from gitmem.model import Edit, FileText, Origin
from gitmem.records.rules import encode_namespace
from gitmem.store import FileStore

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

    from gitmem.aio import AsyncFace

FOLDER: Final = "conversations"
HEAD: Final = "head.json"
_ITEM = re.compile(r"(?P<seq>[0-9]{12})\.json")
#: The newest sequence an item name can hold (12 digits). A head beyond it is not
#: believed: items written past it would get names the reader never lists.
MAX_SEQUENCE: Final = 10**12 - 1
#: The methods a subclass overrides to transform items; one that does gets no compaction hooks.
_ITEM_HOOKS: Final = (
    "get_items", "add_items", "pop_item", "clear_session",
    "get_items_sync", "add_items_sync", "pop_item_sync", "clear_session_sync",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Conversation:
    """One commit's view of a conversation: its items in order and its head."""

    items: list[FileText]
    head: FileText | None
    last: int


def conversation_folder(session_id: str) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise MemoryStoreError("invalid_path", "a session id is a non-empty string")
    try:
        return f"{FOLDER}/{encode_namespace(session_id)}"
    except MemoryStoreError as error:
        raise MemoryStoreError("invalid_path", f"session id {session_id!r}: {error.message}") from None


def _dump(value: object) -> str:
    """The file of an item; ``invalid_file`` for what a read would not take back (not JSON, nested too deep)."""
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError, RecursionError) as error:
        raise MemoryStoreError("invalid_file", f"a session item must be JSON: {error}") from None
    if not json_nesting_within(text):
        raise MemoryStoreError("invalid_file", "a session item nests deeper than gitmem reads back; flatten it")
    return text


class GitMemSession(SessionABC):
    """A conversation's items in a gitmem store; see the module docstring for the layout and guarantees."""

    def __init__(
        self,
        session_id: str,
        store: FileStore | AsyncFace[Any],
        *,
        origin: Origin | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.folder = conversation_folder(session_id)
        self.store = aio.seam_of(store)
        self.origin = origin or Origin(run_id=session_id, principal_id="openai-agents")
        self.session_settings = (
            coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        )

    @classmethod
    def open(
        cls,
        session_id: str,
        root: str | os.PathLike[str],
        name: str = "session",
        *,
        create: bool = True,
        **options: Any,
    ) -> GitMemSession:
        """The session ``session_id`` in mount ``name`` (kind ``session``) of the gitmem root folder ``root``."""
        from gitmem.root import Root

        return cls(session_id, Root(root).mount(name, create=create, kind="session").sync, **options)

    def close(self) -> None:
        """Nothing to release: every call opens nothing it keeps (the store's handles are the mount's)."""

    # -- the Session protocol (async: each call runs the sync one in a worker thread) --------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return await aio.call(self.get_items_sync, limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await aio.call(self.add_items_sync, list(items))

    async def pop_item(self) -> TResponseInputItem | None:
        return await aio.call(self.pop_item_sync)

    async def clear_session(self) -> None:
        await aio.call(self.clear_session_sync)

    # -- the same calls, synchronous ---------------------------------------------------------

    def get_items_sync(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The items oldest first; with ``limit`` (or the settings' limit) the newest ``limit`` of them."""
        wanted = resolve_session_limit(limit, self.session_settings)
        items = [item for item in map(_decode, self._read().items) if item is not None]
        if wanted is None or wanted < 0:
            return items
        return items[-wanted:] if wanted > 0 else []

    def add_items_sync(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in ONE commit (nothing for an empty list); all or none land."""
        if not items:
            return
        texts = [_dump(item) for item in items]
        for attempt in range(RETRIES):
            now = self._read_head() if attempt == 0 else self._read()  # after a loss: the whole folder
            if now.last + len(texts) > MAX_SEQUENCE:
                if attempt == 0:
                    continue  # a head edited by hand: the items listed say where the next goes
                raise MemoryStoreError(
                    "memory_full", f"session {self.session_id!r} has no sequence numbers left after {now.last}"
                )
            edits = [Edit(self._path(now.last + 1 + i), text, None) for i, text in enumerate(texts)]
            edits.append(self._head_edit(now, now.last + len(texts)))
            if try_commit(self.store, edits, "session-add", self.origin) is not None:
                return
        raise MemoryStoreError("version_mismatch", f"session {self.session_id!r} kept changing under this add")

    def pop_item_sync(self) -> TResponseInputItem | None:
        """Remove and return the newest item (``None`` when empty), guarded by compare-and-swap."""
        for attempt in range(RETRIES):
            now = self._read_newest() if attempt == 0 else self._read()
            if not now.items:
                return None
            newest = now.items[-1]
            before = _sequence(now.items[-2].path) if len(now.items) > 1 else 0
            edits = [Edit(newest.path, None, newest.version), self._head_edit(now, before)]
            if try_commit(self.store, edits, "session-pop", self.origin) is None:
                continue
            item: TResponseInputItem | None = _decode(newest)
            if item is not None:
                return item
            # a file that is not an item (edited by hand) was removed; the newest real item is next
        raise MemoryStoreError("version_mismatch", f"session {self.session_id!r} kept changing under this pop")

    def clear_session_sync(self) -> None:
        """Delete every item and the head in one commit (history keeps them; ``gitmem forget`` erases)."""
        for _ in range(RETRIES):
            now = self._read()
            files = [*now.items, *([now.head] if now.head else [])]
            if not files:
                return
            edits = [Edit(f.path, None, f.version) for f in files]
            if try_commit(self.store, edits, "session-clear", self.origin) is not None:
                return
        raise MemoryStoreError("version_mismatch", f"session {self.session_id!r} kept changing under this clear")

    # -- the SDK's compaction hooks (private SDK protocol: see the module docstring) ----------

    def _owns_item_hooks(self) -> bool:
        """True unless a subclass changes how items are read or written (the hooks would bypass it)."""
        cls = type(self)
        return all(getattr(cls, name) is getattr(GitMemSession, name) for name in _ITEM_HOOKS)

    async def _get_compaction_snapshot(
        self, limit: int, *, prune_prefix: Callable[[Any], bool] | None = None
    ) -> _CompactionSnapshot | None:
        """The newest ``limit`` items and a replacement of their suffix that lands only if they are still the newest.

        ``None`` (the SDK then needs the whole history) for a subclass that transforms
        items, or when a file in the window is not an item (as SQLite's hook does for a
        corrupt row).
        """
        if not self._owns_item_hooks():
            return None
        now = await aio.call(self._read)
        window = now.items[-limit:] if limit > 0 else []
        items = [_decode(file) for file in window]
        if any(item is None for item in items):
            return None
        complete = len(now.items) <= len(window)

        async def replace_suffix(start: int, output: list[TResponseInputItem]) -> bool:
            expected = window[start:]
            if not expected:
                return False
            texts = [_dump(item) for item in output]  # refused before any write
            return await _await_mutation(aio.call(self._replace_tail_sync, expected, texts, prune_prefix))

        return _CompactionSnapshot(items, complete, replace_suffix)

    async def _atomic_replace_items(self, items: list[TResponseInputItem]) -> bool:
        """Replace the whole history in ONE commit (a manual compaction); ``False`` for a transforming subclass."""
        if not self._owns_item_hooks():
            return False
        texts = [_dump(item) for item in items]
        await aio.call(self._replace_all_sync, texts)
        return True

    def _replace_tail_sync(
        self, expected: list[FileText], texts: list[str], prune_prefix: Callable[[Any], bool] | None
    ) -> bool:
        """Delete ``expected`` (still the newest files, same versions) and append ``texts``, in one commit.

        ``False``, with nothing written, when the newest items are no longer ``expected``
        (a write landed since the snapshot). With ``prune_prefix``, the oldest items it
        accepts, up to the first it does not, go in the same commit.
        """
        want = [(f.path, f.version) for f in expected]
        for _ in range(RETRIES):
            now = self._read()
            tail = now.items[len(now.items) - len(expected) :] if len(now.items) >= len(expected) else []
            if [(f.path, f.version) for f in tail] != want:
                return False
            kept = now.items[: len(now.items) - len(expected)]
            pruned: list[FileText] = []
            if prune_prefix is not None:
                for file in kept:
                    item = _decode(file)
                    if item is None or not prune_prefix(item):
                        break
                    pruned.append(file)
            edits = self._replacement(now, [*pruned, *tail], texts)
            if try_commit(self.store, edits, "session-compact", self.origin) is not None:
                return True
        raise MemoryStoreError("version_mismatch", f"session {self.session_id!r} kept changing under this compaction")

    def _replace_all_sync(self, texts: list[str]) -> None:
        for _ in range(RETRIES):
            now = self._read()
            edits = self._replacement(now, now.items, texts)
            if try_commit(self.store, edits, "session-compact", self.origin) is not None:
                return
        raise MemoryStoreError("version_mismatch", f"session {self.session_id!r} kept changing under this compaction")

    def _replacement(self, now: _Conversation, removed: list[FileText], texts: list[str]) -> list[Edit]:
        """The edits that delete ``removed`` and append ``texts`` after the newest item, moving the head."""
        last = now.last
        if last + len(texts) > MAX_SEQUENCE:
            raise MemoryStoreError("memory_full", f"session {self.session_id!r} has no sequence numbers left")
        gone = {f.path for f in removed}
        survivors = [f for f in now.items if f.path not in gone]
        newest = last + len(texts) if texts else (_sequence(survivors[-1].path) if survivors else 0)
        edits = [Edit(f.path, None, f.version) for f in removed]
        edits += [Edit(self._path(last + 1 + i), text, None) for i, text in enumerate(texts)]
        edits.append(self._head_edit(now, newest))
        return edits

    # -- one snapshot of the folder ------------------------------------------------------------

    def _path(self, sequence: int) -> str:
        return f"{self.folder}/{sequence:012d}.json"

    def _head_edit(self, now: _Conversation, last: int) -> Edit:
        return Edit(f"{self.folder}/{HEAD}", _dump({"last": last}), now.head.version if now.head else None)

    def _read_head(self) -> _Conversation:
        """What an add needs: the head alone (no items), or the whole folder when there is no head.

        The head is the newest sequence every writer moved by compare-and-swap; files
        beyond it (made by hand) make the add's expected-absent creation fail, and the
        retry then reads the whole folder.
        """
        head = if_found(self.store.read, f"{self.folder}/{HEAD}")
        if head is None:
            return self._read()
        last = _head_last(head)
        if last is None:
            return self._read()  # a head that is not one: the listed items decide
        return _Conversation([], head, last)

    def _read_newest(self) -> _Conversation:
        """What a pop needs: the head and the two newest items, read by path; the folder when they are not there."""
        now = self._read_head()
        if now.head is None or now.last < 1:
            return now if now.head is None else self._read()
        try:
            newest = self.store.read(self._path(now.last))
            before = self.store.read(self._path(now.last - 1)) if now.last > 1 else None
        except MemoryStoreError as error:
            if error.code != "not_found":
                raise
            return self._read()  # a gap (a file removed by hand): find the newest by listing
        return _Conversation([*([before] if before else []), newest], now.head, now.last)

    def _read(self) -> _Conversation:
        """Items and head from ONE commit (the git store reads the folder of one tree)."""
        prefix = self.folder + "/"
        files = files_under(self.store, prefix)
        items = sorted((f for f in files if _ITEM.fullmatch(f.path[len(prefix) :])), key=lambda f: f.path)
        head = next((f for f in files if f.path == prefix + HEAD), None)
        # What the reader lists bounds the head: a head beyond the newest item (edited by hand) is not
        # believed, so no write lands under a name no read lists.
        newest = _sequence(items[-1].path) if items else 0
        return _Conversation(items, head, newest)


def _sequence(path: str) -> int:
    return int(path.rsplit("/", 1)[1][:12])


def _head_last(head: FileText) -> int | None:
    """The newest sequence ``head.json`` names: an int from 0 to :data:`MAX_SEQUENCE`; ``None`` when it is not one.

    The head is anyone's who can push to the memory; a file that is not JSON, nests
    too deep, or names no usable ``last`` is not believed, and the caller lists the items.
    """
    try:
        record = parse_json(head.text, limit=1024, what=head.path)
    except MemoryStoreError:
        return None
    value = record.get("last", 0) if isinstance(record, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEQUENCE:
        return None
    return value


def _decode(file: FileText) -> Any:
    """The item a file holds; ``None`` for one that is not JSON nested at most ``JSON_DEPTH``.

    Such a file is skipped, as SQLiteSession skips bad rows.
    """
    try:
        return parse_json(file.text, what=file.path)
    except MemoryStoreError:
        return None
