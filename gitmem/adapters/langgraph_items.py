"""LangGraph store items as files: the layout, the item file, filters, the catalogue and the TTL sweep.

Nothing here imports langgraph, so ``gitmem sweep`` (the command that deletes
expired items) runs without the ``langgraph`` extra; :mod:`.langgraph_store`
puts the ``BaseStore`` face on top.

Why a file mount and not record memory: a LangGraph item is a caller-chosen
*key* holding a JSON *object* inside a tuple namespace, written last-write-wins.
Record memory's model is the opposite on each point (ids it generates, plain
text, one namespace string), so items would have to be smuggled into record
texts. A file per item keeps each one reviewable as itself::

    <label 1>/<label 2>/.../<fan-out>/<key>.json

Each label and the key are encoded with record memory's namespace rule (lower
case letters, digits, ``-`` and ``_`` stay, every other UTF-8 byte becomes
``.XX``), so a label is always one safe path segment and the encoding is
one-to-one. The fan-out is two hex digits of the key's SHA-1 (a commit then
rewrites a folder of ~1/256 of a namespace, not all of it). The namespace of a
file is every segment but the last two: a label that happens to look like a
fan-out (``"3f"``) cannot be mistaken for one, because depth decides.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from gitmem.catchup import CatchUp
from gitmem.errors import LOST_RACE, MemoryStoreError
from gitmem.localfile import JSON_DEPTH, parse_json
from gitmem.model import Edit, FileText, Origin
from gitmem.recall.index import RecallDoc, RecallIndex
from gitmem.recall.semantic import SemanticBranch
from gitmem.records.rules import decode_namespace, encode_namespace
from gitmem.store import FileStore

SUFFIX: Final = ".json"
#: Written in every item file, so a later layout can tell its files from these.
FORMAT: Final = "langgraph-item/1"

Namespace = tuple[str, ...]


# -- paths ------------------------------------------------------------------------------


def _segment(text: object, what: str) -> str:
    if not isinstance(text, str) or not text:
        raise MemoryStoreError("invalid_path", f"an item {what} is a non-empty string, not {text!r}")
    try:
        return encode_namespace(text)
    except MemoryStoreError as error:
        raise MemoryStoreError("invalid_path", f"item {what} {text!r}: {error.message}") from None


def fanout(key: str) -> str:
    return hashlib.sha1(key.encode("utf-8"), usedforsecurity=False).hexdigest()[:2]


def namespace_folder(namespace: Sequence[str]) -> str:
    """The folder of a namespace (prefix): ``""`` for the empty prefix."""
    return "/".join(_segment(label, "namespace label") for label in namespace)


def item_path(namespace: Sequence[str], key: str) -> str:
    if not namespace:
        raise MemoryStoreError("invalid_path", "an item's namespace cannot be empty")
    segment = _segment(key, "key")
    return f"{namespace_folder(namespace)}/{fanout(key)}/{segment}{SUFFIX}"


def parse_path(path: str) -> tuple[Namespace, str] | None:
    """The namespace and key a path holds, or ``None`` when it is not an item file of this layout."""
    parts = path.split("/")
    if len(parts) < 3 or not parts[-1].endswith(SUFFIX):
        return None
    key = decode_namespace(parts[-1][: -len(SUFFIX)])
    if key is None or fanout(key) != parts[-2]:
        return None
    labels = [decode_namespace(p) for p in parts[:-2]]
    if any(label is None for label in labels):
        return None
    return tuple(label for label in labels if label is not None), key


# -- the item file ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredItem:
    """An item as its file holds it, with the version it was read at (``""`` before it is written)."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float | None = None
    expires_at: datetime | None = None
    index: bool | tuple[str, ...] | None = None  # False: not searchable by query; fields: what to index
    path: str = ""
    version: str = ""

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _parse_time(value: object, what: str) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"{what} is not a time")
    from gitmem.recall.values import utc_time

    try:
        return utc_time(datetime.fromisoformat(value))
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


#: How deep a value may nest: its file wraps it in one more object, and files are read at most JSON_DEPTH deep.
VALUE_DEPTH: Final = JSON_DEPTH - 1


def check_value(value: object) -> dict[str, Any]:
    """An item value is a JSON object (string keys, finite numbers, nested at most :data:`VALUE_DEPTH`).

    Anything else is ``invalid_file``: what a write accepts, every read of its file takes back.
    """
    if not isinstance(value, Mapping):
        raise MemoryStoreError(
            "invalid_file", f"an item value is a mapping (a JSON object), not {type(value).__name__}"
        )
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as error:
        raise MemoryStoreError("invalid_file", f"an item value must be JSON: {error}") from None
    decoded: dict[str, Any] = parse_json(text, depth=VALUE_DEPTH, what="an item value")
    return decoded


#: The largest TTL in minutes (about 1,900 years): any larger one would overflow a date.
MAX_TTL_MINUTES: Final = 1e9


def check_ttl(ttl_minutes: object) -> float | None:
    """A TTL is ``None`` or a finite number of minutes of at most :data:`MAX_TTL_MINUTES`; else ``invalid_file``."""
    if ttl_minutes is None:
        return None
    if (
        not isinstance(ttl_minutes, int | float)
        or isinstance(ttl_minutes, bool)
        or not abs(ttl_minutes) <= MAX_TTL_MINUTES  # exactly: NaN fails; isfinite(10**400) raises
    ):
        shown = ttl_minutes if not isinstance(ttl_minutes, int) or abs(ttl_minutes) < 10**18 else "a larger integer"
        raise MemoryStoreError(
            "invalid_file", f"a TTL is a number of minutes up to {MAX_TTL_MINUTES:.0e}, not {shown!r}"
        )
    return float(ttl_minutes)


def expiry(now: datetime, ttl_minutes: float | None) -> datetime | None:
    ttl = check_ttl(ttl_minutes)
    if ttl is None:
        return None
    try:
        return now + timedelta(minutes=ttl)
    except OverflowError:
        raise MemoryStoreError("invalid_file", f"a TTL of {ttl_minutes!r} minutes runs past the last date") from None


def render(item: StoredItem) -> str:
    """The file text: canonical JSON, sorted keys, one per line, so ``git diff`` shows what changed."""
    record: dict[str, Any] = {
        "format": FORMAT,
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": _time(item.created_at),
        "updated_at": _time(item.updated_at),
    }
    if item.ttl_minutes is not None:
        record["ttl_minutes"] = item.ttl_minutes
        record["expires_at"] = _time(item.expires_at) if item.expires_at else None
    if item.index is not None:
        record["index"] = list(item.index) if isinstance(item.index, tuple) else item.index
    return json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def parse(file: FileText) -> StoredItem:
    """Read an item file back; ``ValueError`` when it is not one (a hand edit gone wrong, another file).

    The file is anyone's who can push to the memory, so every field's type is
    checked here (``namespace`` a list of strings, ``key`` a string, ``index``
    a boolean or a list of strings, times ISO strings, the TTL a finite
    number) and the JSON is parsed by the one bounded parser: whatever the file
    holds, the catalogue gets this one exception type and skips the file.
    """
    where = parse_path(file.path)
    if where is None:
        raise ValueError(f"{file.path} is not an item path")
    try:
        record = parse_json(file.text, what=file.path)
    except MemoryStoreError as error:
        raise ValueError(error.message) from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(f"{file.path}: not a {FORMAT} file")
    namespace, key = where
    labels = record.get("namespace")
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise ValueError(f"{file.path}: its namespace is not a list of strings")
    if tuple(labels) != namespace or record.get("key") != key:
        raise ValueError(f"{file.path}: its namespace or key does not match its path")
    value = record.get("value")
    if not isinstance(value, dict):
        raise ValueError(f"{file.path}: its value is not an object")
    try:
        ttl = check_ttl(record.get("ttl_minutes"))
    except MemoryStoreError as error:
        raise ValueError(f"{file.path}: {error.message}") from None
    expires = record.get("expires_at")
    index = record.get("index")
    if index is not None and not isinstance(index, bool):
        if not isinstance(index, list) or not all(isinstance(field, str) for field in index):
            raise ValueError(f"{file.path}: its index is not true, false or a list of field names")
    try:
        created = _parse_time(record.get("created_at"), "created_at")
        updated = _parse_time(record.get("updated_at"), "updated_at")
        expires_at = _parse_time(expires, "expires_at") if expires is not None else None
    except (ValueError, OverflowError) as error:
        raise ValueError(f"{file.path}: {error}") from None
    return StoredItem(
        namespace,
        key,
        value,
        created,
        updated,
        ttl,
        expires_at,
        tuple(index) if isinstance(index, list) else index,
        file.path,
        file.version,
    )


# -- filters and namespace conditions ------------------------------------------------------

_OPERATORS: Final = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def _ordered(value: object, bound: object, test: Callable[[float, float], bool]) -> bool:
    try:
        return test(float(value), float(bound))  # type: ignore[arg-type]
    except OverflowError:  # an int no float holds (JSON's 10**400): compared exactly, as Python compares numbers
        pair = (value, bound)
        return all(isinstance(x, int | float) and not isinstance(x, bool) for x in pair) and test(*pair)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False  # a missing field or a non-number never satisfies an order comparison


def _holds(value: object, wanted: object) -> bool:
    """Whether an item's ``value`` matches one filter entry (JSONB-like: objects match key by key)."""
    if isinstance(wanted, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(value, op, bound) for op, bound in wanted.items())
        return isinstance(value, dict) and all(_holds(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_holds(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _operator(value: object, op: object, bound: object) -> bool:
    if op == "$eq":
        return bool(value == bound)
    if op == "$ne":
        return bool(value != bound)
    if op == "$gt":
        return _ordered(value, bound, lambda a, b: a > b)
    if op == "$gte":
        return _ordered(value, bound, lambda a, b: a >= b)
    if op == "$lt":
        return _ordered(value, bound, lambda a, b: a < b)
    if op == "$lte":
        return _ordered(value, bound, lambda a, b: a <= b)
    raise MemoryStoreError("invalid_query", f"unknown filter operator {op!r}; use one of {', '.join(_OPERATORS)}")


def check_filter(wanted: object) -> dict[str, Any]:
    """The filter, checked before anything is read: an unknown operator fails even when no item exists."""
    if wanted is None:
        return {}
    if not isinstance(wanted, Mapping):
        raise MemoryStoreError("invalid_query", f"a filter is a mapping, not {type(wanted).__name__}")

    def walk(node: object) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if isinstance(k, str) and k.startswith("$") and k not in _OPERATORS:
                    raise MemoryStoreError(
                        "invalid_query", f"unknown filter operator {k!r}; use one of {', '.join(_OPERATORS)}"
                    )
                walk(v)

    walk(wanted)
    return dict(wanted)


def lookup(value: Mapping[str, Any], key: str) -> object:
    """A filter key's field: the key itself when the value has it, else a dotted path (``"user.level"``)."""
    if key in value or "." not in key:
        return value.get(key)
    node: object = value
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def matches(value: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(_holds(lookup(value, k), v) for k, v in wanted.items())


def namespace_matches(namespace: Namespace, match_type: str, pattern: Sequence[str]) -> bool:
    """LangGraph's match condition: ``pattern`` (``"*"`` matches any one label) at the start or end."""
    if len(namespace) < len(pattern):
        return False
    labels = namespace[: len(pattern)] if match_type == "prefix" else namespace[len(namespace) - len(pattern) :]
    if match_type not in ("prefix", "suffix"):
        raise MemoryStoreError("invalid_query", f"a namespace condition is 'prefix' or 'suffix', not {match_type!r}")
    return all(p == "*" or p == label for label, p in zip(labels, pattern, strict=True))


def copy_value(value: Any) -> Any:
    """A copy of a JSON value (objects, lists and scalars), for a caller free to change what it got.

    What ``copy.deepcopy`` does for JSON, at a fraction of its cost (no memo, no
    dispatch table): items read back are always JSON.
    """
    if type(value) is dict:
        return {k: copy_value(v) for k, v in value.items()}
    if type(value) is list:
        return [copy_value(v) for v in value]
    return value


def string_leaves(value: object) -> Iterable[str]:
    """Every string inside a value, depth first: what a query is matched against by default."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from string_leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from string_leaves(v)


def default_text(item: StoredItem) -> str | None:
    return "\n".join(string_leaves(item.value)) or None


# -- the catalogue -------------------------------------------------------------------------


class ItemCatalogue(CatchUp):
    """Every item of a store, parsed, and a recall index of their texts, caught up as :mod:`gitmem.catchup` does it.

    ``text_of`` says what of an item a query is matched against (``None``: not
    searchable by query); a file that does not parse is left out and listed in
    :attr:`skipped`.
    """

    store: FileStore  # a sweep writes through it

    def __init__(
        self,
        store: FileStore,
        *,
        text_of: Callable[[StoredItem], str | None] = default_text,
        semantic: SemanticBranch | None = None,
    ) -> None:
        super().__init__(store)
        self.text_of = text_of
        self.index = RecallIndex(semantic)
        self.items: dict[str, StoredItem] = {}
        self._by_namespace: dict[Namespace, dict[str, StoredItem]] = {}

    def covers(self, path: str) -> bool:
        return parse_path(path) is not None

    def _forget(self) -> None:
        self.items.clear()
        self._by_namespace.clear()
        self.index.clear()

    def _fill(self, files: Iterable[FileText]) -> None:
        super()._fill(files)
        self.index.rebuilt()  # the semantic side keeps no vector of a text the rebuild did not put back

    def _put(self, path: str, file: FileText | None) -> None:
        held = self.items.get(path)
        if file is None:
            self._drop(path)
        elif held is None or held.version != file.version:  # else the very blob is held (noted when put)
            self._take(file)

    def item(self, file: FileText) -> StoredItem:
        """The item ``file`` holds: the one parsed before when the catalogue holds that very blob, else parsed now.

        Looked up by the blob id a read just gave, never by path alone, so what it
        returns is what the file holds: a file changed since the catalogue read it
        has another id and is parsed. ``ValueError`` as :func:`parse`.
        """
        held = self.items.get(file.path)
        if held is not None and held.version == file.version and file.version:
            return held
        return parse(file)

    def _take(self, file: FileText) -> None:
        try:
            item = parse(file)
        except ValueError as error:
            self._drop(file.path)
            self.skipped[file.path] = str(error)
            return
        self.skipped.pop(file.path, None)
        self._set(item)

    def _set(self, item: StoredItem) -> None:
        self.items[item.path] = item
        self._by_namespace.setdefault(item.namespace, {})[item.path] = item
        text = None if item.index is False else self.text_of(item)
        if text and text.strip():
            self.index.upsert(RecallDoc(item.path, text, item.updated_at.timestamp()))
        else:
            self.index.remove(item.path)

    def _drop(self, path: str) -> None:
        item = self.items.pop(path, None)
        if item is not None:
            folder = self._by_namespace.get(item.namespace, {})
            folder.pop(path, None)
            if not folder:
                self._by_namespace.pop(item.namespace, None)
        self.index.remove(path)

    def note(self, file: FileText) -> None:
        """Learn the item file this process just wrote, as a read of it gives it.

        The next refresh finds the same blob id at that path and keeps this one; a
        get reads the path's blob id and takes this parse instead of parsing again.
        """
        with self._lock:
            self._take(file)

    def under(self, prefix: Namespace) -> list[StoredItem]:
        """The items whose namespace starts with ``prefix`` (a lookup per namespace, not a scan of every item); ``()``: all."""
        with self._lock:
            return [
                item
                for namespace, folder in self._by_namespace.items()
                if namespace[: len(prefix)] == prefix
                for item in folder.values()
            ]


# -- writing ---------------------------------------------------------------------------------

#: How often a write re-reads and tries again when another writer changed the file first.
RETRIES: Final = 50


def commit(store: FileStore, edits: Sequence[Edit], op: str, origin: Origin | None) -> tuple[str | None, ...]:
    """``edits`` in ONE commit (the store's ``apply``), each under its expectation; the versions left.

    A store without ``apply`` (none of gitmem's) gets one write or delete per edit.
    """
    apply = getattr(store, "apply", None)
    if apply is not None:
        return tuple(apply(edits, origin=origin, op=op).versions)
    out: list[str | None] = []
    for edit in edits:
        expected = edit.expected if isinstance(edit.expected, str) or edit.expected is None else None
        if edit.text is None:
            assert isinstance(expected, str)
            store.delete(edit.path, expected=expected, origin=origin)
            out.append(None)
        else:
            out.append(store.write(edit.path, edit.text, expected=expected, origin=origin))
    return tuple(out)


def try_commit(
    store: FileStore, edits: Sequence[Edit], op: str, origin: Origin | None
) -> tuple[str | None, ...] | None:
    """:func:`commit`, or ``None`` when someone else changed a file first (read again and retry)."""
    try:
        return commit(store, edits, op, origin)
    except MemoryStoreError as error:
        if error.code in LOST_RACE:
            return None
        raise


def sweep(catalogue: ItemCatalogue, *, now: datetime | None = None, origin: Origin | None = None) -> int:
    """Delete every expired item in ONE commit (``Gitmem-Op: ttl-sweep``); how many were deleted.

    Each delete expects the version the catalogue read, so an item refreshed or
    rewritten meanwhile is kept (the sweep reads again and retries).
    """
    for _ in range(RETRIES):
        moment = now or datetime.now(UTC)
        with catalogue.caught_up():
            expired = [item for item in catalogue.under(()) if item.expired(moment)]
        if not expired:
            return 0
        edits = [Edit(i.path, None, i.version) for i in expired]
        if try_commit(catalogue.store, edits, "ttl-sweep", origin) is not None:
            return len(expired)
    raise MemoryStoreError("version_mismatch", "the sweep kept losing to concurrent writers; try again")


def refreshed(item: StoredItem, now: datetime) -> StoredItem | None:
    """The item with its TTL restarted at ``now``, or ``None`` when that would change little.

    A read restarts an item's TTL, and in git that is a commit. Reads that come
    within 1% of the TTL of the last restart make none.
    """
    if item.ttl_minutes is None:
        return None
    new = expiry(now, item.ttl_minutes)
    assert new is not None
    slack = timedelta(minutes=item.ttl_minutes) / 100
    if item.expires_at is not None and new - item.expires_at < slack:
        return None
    return replace(item, expires_at=new)
