"""Who a ``gitmem serve`` token speaks for, which memories it reaches and what it may do there.

A team's server is reached from several machines, so a token is more than a
password: it names a **principal** (recorded on every commit made through it,
whatever the client claims), the **memories** it reaches (names or ``fnmatch``
globs such as ``team-*``) and its **access**:

- ``read``: clone, fetch, and the read-only MCP tools;
- ``propose``: reads, plus pushes to ``proposals/<principal>/…`` branches and MCP
  writes that land on the principal's proposal branch, never on ``main``;
- ``write``: reads and writes to ``main`` (and proposals), except on a memory whose
  review gate is on, where ``main`` moves only by approval;
- ``admin``: everything, the review gate included.

A memory a token does not reach does not exist for it: the server answers exactly
as for a name nobody uses.

The token file's format is named by its extension, never guessed from its text:
``*.toml`` holds ``[[token]]`` tables, ``*.json`` holds ``{"tokens": [...]}``, and
each token only as its SHA-256 (``gitmem token`` mints one and prints the clear
text once)::

    [[token]]
    principal = "alice"
    sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    memories = ["notes", "team-*"]
    access = "write"
    namespaces = ["team"]   # optional: record namespaces beyond the principal's own
    tenant = "acme"         # optional: the tenant of its durable namespaces

A token's **record namespaces** are its principal's own (always, and the default
of every record tool call) plus those ``namespaces`` lists, exact names: a record
tool call that names any other namespace is refused (``forbidden``). Its durable
namespaces are ``(tenant, principal, scope)``: the tenant is ``tenant`` (default:
the durable memory's name), the principal the token's, the scope the request's
(:mod:`gitmem.adapters.mcp_served`).

Tokens are random strings of 32+ characters, so one SHA-256 round is enough (no
password stretching is needed to resist guessing). A file of any other name is
the older plain list: one token per line, ``#`` comments, each with full access
(``admin``) to every memory and no principal, as before; so is each token of
``$GITMEM_TOKENS``. Because a plain token grants everything, a plain list is
read strictly: every line that is not blank or a comment must be one token
(letters, digits and ``-._~+/``, ``=`` at its end), so a TOML or JSON file under
another name (``access = "read"``, ``{``) is refused whole rather than read as a
list of admin tokens. A byte-order mark, text that is not UTF-8, an unknown key,
a ``[[tokens]]`` typo: the file is refused.

The file is a control file: read without following a link, opened without
blocking (a FIFO there is refused, not waited on) and at most
:data:`TOKEN_FILE_LIMIT` bytes (:func:`gitmem.localfile.read_control`). It is
read again whenever it changes (its size, times or inode, taken without
following a link), checked on each request: an admin revokes, rotates or adds a
token with ``gitmem token`` (:mod:`gitmem.adapters.tokenadmin`, which replaces the
file in one rename) or by editing it, without restarting the server. An edit that no
longer reads or parses grants nothing from the file until it is fixed (a typo
must not keep a revoked token alive), and the log says why once per change.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import threading
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final, Literal, cast

from gitmem.errors import MemoryStoreError
from gitmem.localfile import parse_json, read_control

Access = Literal["read", "propose", "write", "admin"]
ACCESS_LEVELS: Final[tuple[Access, ...]] = ("read", "propose", "write", "admin")
_PRINCIPAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=-]{0,63}$")
_GLOB = re.compile(r"^[A-Za-z0-9._*?\[\]!-]{1,128}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
#: A granted record namespace or a tenant: one line of text a person can type, at most 128 characters.
_NAME = re.compile(r"^[^\x00-\x1f\x7f\s][^\x00-\x1f\x7f]{0,127}$")
#: One token of a plain list: RFC 6750's ``b64token`` (what a bearer token may be), nothing TOML or JSON needs.
_PLAIN_TOKEN = re.compile(r"^[A-Za-z0-9._~+/-]+=*$")
TokenFormat = Literal["toml", "json", "plain"]
#: A token file is read up to this size (about 6,000 TOML entries); a larger one grants nothing.
TOKEN_FILE_LIMIT: Final = 1 << 20


@dataclass(frozen=True)
class Grant:
    """What one token may do: its principal (``None`` for a plain-list token), memories and access,
    the record namespaces it is granted beyond its principal's own, and its durable tenant."""

    principal: str | None
    memories: tuple[str, ...]
    access: Access
    namespaces: tuple[str, ...] = ()
    tenant: str | None = None

    @property
    def own_namespace(self) -> str:
        """The record namespace the token's record tools use unless a call names another."""
        return self.principal or "default"

    def record_namespaces(self) -> tuple[str, ...]:
        """Every record namespace the token may name: its own first, then the granted ones."""
        return tuple(dict.fromkeys((self.own_namespace, *self.namespaces)))

    def reaches(self, memory: str) -> bool:
        return any(fnmatchcase(memory, pattern) for pattern in self.memories)

    def allows(self, access: Access) -> bool:
        return ACCESS_LEVELS.index(self.access) >= ACCESS_LEVELS.index(access)


FULL_ACCESS: Final = Grant(None, ("*",), "admin")

_log = logging.getLogger(__name__)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh random token (``gm_`` and 43 URL-safe characters: 256 bits)."""
    return "gm_" + secrets.token_urlsafe(32)


class Tokens:
    """The server's tokens, by hash; :meth:`grant` answers what a presented token may do."""

    def __init__(self, grants: Mapping[str, Grant] | None = None) -> None:
        self._by_hash = dict(grants or {})

    @classmethod
    def plain(cls, tokens: Iterable[str]) -> Tokens:
        return cls({hash_token(t): FULL_ACCESS for t in tokens if t})

    def _current(self) -> dict[str, Grant]:
        """The grants by hash as they are now (a token file reads itself again first when it changed)."""
        return self._by_hash

    def grant(self, token: str | None) -> Grant | None:
        if not token:
            return None
        # A dict lookup by hash: timing can at most tell the hash of a guess, never the token.
        return self._current().get(hash_token(token))

    def principals(self) -> list[str]:
        return sorted({g.principal for g in self._current().values() if g.principal})

    def __len__(self) -> int:
        return len(self._current())

    def __bool__(self) -> bool:
        return bool(self._current())


class TokenFile(Tokens):
    """The tokens of a file, read again when the file changes, plus fixed extra tokens (``$GITMEM_TOKENS``).

    Every question first compares the file's ``stat`` with the one last read (a
    system call, no read): a request is always answered by the file as it is now.
    """

    def __init__(self, path: str | os.PathLike[str], extra: Tokens | None = None) -> None:
        self.path = os.fspath(path)
        self.format = token_format(self.path)
        self._extra = extra or Tokens()
        self._lock = threading.Lock()
        self._seen: tuple[int, ...] | None = None
        super().__init__()
        self._seen, self._by_hash = self._read(strict=True)

    def _read(self, *, strict: bool) -> tuple[tuple[int, ...] | None, dict[str, Grant]]:
        """The file's ``lstat`` signature and its grants now (with the extra tokens); ``strict``: a bad
        file raises, else it grants nothing and the log says why."""
        seen: tuple[int, ...] | None = None
        try:
            try:
                seen = _signature(os.lstat(self.path))  # before the read: an edit after it is seen next time
            except FileNotFoundError:
                raise MemoryStoreError("unavailable", f"the token file {self.path} does not exist") from None
            table = parse_token_file(read_token_file(self.path), self.path, self.format)
        except (OSError, MemoryStoreError) as exc:
            reason = exc.message if isinstance(exc, MemoryStoreError) else f"cannot read {self.path}: {exc}"
            if strict:
                if isinstance(exc, MemoryStoreError):
                    raise
                raise MemoryStoreError("unavailable", reason) from exc
            _log.error("the token file %s no longer reads (%s): none of its tokens is accepted until it is fixed",
                       self.path, reason)  # fmt: skip
            table = Tokens()
        return seen, {**table._by_hash, **self._extra._by_hash}

    def _current(self) -> dict[str, Grant]:
        try:
            now: tuple[int, ...] | None = _signature(os.lstat(self.path))
        except OSError:
            now = None
        if now != self._seen:
            with self._lock:
                if now != self._seen:
                    seen, table = self._read(strict=False)
                    self._by_hash = table  # the table first: a reader that sees the new signature gets it
                    self._seen = seen
        return self._by_hash


def _signature(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def load_tokens(token_file: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Tokens:
    """The tokens of ``token_file`` (TOML, JSON or a plain list, by its name; followed as it changes) and of
    ``$GITMEM_TOKENS`` (plain, comma- or space-separated)."""
    env = os.environ if env is None else env
    extra = Tokens.plain(t for t in re.split(r"[\s,]+", env.get("GITMEM_TOKENS", "")) if t)
    if token_file is None:
        return extra
    return TokenFile(token_file, extra)


def token_format(path: str | os.PathLike[str]) -> TokenFormat:
    """The format of the token file at ``path``, by its extension alone: ``.toml``, ``.json``, else plain."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    return "toml" if suffix == ".toml" else "json" if suffix == ".json" else "plain"


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The text of the token file at ``path``: no link followed, never blocking, bounded, UTF-8.

    ``MemoryStoreError`` naming the reason otherwise (absent: ``unavailable``).
    """
    raw = read_control(path, TOKEN_FILE_LIMIT)
    if raw is None:
        raise MemoryStoreError("unavailable", f"the token file {os.fspath(path)} does not exist")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(os.fspath(path), f"not UTF-8 text (byte {exc.start})") from None


def parse_token_file(text: str, where: str = "the token file", fmt: TokenFormat = "toml") -> Tokens:
    """The tokens of a token file's ``text`` in format ``fmt`` (see :func:`token_format`); ``invalid_file``
    for anything else: the text is never looked at to choose a format, so nothing is read as a plain list
    (full access) that was not named one."""
    return Tokens({entry.sha256: entry.grant for entry in token_entries(text, where, fmt)})


@dataclass(frozen=True)
class TokenEntry:
    """One entry of a token file as written: the token's hash, what it grants, and its ``note``."""

    sha256: str
    grant: Grant
    note: str | None = None

    @property
    def id(self) -> str:
        """What ``gitmem token list`` shows and ``revoke``/``rotate`` take: the hash's first 12 hex digits."""
        return self.sha256[:TOKEN_ID_LENGTH]


#: Hex digits of a token's hash that name it (48 bits: a clash among a file's entries is refused, not guessed).
TOKEN_ID_LENGTH: Final = 12


def token_entries(text: str, where: str = "the token file", fmt: TokenFormat = "toml") -> list[TokenEntry]:
    """The entries of a token file's ``text`` in file order, checked as :func:`parse_token_file` checks them."""
    if text.startswith("\ufeff"):
        raise _bad(where, "starts with a byte-order mark: save it as UTF-8 without one")
    if fmt == "json":
        try:
            data: Any = parse_json(text, limit=TOKEN_FILE_LIMIT, what=where)
        except MemoryStoreError as exc:
            raise _bad(where, f"not valid JSON: {exc.message}") from None
        if not isinstance(data, dict) or set(data) != {"tokens"} or not isinstance(data["tokens"], list):
            raise _bad(where, 'a JSON token file is {"tokens": [{...}, ...]} and nothing else')
        return _entries(data["tokens"], where)
    if fmt == "toml":
        try:
            data = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise _bad(where, f"not valid TOML: {exc}") from None
        unknown = sorted(set(data) - {"token"})
        if unknown or not isinstance(data.get("token"), list):
            raise _bad(where, f"a TOML token file holds only [[token]] tables (found {unknown or 'no list'})")
        return _entries(data["token"], where)
    tokens: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not _PLAIN_TOKEN.fullmatch(line):
            # The line is not repeated: it may be a token with a typo.
            raise _bad(
                where,
                f"line {number} is not a token: a file not named *.toml or *.json is a plain list, one token "
                "(letters, digits, -._~+/ and a trailing =) per line; name a TOML token file *.toml, a JSON one *.json",
            )
        tokens.append(line)
    plain: dict[str, TokenEntry] = {}
    for token in tokens:
        digest = hash_token(token)
        plain.setdefault(digest, TokenEntry(digest, FULL_ACCESS))
    return list(plain.values())


def _entries(entries: list[Any], where: str) -> list[TokenEntry]:
    out: dict[str, TokenEntry] = {}
    for number, entry in enumerate(entries, 1):
        here = f"token {number}"
        if not isinstance(entry, dict):
            raise _bad(where, f"{here} is not a table")
        if "token" in entry:
            raise _bad(where, f"{here}: store the token's sha256 (`gitmem token` writes it), never the token")
        unknown = sorted(set(entry) - _KEYS)
        if unknown:
            raise _bad(where, f"{here} has unknown keys {unknown} ({', '.join(_KEYS_SHOWN)})")
        principal, digest, memories = entry.get("principal"), entry.get("sha256"), entry.get("memories")
        note = entry.get("note")
        if note is not None and not isinstance(note, str):
            raise _bad(where, f"{here}: note must be text")
        access = entry.get("access", "read")
        if not isinstance(principal, str) or not _PRINCIPAL.fullmatch(principal):
            raise _bad(where, f"{here}: principal must be letters, digits and ._@+=- (got {principal!r})")
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest.lower()):
            raise _bad(where, f"{here} ({principal}): sha256 must be 64 hex digits (`gitmem token` writes it)")
        if isinstance(memories, str):
            memories = [memories]
        if (
            not isinstance(memories, list)
            or not memories
            or not all(isinstance(m, str) and _GLOB.fullmatch(m) for m in memories)
        ):
            raise _bad(where, f"{here} ({principal}): memories must be a list of names or globs such as 'team-*'")
        if access not in ACCESS_LEVELS:
            raise _bad(where, f"{here} ({principal}): access must be one of {', '.join(ACCESS_LEVELS)}")
        if digest.lower() in out:
            raise _bad(where, f"{here} ({principal}): the same token is listed twice")
        namespaces, tenant = _names(entry, where, f"{here} ({principal})")
        grant = Grant(principal, tuple(memories), cast(Access, access), namespaces, tenant)
        out[digest.lower()] = TokenEntry(digest.lower(), grant, note)
    return list(out.values())


_KEYS_SHOWN: Final = ("principal", "sha256", "memories", "access", "namespaces", "tenant", "note")
_KEYS: Final = frozenset(_KEYS_SHOWN)


def _names(entry: dict[str, Any], where: str, here: str) -> tuple[tuple[str, ...], str | None]:
    """An entry's granted record ``namespaces`` (a list of exact names, in order, once each) and ``tenant``."""
    namespaces, tenant = entry.get("namespaces", []), entry.get("tenant")
    if isinstance(namespaces, str):
        namespaces = [namespaces]
    if not isinstance(namespaces, list) or not all(isinstance(n, str) and _NAME.fullmatch(n) for n in namespaces):
        raise _bad(where, f"{here}: namespaces must be a list of record namespace names (one line, 1-128 characters)")
    if namespaces:
        from gitmem.records.rules import encode_namespace

        for name in namespaces:
            try:
                encode_namespace(name)
            except MemoryStoreError as exc:
                raise _bad(where, f"{here}: namespace {name[:40]!r}: {exc.message}") from None
    if tenant is not None and (not isinstance(tenant, str) or not _NAME.fullmatch(tenant)):
        raise _bad(where, f"{here}: tenant must be one line of 1-128 characters")
    if tenant is not None:
        from gitmem.durable.namespace import check_identifier

        try:  # the rule every durable namespace applies, so no tenant is accepted here that reaches nothing there
            check_identifier("tenant", tenant)
        except MemoryStoreError as exc:
            raise _bad(where, f"{here}: {exc.message}") from None
    return tuple(dict.fromkeys(namespaces)), tenant


def token_entry(
    token: str,
    principal: str,
    memories: Iterable[str],
    access: Access,
    note: str | None = None,
    *,
    namespaces: Iterable[str] = (),
    tenant: str | None = None,
) -> str:
    """The TOML ``[[token]]`` table for ``token`` (its hash only), validated as the server will read it."""
    grant = Grant(principal, tuple(memories), access, tuple(namespaces), tenant)
    text = toml_table(TokenEntry(hash_token(token), grant, note))
    parse_token_file(text, "the new entry", "toml")
    return text


def entry_fields(entry: TokenEntry) -> dict[str, Any]:
    """``entry``'s keys as a token file holds them, in file order; the optional ones only when set."""
    g = entry.grant
    fields: dict[str, Any] = {
        "principal": g.principal or "",
        "sha256": entry.sha256,
        "memories": list(g.memories),
        "access": g.access,
    }
    if g.namespaces:
        fields["namespaces"] = list(g.namespaces)
    if g.tenant is not None:
        fields["tenant"] = g.tenant
    if entry.note is not None:
        fields["note"] = entry.note
    return fields


def toml_table(entry: TokenEntry) -> str:
    """``entry`` as the ``[[token]]`` table the server reads back to the same entry: the one writer of a table."""
    lines = ["[[token]]"]
    for key, value in entry_fields(entry).items():
        shown = f"[{', '.join(map(toml_string, value))}]" if isinstance(value, list) else toml_string(value)
        lines.append(f"{key} = {shown}")
    return "\n".join(lines) + "\n"


_TOML_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f]')
_TOML_SHORT = {'"': '\\"', "\\": "\\\\"}


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string: ``"``, ``\\``, U+0000-U+001F and U+007F escaped, the rest as UTF-8.

    Not ``json.dumps``: JSON writes a character beyond U+FFFF as two ``\\uD83D``-style
    surrogate escapes, which TOML refuses, and leaves DEL raw, which TOML refuses too.
    A lone surrogate (undecodable bytes of a command line) has no UTF-8 form: ``invalid_arguments``.
    """
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        raise MemoryStoreError(
            "invalid_arguments", f"{value.encode('utf-8', 'backslashreplace').decode()!r} is not valid UTF-8 text"
        )
    return '"' + _TOML_ESCAPED.sub(lambda m: _TOML_SHORT.get(m.group()) or f"\\u{ord(m.group()):04X}", value) + '"'


def _bad(where: str, detail: str) -> MemoryStoreError:
    return MemoryStoreError("invalid_file", f"{where}: {detail}")
