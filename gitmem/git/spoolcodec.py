"""The spool's wire format: a request and its answer as plain, versioned values, never pickles.

A writer process hands its batches to the writer-lock holder through a slot file
(:mod:`gitmem.git.spool`) and reads the outcomes back from it. Those bytes used
to be pickles, and unpickling runs whatever the bytes say: anyone able to write
the spool folder could run code in every gitmem writer of the memory. Here a
request and an answer are JSON of plain values (lists, strings, numbers,
``null``; a file's bytes as its text) in the few shapes gitmem sends, checked field by
field on the way in; anything else is :class:`Malformed`, and a malformed
request is never run (its waiter is answered ``unavailable``).

The shapes (version :data:`FORMAT`; a document of another version is malformed)::

    request  ["gitmem-request", 2, [spec, ...]]
      spec   [format, batch, origin]
      format [max_file_bytes, max_description_chars, max_frontmatter_bytes,
              max_path_bytes, check_secrets, max_files, max_memory_bytes]
      batch  [[step, ...], [move, ...], op, summary, [[key, value], ...]]
      step   [path, data | null, expected]   data: the text (UTF-8 bytes) or ["b64", base64]
                                             expected: null (absent), true (ANY), a version
      move   [source, destination, expected]
      origin [run_id, principal_id, tool_call_id]
    answer   ["gitmem-answer", 2, [outcome, ...]]
      ok     ["ok", commit | null, null | [[version | null, ...], op, [path, ...]]]
      error  ["err", "store" | "tool", code, message, null | [path, text, version]]

An answer carries what a writer's caller reads of the decision (the commit, each
path's new version, the op and the paths), not its effects: their bytes are in
the commit already, and the files they replaced would each cost a blob read to
send. A refusal keeps the file the caller collided with (``version_mismatch``).

Decoding a request needs the spec type that turns it back into a plan
(:class:`SpecType`); :mod:`gitmem.git.batch` registers its own with :func:`use_spec`.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from gitmem.errors import STORE_ERROR_CODES, TOOL_ERROR_CODES, MemoryStoreError, MemoryToolError
from gitmem.fileformat import FileFormat, validate_path
from gitmem.git.snapshot import Done
from gitmem.model import BlobVersion, CommitId, FileText
from gitmem.store import Batch, Decision, Move, Step
from gitmem.values import ANY, AnyVersion, Origin

FORMAT = 2
"""Bumped with every change of the shapes above (the slot names carry it too, see :data:`gitmem.git.spool.VERSION`)."""
_REQUEST = "gitmem-request"
_ANSWER = "gitmem-answer"

Outcome = tuple[Any, BaseException | None]


class Malformed(ValueError):
    """Bytes that are not a request or answer of this format: never acted on."""


class SpecType(Protocol):
    """A request's class: built from ``(format, batch, origin)``, read back through the same three fields."""

    @property
    def fmt(self) -> FileFormat: ...
    @property
    def batch(self) -> Batch: ...
    @property
    def origin(self) -> Origin: ...
    def __call__(self, repo: Any) -> Any: ...


_spec_types: list[Callable[[FileFormat, Batch, Origin], Any]] = []


def use_spec(make: Callable[[FileFormat, Batch, Origin], Any]) -> None:
    """Decode requests as ``make(format, batch, origin)`` (the batch writer's spec; set once at import)."""
    _spec_types[:] = [make]


def can_decode_requests() -> bool:
    """Whether this process has the spec type to run a request with (a holder without one leaves them queued)."""
    return bool(_spec_types)


# -- encoding --


def _data(data: bytes | None) -> str | list[str] | None:
    """A file's bytes: as its text when they are UTF-8 (always, for what gitmem writes), else base64."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ["b64", binascii.b2a_base64(data, newline=False).decode("ascii")]


def _expected(value: object) -> str | bool | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, AnyVersion):
        return True
    raise Malformed(f"an expected version of type {type(value).__name__} cannot cross processes")


def _dump(doc: object) -> bytes:
    # ASCII out: a lone surrogate (a path git gave us undecoded) survives as an escape.
    return json.dumps(doc, separators=(",", ":"), check_circular=False).encode("ascii")


def encode_request(specs: Sequence[SpecType]) -> bytes:
    """The request bytes for ``specs``; :class:`Malformed` for a value outside the shapes above."""
    out = []
    for spec in specs:
        fmt, batch, origin = spec.fmt, spec.batch, spec.origin
        if type(fmt) is not FileFormat or type(batch) is not Batch or type(origin) is not Origin:
            raise Malformed("only a batch with its format and origin crosses processes")
        out.append(
            [
                list(_format_key(fmt)),
                [
                    [[s.path, _data(s.data), _expected(s.expected)] for s in batch.steps],
                    [[m.source, m.destination, _expected(m.expected)] for m in batch.moves],
                    batch.op,
                    batch.summary,
                    [list(pair) for pair in batch.trailers],
                ],
                [origin.run_id, origin.principal_id, origin.tool_call_id],
            ]
        )
    return _dump([_REQUEST, FORMAT, out])


def encode_answer(outcomes: Sequence[Outcome]) -> bytes:
    """The answer bytes; an error that is not a store error is sent as ``unavailable`` (its type cannot cross)."""
    out: list[object] = []
    for value, error in outcomes:
        if error is not None:
            if not isinstance(error, MemoryStoreError):
                error = MemoryStoreError("unavailable", f"the writer committing this request failed: {error!r}")
            current = error.current
            out.append(
                [
                    "err",
                    "tool" if isinstance(error, MemoryToolError) else "store",
                    error.code,
                    error.message,
                    None if current is None else [current.path, current.text, current.version],
                ]
            )
            continue
        if not isinstance(value, Done):
            raise Malformed(f"an outcome of type {type(value).__name__} cannot cross processes")
        result = value.result
        if result is not None and not isinstance(result, Decision):
            raise Malformed(f"a result of type {type(result).__name__} cannot cross processes")
        decision = None if result is None else [list(result.versions), result.op, list(result.paths)]
        out.append(["ok", value.commit, decision])
    return _dump([_ANSWER, FORMAT, out])


# -- decoding: every field checked, nothing constructed that the shapes do not name --


def _load(raw: bytes, kind: str) -> list[Any]:
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Malformed(f"not JSON: {exc}") from None
    if not (isinstance(doc, list) and len(doc) == 3 and doc[0] == kind):
        raise Malformed(f"not a {kind}")
    if type(doc[1]) is not int or doc[1] != FORMAT:
        raise Malformed(f"a {kind} of format {doc[1]!r}, not {FORMAT}")
    return _list(doc[2])


def _list(value: object, length: int | None = None) -> list[Any]:
    if type(value) is not list or (length is not None and len(value) != length):
        raise Malformed(f"expected a list{'' if length is None else f' of {length}'}, got {value!r:.60}")
    return value


def _str(value: object) -> str:
    if type(value) is not str:
        raise Malformed(f"expected a string, got {value!r:.60}")
    return value


def _opt_str(value: object) -> str | None:
    return None if value is None else _str(value)


def _int(value: object, optional: bool = False) -> int:
    if value is None and optional:
        return None  # type: ignore[return-value]
    if type(value) is not int:
        raise Malformed(f"expected a number, got {value!r:.60}")
    return value


def _version(value: object) -> str | AnyVersion | None:
    if value is True:
        return ANY
    return _opt_str(value)


def _bytes(value: object) -> bytes | None:
    if value is None:
        return None
    if type(value) is str:
        return value.encode("utf-8", "surrogatepass")
    tagged = _list(value, 2)
    if tagged[0] != "b64":
        raise Malformed(f"expected file bytes, got {value!r:.60}")
    try:
        return binascii.a2b_base64(_str(tagged[1]), strict_mode=True)
    except binascii.Error as exc:
        raise Malformed(f"bad base64: {exc}") from None


def _path(path: object, fmt: FileFormat) -> str:
    if type(path) is str:
        try:
            if validate_path(path, fmt) == path:
                return path
        except MemoryStoreError:
            pass
    raise Malformed(f"{path!r:.80} is not a path gitmem writes")


_formats: dict[tuple[tuple[object, ...], tuple[type, ...]], FileFormat] = {}
_FORMAT_KINDS = (int, int, int, int, bool, type(None), type(None))  # the usual one, checked first
_FORMAT_FIELDS = frozenset((int, bool, type(None)))  # a memory's format arrives with every request
_origins: dict[tuple[object, ...], Origin] = {}  # and a writer's origin with most


def _format(value: object) -> FileFormat:
    if type(value) is not list or len(value) != 7:
        raise Malformed(f"not a file format: {value!r:.80}")
    key = tuple(value)
    kinds = tuple(map(type, key))  # 1 and True are equal keys; their types tell them apart
    if (kinds != _FORMAT_KINDS and not _FORMAT_FIELDS.issuperset(kinds)) or kinds[4] is not bool:
        raise Malformed(f"not a file format: {value!r:.80}")
    found = _formats.get((key, kinds))
    if found is not None:
        return found
    f = key
    try:
        fmt = FileFormat(_int(f[0]), _int(f[1]), _int(f[2]), _int(f[3]), f[4], _int(f[5], True), _int(f[6], True))
    except ValueError as exc:
        raise Malformed(str(exc)) from None
    if len(_formats) < 64:
        _formats[(key, kinds)] = fmt
    return fmt


def _format_key(fmt: FileFormat) -> tuple[object, ...]:
    return (
        fmt.max_file_bytes,
        fmt.max_description_chars,
        fmt.max_frontmatter_bytes,
        fmt.max_path_bytes,
        fmt.check_secrets,
        fmt.max_files,
        fmt.max_memory_bytes,
    )


def _origin(value: object) -> Origin:
    key = tuple(_opt_str(field) for field in _list(value, 3))
    found = _origins.get(key)
    if found is None:
        found = Origin(key[0], key[1], key[2])
        if len(_origins) < 256:
            _origins[key] = found
    return found


def _batch(value: object, fmt: FileFormat) -> Batch:
    b = _list(value, 5)
    steps = []
    for item in _list(b[0]):
        if type(item) is not list or len(item) != 3:
            raise Malformed(f"not a step: {item!r:.80}")
        path, data, expected = item
        steps.append(Step(_path(path, fmt), _bytes(data), _version(expected)))
    moves = []
    for item in _list(b[1]):
        if type(item) is not list or len(item) != 3:
            raise Malformed(f"not a move: {item!r:.80}")
        source, destination, expected = item
        moves.append(Move(_path(source, fmt), _path(destination, fmt), _version(expected)))
    trailers = tuple((_str(t[0]), _str(t[1])) for t in (_list(x, 2) for x in _list(b[4]))) if b[4] else ()
    return Batch(tuple(steps), tuple(moves), _opt_str(b[2]), _opt_str(b[3]), trailers)


def decode_request(raw: bytes) -> list[Any]:
    """The specs of a request (built by the type :func:`use_spec` set); :class:`Malformed` for anything else."""
    if not _spec_types:
        raise Malformed("this process has no batch writer to run requests with")
    make = _spec_types[0]
    specs = []
    for item in _load(raw, _REQUEST):
        fmt_raw, batch_raw, origin_raw = _list(item, 3)
        fmt = _format(fmt_raw)
        specs.append(make(fmt, _batch(batch_raw, fmt), _origin(origin_raw)))
    return specs


def _outcome(value: object) -> Outcome:
    item = _list(value)
    if item and item[0] == "ok" and len(item) == 3:
        commit = _opt_str(item[1])
        decision = None
        if item[2] is not None:
            versions, op, paths = _list(item[2], 3)
            decision = Decision(
                (),
                tuple(None if v is None else BlobVersion(_str(v)) for v in _list(versions)),
                _str(op),
                tuple(_str(p) for p in _list(paths)),
            )
        return Done(None if commit is None else CommitId(commit), decision), None
    if item and item[0] == "err" and len(item) == 5:
        kind, code, message = item[1], _str(item[2]), _str(item[3])
        current = None
        if item[4] is not None:
            path, text, version = (_str(x) for x in _list(item[4], 3))
            current = FileText(path, text, version)
        if kind == "tool" and code in TOOL_ERROR_CODES | STORE_ERROR_CODES:
            return None, MemoryToolError(code, message, current)  # type: ignore[arg-type]
        if kind == "store" and code in STORE_ERROR_CODES | TOOL_ERROR_CODES:
            return None, MemoryStoreError(code, message, current)  # type: ignore[arg-type]
    raise Malformed(f"not an outcome: {value!r:.80}")


def decode_answer(raw: bytes) -> list[Outcome]:
    """The outcomes of an answer; :class:`Malformed` for anything else."""
    return [_outcome(item) for item in _load(raw, _ANSWER)]
