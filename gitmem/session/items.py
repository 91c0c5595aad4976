"""Session memory items: the value, its checks, and the file that holds it in git.

An item is stored as one file of canonical JSON (sorted keys, one key per line,
two-space indent), so ``git diff`` of a merge or a supersede shows exactly which
fields moved. The file holds what the team should review; access statistics are
deliberately *not* in it (see :mod:`gitmem.session.stats`), so recalling an item
never becomes a commit.

Paths fan out by the first two hex digits of a hash:

- an item with a fingerprint (see :func:`gitmem.session.hygiene.fingerprint`) lives at
  the path derived from that fingerprint, so two writers remembering the same text
  collide on one path and the second merges instead of adding a duplicate;
- an item too short for a fingerprint lives at the path derived from its id.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sized
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal, get_args

from gitmem.errors import MemoryStoreError
from gitmem.localfile import parse_json
from gitmem.recall.values import is_date_time, utc_time

MemoryType = Literal["episodic", "semantic", "procedural", "working"]
MEMORY_TYPES: Final[tuple[MemoryType, ...]] = get_args(MemoryType)

#: The folder of a session mount that holds items; other paths are not items.
ITEMS_DIR: Final = "items"
#: ``schema`` of every item file this version writes.
ITEM_SCHEMA: Final = "gitmem.session.item.v1"

MAX_CONTENT_CHARS: Final = 16_000
MAX_TAGS: Final = 64
MAX_TAG_CHARS: Final = 64
#: Most tag entries a caller may hand over, duplicates included: refused before any is looked at.
MAX_TAG_ENTRIES: Final = 16 * MAX_TAGS
#: Deepest nesting of metadata (a mapping in a list in a mapping is depth 3), and its JSON size.
MAX_METADATA_DEPTH: Final = 32
MAX_METADATA_CHARS: Final = 16_000
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


@dataclass(frozen=True)
class MemoryItem:
    """One remembered thing.

    ``timestamp`` and ``last_accessed`` are seconds since the epoch (UTC), kept to the
    microsecond so a value read back from its file equals the one written.
    ``access_count`` / ``last_accessed`` come from the access statistics, not the file.
    """

    id: str
    content: str
    timestamp: float
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    memory_type: MemoryType = "episodic"
    metadata: dict[str, Any] = field(default_factory=dict)
    access_count: int = 0
    last_accessed: float | None = None

    # -- relations kept in metadata --

    def ids_in(self, key: str) -> tuple[str, ...]:
        """The ids listed under metadata ``key`` (a list, or one string), in order."""
        value = self.metadata.get(key)
        if isinstance(value, str):
            return (value,) if value else ()
        if isinstance(value, list | tuple):
            return tuple(v for v in value if isinstance(v, str) and v)
        return ()

    @property
    def supersedes(self) -> tuple[str, ...]:
        return self.ids_in("supersedes")

    @property
    def conflicts_with(self) -> tuple[str, ...]:
        return self.ids_in("conflicts_with")

    @property
    def superseded_by(self) -> tuple[str, ...]:
        return self.ids_in("superseded_by")

    @property
    def superseded(self) -> bool:
        return bool(self.superseded_by) or "superseded" in self.tags

    @property
    def tombstoned(self) -> bool:
        return (
            "tombstoned" in self.tags
            or bool(self.metadata.get("tombstoned"))
            or self.metadata.get("status") == "tombstoned"
        )

    @property
    def recallable(self) -> bool:
        """Whether recall may show it: superseded and tombstoned items stay in git but not in answers."""
        if not self.metadata:  # most items: only the tags can say so (a resume asks this of every item)
            return "superseded" not in self.tags and "tombstoned" not in self.tags
        return not (self.superseded or self.tombstoned)

    def with_access(self, count: int, last: float | None) -> MemoryItem:
        return replace(self, access_count=count, last_accessed=last)

    def as_dict(self) -> dict[str, Any]:
        """The item as JSON values, as the tools answer with it (the CLI adds metadata and last access)."""
        return {
            "id": self.id,
            "content": self.content,
            "timestamp": datetime.fromtimestamp(self.timestamp, UTC).isoformat(),
            "importance": self.importance,
            "tags": list(self.tags),
            "memory_type": self.memory_type,
            "access_count": self.access_count,
            "conflicts_with": list(self.conflicts_with),
            "superseded": self.superseded,
        }


# --- checks -------------------------------------------------------------------------------


def _bad(message: str) -> MemoryStoreError:
    return MemoryStoreError("invalid_text", message)


def new_item_id() -> str:
    """``mem-`` and a random (version 4) UUID in hex, as ``uuid.uuid4().hex`` makes it without its object."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    return f"mem-{raw.hex()}"


def check_id(value: object) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise _bad(f"{value!r} is not an item id: 1-128 of letters, digits and . _ : - (starting alphanumeric)")
    return value


def check_content(content: object) -> str:
    """Item text: non-blank, at most :data:`MAX_CONTENT_CHARS`, no credentials (the rule is named)."""
    if not isinstance(content, str):
        raise _bad(f"content must be text, got {type(content).__name__}")
    if not content.strip():
        raise _bad("content is empty; a memory needs some text")
    if len(content) > MAX_CONTENT_CHARS:
        raise _bad(f"content is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}")
    if "\x00" in content:
        raise _bad("content holds a NUL character")
    check_unicode(content, "content")
    check_no_secret(content, "content")
    return content


def check_unicode(text: str, what: str) -> None:
    """Refuse a lone surrogate: it has no UTF-8 form, so the item file could not be written."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _bad(f"{what} is not valid Unicode (a lone surrogate at character {exc.start})") from None


def check_no_secret(text: str, what: str) -> None:
    from gitmem.secrets import find_secret  # a write's check (it compiles its rules on import): a recall needs none

    rule = find_secret(text)
    if rule is not None:
        raise _bad(
            f"{what} looks like it holds {rule.explanation} (secret rule '{rule.name}'); "
            "memories are kept in git history, so credentials are refused"
        )


def check_importance(value: object) -> float:
    # No math.isfinite on an int: one past 1e308 (a JSON 10**400) raises OverflowError there.
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:  # NaN
        raise _bad(f"importance must be a number from 0 to 1, got {value!r}")
    if not 0.0 <= value <= 1.0:
        shown = value if isinstance(value, float) or -(10**9) < value < 10**9 else "a larger integer"
        raise _bad(f"importance must be from 0 to 1, got {shown}")
    return float(value)


def check_type(value: object) -> MemoryType:
    for kind in MEMORY_TYPES:
        if value == kind:
            return kind
    raise _bad(f"memory_type {value!r} is not one of {', '.join(MEMORY_TYPES)}")


def clean_tags(tags: Iterable[object]) -> tuple[str, ...]:
    """Tags lower-cased and stripped, duplicates dropped (first wins), order kept.

    The limits come first and the work is linear: more than :data:`MAX_TAG_ENTRIES`
    entries are refused by their count (before any is cleaned, when the caller's
    collection has a length), a tag is cleaned only after its raw length is checked,
    duplicates are found in a set, and the 65th distinct tag stops the loop.
    """
    if isinstance(tags, str | bytes):
        raise _bad("tags must be a list of strings, not one string")
    count = len(tags) if isinstance(tags, Sized) else None
    if count is not None and count > MAX_TAG_ENTRIES:
        raise _bad(f"{count} tags; the limit is {MAX_TAGS}")
    out: dict[str, None] = {}
    for seen, tag in enumerate(tags, 1):
        if seen > MAX_TAG_ENTRIES:
            raise _bad(f"more than {MAX_TAG_ENTRIES} tags given; the limit is {MAX_TAGS}")
        if not isinstance(tag, str) or not tag.strip():
            raise _bad(f"tag {_short(tag)} is not a non-empty string")
        # Surrounding blanks are stripped, so only a tag well past the limit is refused unstripped.
        cleaned = tag.strip().lower() if len(tag) <= 4 * MAX_TAG_CHARS else tag
        if len(cleaned) > MAX_TAG_CHARS or any(c in cleaned for c in "\r\n\t\x00"):
            raise _bad(f"tag {_short(tag)} must be one line of at most {MAX_TAG_CHARS} characters")
        if cleaned in out:
            continue
        if len(out) == MAX_TAGS:
            raise _bad(f"more than {MAX_TAGS} distinct tags; the limit is {MAX_TAGS}")
        check_unicode(cleaned, "a tag")
        check_no_secret(cleaned, "a tag")
        out[cleaned] = None
    return tuple(out)


def _short(value: object) -> str:
    """``repr`` of a caller's value, cut so an error message stays small whatever it was handed."""
    text = repr(value) if isinstance(value, str | int | float | bool | type(None)) else type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _check_shape(metadata: Mapping[Any, Any]) -> None:
    """Refuse metadata nested deeper than :data:`MAX_METADATA_DEPTH`, walked without recursion."""
    stack: list[tuple[object, int]] = [(metadata, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            raise _bad(f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep")
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list | tuple):
            stack.extend((v, depth + 1) for v in value)


def check_metadata(metadata: object) -> dict[str, Any]:
    """Metadata must be a JSON object (it is stored as JSON) without credentials."""
    if not isinstance(metadata, Mapping):
        raise _bad(f"metadata must be a mapping, got {type(metadata).__name__}")
    if not metadata:
        return {}  # most items carry none: nothing to encode or search for credentials
    _check_shape(metadata)
    try:
        text = json.dumps(dict(metadata), sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _bad(f"metadata must hold only JSON values (text keys): {exc}") from None
    if len(text) > MAX_METADATA_CHARS:
        raise _bad(f"metadata is {len(text)} characters as JSON; the limit is {MAX_METADATA_CHARS}")
    check_unicode(text, "metadata")
    check_no_secret(text, "metadata")
    loaded: dict[str, Any] = parse_json(text, what="metadata")  # as a read of its file will parse it
    return loaded


def to_micros(t: float) -> float:
    """``t`` rounded to the microsecond, the precision item files keep."""
    return round(t * 1_000_000) / 1_000_000


def make_item(
    content: object,
    *,
    now: float,
    importance: object = 0.5,
    tags: Iterable[object] = (),
    memory_type: object = "episodic",
    metadata: object = None,
    item_id: object = None,
) -> MemoryItem:
    """A new item from caller input, every field checked (``invalid_text`` names the first bad one)."""
    return MemoryItem(
        id=new_item_id() if item_id is None else check_id(item_id),
        content=check_content(content),
        timestamp=to_micros(now),
        importance=check_importance(importance),
        tags=clean_tags(tags),
        memory_type=check_type(memory_type),
        metadata=check_metadata({} if metadata is None else metadata),
    )


# --- the file -----------------------------------------------------------------------------


def iso(t: float) -> str:
    """``t`` as UTC ISO 8601 to the microsecond (``YYYY-MM-DDTHH:MM:SS.ffffffZ``), which :func:`from_iso` reads back.

    The year is always four digits (``0001``, ``0999``): ``strftime("%Y")``
    writes years below 1000 unpadded on glibc, and ``fromisoformat`` refuses them.

    Formatted without ``strftime`` (which goes through the C library and the
    locale), and the date and time of the second are kept from the last call:
    remembers follow each other within the same second, so only the microseconds
    are formatted anew. They are rounded as ``fromtimestamp`` rounds them (the
    fraction times a million, half to even, carried into the second).
    """
    global _iso_second
    fraction, whole = math.modf(t)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        micros -= 1_000_000
        whole += 1.0
    elif micros < 0:
        micros += 1_000_000
        whole -= 1.0
    second = int(whole)
    known = _iso_second
    if known[0] != second:
        d = datetime.fromtimestamp(second, UTC)
        known = (second, f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}")
        _iso_second = known
    return f"{known[1]}.{micros:06d}Z"


_iso_second: tuple[int | None, str] = (None, "")


def from_iso(value: object) -> float:
    if not isinstance(value, str):
        raise ValueError(f"timestamp {value!r} is not text")
    return to_micros(utc_time(datetime.fromisoformat(value.replace("Z", "+00:00"))).timestamp())


def encode_item(item: MemoryItem) -> str:
    """The item's file: canonical JSON, one key per line, ending in a newline.

    The keys are fixed, so they are laid out here in their sorted order and only
    the values go through :func:`_canonical`; anything it leaves to ``json``
    (:class:`_Unusual`, a value JSON cannot hold) is encoded from the record as before.
    """
    try:
        return (
            f'{{\n  "content": {_QUOTE(item.content)},\n  "id": {_QUOTE(item.id)},\n'
            f'  "importance": {_canonical(item.importance, _PAD)},\n'
            f'  "memory_type": {_canonical(item.memory_type, _PAD)},\n'
            f'  "metadata": {_canonical(item.metadata, _PAD)},\n  "schema": "{ITEM_SCHEMA}",\n'
            f'  "tags": {_canonical(list(item.tags), _PAD)},\n  "timestamp": "{iso(item.timestamp)}"\n}}\n'
        )
    except (_Unusual, ValueError, TypeError):
        pass
    record = {
        "schema": ITEM_SCHEMA,
        "id": item.id,
        "content": item.content,
        "timestamp": iso(item.timestamp),
        "importance": item.importance,
        "memory_type": item.memory_type,
        "tags": list(item.tags),
        "metadata": item.metadata,
    }
    try:
        return _canonical(record, "") + "\n"
    except (_Unusual, ValueError):  # let json build it, or say what is wrong with it
        return json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


class _Unusual(Exception):
    """A value :func:`_canonical` leaves to ``json.dumps`` (a key that is not text, a type JSON converts)."""


_QUOTE = json.encoder.encode_basestring  # the C quoting of json.dumps(..., ensure_ascii=False)
_PAD = "  "  # a top-level key's indent


def _canonical(value: object, pad: str) -> str:
    """``json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)``, faster.

    With ``indent`` set, json encodes in pure Python; an item is written on every
    remember, so the layout is built here around the C string quoting. Anything
    but text keys and plain JSON values raises :class:`_Unusual` (NaN and infinity
    ``ValueError``) and goes to json itself; a property test holds the two equal.
    """
    if isinstance(value, str):
        return _QUOTE(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("out of range float values are not JSON compliant")
        return float.__repr__(value)
    inner = pad + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        if not all(type(k) is str for k in value):
            raise _Unusual
        rows = [f"{inner}{_QUOTE(k)}: {_canonical(v, inner)}" for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(rows) + "\n" + pad + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + _canonical(v, inner) for v in value) + "\n" + pad + "]"
    raise _Unusual


def decode_item(text: str) -> MemoryItem:
    """Parse an item file; ``ValueError`` says what is wrong (recall skips such a file, never crashes).

    The file is anyone's who can push to the memory: it is parsed by the one
    bounded parser (nesting at most ``JSON_DEPTH``) and every field's type is
    checked, so whatever it holds ends here as ``ValueError``.
    """
    try:
        record = parse_json(text, what="the item file")
    except MemoryStoreError as exc:
        raise ValueError(exc.message) from None
    if not isinstance(record, dict):
        raise ValueError("an item file holds a JSON object")
    schema = record.get("schema")
    if schema != ITEM_SCHEMA:
        raise ValueError(f"schema {schema!r} is not {ITEM_SCHEMA}")
    try:
        tags = record.get("tags", [])
        if not isinstance(tags, list):
            raise ValueError("tags must be a list")
        return MemoryItem(
            id=check_id(record.get("id")),
            content=_text(record.get("content")),
            timestamp=from_iso(record.get("timestamp")),
            importance=check_importance(record.get("importance", 0.5)),
            tags=tuple(str(t) for t in tags),
            memory_type=check_type(record.get("memory_type", "episodic")),
            metadata=_mapping(record.get("metadata", {})),
        )
    except MemoryStoreError as exc:
        raise ValueError(exc.message) from None
    except OverflowError as exc:  # a timestamp out of range
        raise ValueError(f"timestamp: {exc}") from None


def item_row(item: MemoryItem) -> list[Any]:
    """The item's file fields as a JSON row (see :func:`item_from_row`): what a catalogue snapshot keeps."""
    return [item.id, item.content, item.timestamp, item.importance, list(item.tags), item.memory_type, item.metadata]


def item_from_row(row: object) -> MemoryItem:
    """The item in a row :func:`item_row` made; ``ValueError`` when it is not one.

    A snapshot row was decoded from a file once already, so only what a spoilt
    or foreign file could get wrong is checked, without parsing a JSON text per
    item: every field's type, the id's form, the timestamp finite, importance
    and memory type in range. A row that fails is not repaired: the snapshot
    it came from is not used.
    """
    if not isinstance(row, list) or len(row) != 7:
        raise ValueError("an item row holds seven fields")
    item_id, content, timestamp, importance, tags, memory_type, metadata = row
    if not is_date_time(timestamp):
        # An item file's time is a date, which every answer formats: one past them (1e300) made them fail.
        shown = timestamp if not isinstance(timestamp, int) or abs(timestamp) < 10**18 else "a larger integer"
        raise ValueError(f"timestamp {shown!r} is not a time of the years 1 to 9999")
    if not isinstance(tags, list) or not all(type(t) is str for t in tags):
        raise ValueError("tags must be a list of strings")
    try:
        return MemoryItem(
            id=check_id(item_id),
            content=_text(content),
            timestamp=float(timestamp),
            importance=check_importance(importance),
            tags=tuple(tags),
            memory_type=check_type(memory_type),
            metadata=_mapping(metadata),
        )
    except MemoryStoreError as exc:
        raise ValueError(exc.message) from None


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("content must be text")
    return value


def _mapping(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("metadata must be an object")
    return value


def _fan_out(key: str) -> str:
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]
    return f"{ITEMS_DIR}/{digest[:2]}/{digest}.json"


def path_for_fingerprint(fp: str) -> str:
    """Where the item with normalised text ``fp`` lives: every writer of that text meets here."""
    return _fan_out("fingerprint\0" + fp)


def path_for_id(item_id: str) -> str:
    """Where an item without a fingerprint (short text) lives."""
    return _fan_out("id\0" + item_id)


def is_item_path(path: str) -> bool:
    return path.startswith(ITEMS_DIR + "/") and path.endswith(".json")
