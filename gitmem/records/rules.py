"""Pure rules of record memory: text, ids, namespaces, cursors and the record file.

Nothing here touches a store. :class:`~gitmem.records.store.RecordStore` applies
these rules before any I/O, so bad input fails with its code and nothing is
written, and both stores (git and in-memory) decide the same way.

A record is kept as one file, ``<namespace folder>/<fan-out>/<id>.md``::

    ---
    id: 01JDQ6Z5V6R7XKQ3M8T2B4N9CW
    created: "2026-12-01T10:31:57.123456Z"
    updated: "2026-12-01T10:31:57.123456Z"
    ---
    prefers green tea

so ``git log -p`` and ``git diff`` show record changes as ordinary text.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import parse_frontmatter

#: A record holds 1 to 8000 characters (code points).
RECORD_CHARS: Final = 8000

# -- text -------------------------------------------------------------------------


def validate_record_text(text: object, max_chars: int = RECORD_CHARS) -> str:
    """Return ``text`` unchanged when it may be stored as a record, else ``invalid_text``.

    Records are stored verbatim (no trimming, no normalisation): what the model
    wrote is what it reads back. Refused: non-strings, empty or blank text, more
    than ``max_chars`` characters, NUL and text that cannot be UTF-8 (lone
    surrogates), and obvious credentials, because git keeps every version.
    """
    if not isinstance(text, str):
        raise MemoryStoreError("invalid_text", f"a record is text, not {type(text).__name__}")
    if not text.strip():
        raise MemoryStoreError("invalid_text", "a record needs at least one visible character")
    if len(text) > max_chars:
        raise MemoryStoreError("invalid_text", f"a record holds at most {max_chars} characters; this has {len(text)}")
    if "\x00" in text:
        raise MemoryStoreError("invalid_text", "a record cannot hold a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryStoreError("invalid_text", "a record must be valid Unicode (it holds a lone surrogate)") from None
    from gitmem.secrets import find_secret  # a write's check (it compiles its rules on import): a search needs none

    rule = find_secret(text)
    if rule is not None:
        raise MemoryStoreError(
            "invalid_text",
            f"the text looks like it holds {rule.explanation} (secret rule '{rule.name}'); "
            "git keeps every version, so credentials are refused",
        )
    return text


# -- ids ----------------------------------------------------------------------------

# Crockford base32: sortable as text in the same order as the numbers it spells.
_ALPHABET: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_VALUE: Final = {c: i for i, c in enumerate(_ALPHABET)}
ID_LENGTH: Final = 26
_ID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
_RANDOM_BITS: Final = 80
_MAX_ID: Final = (1 << 128) - 1


def _encode(value: int) -> str:
    chars = []
    for _ in range(ID_LENGTH):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def _decode(record_id: str) -> int:
    value = 0
    for c in record_id:
        value = (value << 5) | _VALUE[c]
    return value


def is_record_id(value: object) -> bool:
    """Whether ``value`` has the shape of a record id (26 Crockford base32 characters)."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


#: The last moment a date holds (the end of the year 9999, in whole seconds), in milliseconds.
_LAST_MILLIS: Final = int(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()) * 1000


def id_time(record_id: str) -> datetime:
    """When the id was made: its first 48 bits are milliseconds since the epoch.

    48 bits reach the year 10889, and every id of the shape is one (a path, a cursor, a
    pushed file are checked for the shape alone): a time past the last a date holds is
    that last time, as a record file's own time no date holds reads as not given.
    """
    return datetime.fromtimestamp(min(_decode(record_id) >> _RANDOM_BITS, _LAST_MILLIS) / 1000, UTC)


class IdGenerator:
    """Record ids that sort by creation time (a ULID layout: 48-bit ms clock + 80 random bits).

    Within one process ids only grow, even within a millisecond or when the clock
    steps back: the next id is the random one or the last id plus one, whichever
    is larger. Across processes the random bits keep ids apart; the store adds
    its own ordering check when ids must follow commit order (see ``after``).
    """

    def __init__(self, clock: object = None) -> None:
        self._clock = clock if callable(clock) else time.time
        self._last = 0
        self._lock = threading.Lock()

    def next(self, after: str | None = None) -> str:
        """A fresh id, greater than every id this generator made and than ``after``."""
        millis = int(self._clock() * 1000) & ((1 << 48) - 1)
        value = (millis << _RANDOM_BITS) | int.from_bytes(os.urandom(10), "big")
        with self._lock:
            floor = self._last
            if after is not None and is_record_id(after):
                floor = max(floor, _decode(after))
            if value <= floor:
                value = floor + 1 + int.from_bytes(os.urandom(2), "big")
            if value > _MAX_ID:  # beyond the year 10889: cannot happen with a sane clock
                raise MemoryStoreError("unavailable", "record ids are exhausted")
            self._last = value
        return _encode(value)


# -- namespaces ---------------------------------------------------------------------

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
NAMESPACE_BYTES: Final = 180


def encode_namespace(namespace: object) -> str:
    """The folder name of ``namespace``: one safe path segment, different for every namespace.

    A namespace comes from outside (a user id, a tenant) and is never used as a
    path. Lowercase letters, digits, ``-`` and ``_`` stay; every other byte of its
    UTF-8 form becomes ``.XX`` (upper-case hex). ``.`` only ever starts an escape,
    so the encoding is one-to-one, and the result has no ``/``, no ``..``, and no
    name git treats specially.
    """
    if not isinstance(namespace, str) or not namespace:
        raise MemoryStoreError("invalid_path", "a record namespace is a non-empty string")
    try:
        data = namespace.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryStoreError("invalid_path", "a record namespace must be valid Unicode") from None
    out = "".join(chr(b) if chr(b) in _SAFE else f".{b:02X}" for b in data)
    if len(out) > NAMESPACE_BYTES:
        raise MemoryStoreError(
            "invalid_path", f"the namespace is too long once encoded ({len(out)} bytes; at most {NAMESPACE_BYTES})"
        )
    return out


_ESCAPED = re.compile(r"(?:[a-z0-9_-]|\.[0-9A-F]{2})+")


def decode_namespace(folder: str) -> str | None:
    """The namespace a folder name encodes, or ``None`` when it is not such a name."""
    if not _ESCAPED.fullmatch(folder):
        return None
    data = bytearray()
    i = 0
    while i < len(folder):
        if folder[i] == ".":
            data.append(int(folder[i + 1 : i + 3], 16))
            i += 3
        else:
            data.append(ord(folder[i]))
            i += 1
    try:
        namespace = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return namespace if encode_namespace(namespace) == folder else None


# -- paths --------------------------------------------------------------------------

MARKER: Final = "last-id"


def fanout(record_id: str) -> str:
    """Two hex digits spreading records over 256 folders (a flat folder of 10k makes commits slow)."""
    return hashlib.sha1(record_id.encode("ascii"), usedforsecurity=False).hexdigest()[:2]


def record_path(folder: str, record_id: str) -> str:
    return f"{folder}/{fanout(record_id)}/{record_id}.md"


def marker_path(folder: str) -> str:
    """The file holding the namespace's newest id: adds compare-and-swap on it to stay in order."""
    return f"{folder}/{MARKER}"


_RECORD_PATH = re.compile(r"(?P<fan>[0-9a-f]{2})/(?P<id>[0-9A-Z]{26})\.md")


def id_of_path(folder: str, path: str) -> str | None:
    """The record id a path holds when it is a record file of ``folder``, else ``None``."""
    prefix = folder + "/"
    if not path.startswith(prefix):
        return None
    match = _RECORD_PATH.fullmatch(path, len(prefix))
    if match is None or not is_record_id(match["id"]) or fanout(match["id"]) != match["fan"]:
        return None
    return match["id"]


# -- cursors ------------------------------------------------------------------------

_CURSOR = re.compile(r"(?P<id>[0-9A-Z]{26})\.(?P<tag>[0-9a-f]{12})")


def _tag(folder: str, record_id: str) -> str:
    return hashlib.sha256(f"{folder}\x00{record_id}".encode(), usedforsecurity=False).hexdigest()[:12]


def encode_cursor(folder: str, record_id: str) -> str:
    """A list cursor meaning "after ``record_id``", bound to one namespace."""
    return f"{record_id}.{_tag(folder, record_id)}"


def decode_cursor(folder: str, cursor: object) -> str | None:
    """The id a cursor points after; ``None`` for no cursor; ``invalid_cursor`` otherwise.

    A cursor made for another namespace (or edited) is refused rather than
    silently reinterpreted.
    """
    if cursor is None:
        return None
    if not isinstance(cursor, str):
        raise MemoryStoreError("invalid_cursor", f"a cursor is a string, not {type(cursor).__name__}")
    match = _CURSOR.fullmatch(cursor)
    if match is None or not is_record_id(match["id"]) or match["tag"] != _tag(folder, match["id"]):
        raise MemoryStoreError(
            "invalid_cursor", "this cursor was not returned by a list of this namespace; list again without it"
        )
    return match["id"]


# -- the record file ------------------------------------------------------------------


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: object) -> datetime | None:
    from gitmem.recall.values import utc_time

    try:
        if isinstance(value, datetime):  # YAML frontmatter reads a time as one
            return utc_time(value)
        if not isinstance(value, str):
            return None
        return utc_time(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:  # not a time, or none a date can hold: read as a file that does not say
        return None


@dataclass(frozen=True, slots=True)
class RecordFile:
    """A record as its file holds it."""

    id: str
    text: str
    created: datetime
    updated: datetime
    #: The record added just before this one in its namespace, when the add knew it (the
    #: conversation profile indexes a record with the head of that one's text).
    follows: str | None = None


def render_record(record: RecordFile) -> str:
    """The file content for a record: fixed frontmatter, then the text verbatim and one newline."""
    follows = f"follows: {record.follows}\n" if record.follows else ""
    return (
        f'---\nid: {record.id}\ncreated: "{format_time(record.created)}"\n'
        f'updated: "{format_time(record.updated)}"\n{follows}---\n{record.text}\n'
    )


_HEAD = re.compile(
    r'---\nid: (?P<id>[0-9A-Z]{26})\ncreated: "(?P<created>[^"\n]+)"\nupdated: "(?P<updated>[^"\n]+)"\n'
    r"(?:follows: (?P<follows>[0-9A-Z]{26})\n)?---\n"
)


def parse_record(record_id: str, content: str) -> RecordFile:
    """Read a record file back; ``ValueError`` when it is not one for ``record_id``.

    The exact layout gitmem writes is read directly; a file edited by hand (or
    merged from a pull request) is read through the general frontmatter parser.
    """
    match = _HEAD.match(content)
    if match is not None:
        rid, created, updated = match["id"], parse_time(match["created"]), parse_time(match["updated"])
        follows = match["follows"]
        body = content[match.end() :]
    else:
        try:
            meta, body = parse_frontmatter(content)
        except MemoryStoreError as error:
            raise ValueError(f"record {record_id}: {error.message}") from None
        meta = meta or {}
        rid = meta.get("id", record_id)
        if not isinstance(rid, str):  # never str() a pushed value: YAML aliases can make it huge
            raise ValueError(f"record file {record_id} names its id as {type(rid).__name__}, not text")
        created, updated = parse_time(meta.get("created")), parse_time(meta.get("updated"))
        named = meta.get("follows")
        follows = named if is_record_id(named) else None
    if rid != record_id:
        raise ValueError(f"record file {record_id} says it holds {rid}")
    text = body[:-1] if body.endswith("\n") else body
    if not text.strip():
        raise ValueError(f"record {record_id} has no text")
    created = created or id_time(record_id)
    return RecordFile(record_id, text, created, updated or created, follows)
