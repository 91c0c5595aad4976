"""Editing a ``gitmem serve`` token file while the server runs: add, list, revoke, rotate.

The server reads its token file again whenever the file's ``stat`` changes
(:class:`gitmem.adapters.tokens.TokenFile`), on every request; so an edit here
is honoured from the server's next request, and revocation needs no restart.
Every edit is made so the server never sees half of it:

- the file is read as the server reads it (a control file: no link followed,
  never blocking, bounded) and refused, unchanged, when it does not parse;
- the new text is parsed as the server will parse it before it is written, so an
  edit can never leave a file that grants nothing;
- it replaces the file in one ``rename`` (:func:`gitmem.localfile.replace_private`);
- edits by two ``gitmem token`` processes at once take turns (an ``flock`` on the
  file's folder), so neither loses the other's change.

A TOML file is edited table by table: comments and the other entries stay as
written, and only the ``[[token]]`` tables concerned are dropped or replaced. A
JSON file is written back whole. A plain list (clear-text tokens with full access)
can be listed and revoked by id, not rotated: a new token belongs in a TOML file.

An entry is named by its **id**, the first 12 hex digits of its SHA-256 (never
the token, never the whole hash), or by its **principal** (every entry of it);
``id:`` or ``principal:`` before it says which, when a principal is named like an id.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gitmem.adapters.tokens import (
    TOKEN_ID_LENGTH,
    Access,
    TokenEntry,
    TokenFormat,
    entry_fields,
    hash_token,
    new_token,
    read_token_file,
    token_entries,
    token_entry,
    token_format,
    toml_table,
)
from gitmem.errors import MemoryStoreError
from gitmem.localfile import open_folder, replace_private

_TABLE = re.compile(r"^[ \t]*\[\[[ \t]*token[ \t]*\]\][ \t]*(?:#.*)?$", re.MULTILINE)
_ID = re.compile(r"^[0-9a-f]{6,64}$")
_NO_TABLES = re.compile(r"^[ \t]*token[ \t]*=[ \t]*\[[ \t]*\][ \t]*(?:#.*)?\n?", re.MULTILINE)


@dataclass(frozen=True)
class Rotated:
    """A rotation's outcome: the new token (shown once), its entry and the entry it replaced."""

    token: str
    entry: TokenEntry
    replaced: TokenEntry


def describe(entry: TokenEntry) -> dict[str, Any]:
    """What ``gitmem token list`` shows of an entry: never the token or its hash."""
    grant = entry.grant
    return {
        "id": entry.id,
        "principal": grant.principal,
        "memories": list(grant.memories),
        "access": grant.access,
        "namespaces": list(grant.namespaces),
        "tenant": grant.tenant,
        "note": entry.note,
    }


def list_tokens(path: str | os.PathLike[str]) -> list[TokenEntry]:
    """The entries of the token file at ``path``, in file order (an absent file has none)."""
    return _TokenText.read(path).entries


def add_token(
    path: str | os.PathLike[str],
    principal: str,
    memories: Sequence[str],
    access: Access,
    note: str | None = None,
    *,
    namespaces: Sequence[str] = (),
    tenant: str | None = None,
) -> tuple[str, TokenEntry]:
    """Mint a token for ``principal`` and add its entry to the TOML file at ``path``; the token and its entry.

    ``namespaces``: record namespaces it may name beyond its principal's own; ``tenant``: of its durable namespaces.
    """
    if token_format(path) != "toml":
        raise MemoryStoreError(
            "invalid_file",
            f"{os.fspath(path)}: a token is added to a TOML token file, named *.toml "
            "(a file of another name is a plain list of full-access tokens)",
        )
    secret = new_token()
    block = token_entry(secret, principal, memories, access, note, namespaces=namespaces, tenant=tenant)
    with _editing(path):
        text = _TokenText.read(path)
        text.write(text.appended(block))
    return secret, token_entries(block, "the new entry", "toml")[0]


def revoke_tokens(path: str | os.PathLike[str], who: str) -> list[TokenEntry]:
    """Drop every entry ``who`` names (a principal, or an id) from the file at ``path``; the entries dropped."""
    with _editing(path):
        text = _TokenText.read(path)
        gone = text.named(who)
        text.write(text.without({e.sha256 for e in gone}))
    return gone


def rotate_token(path: str | os.PathLike[str], who: str) -> Rotated:
    """Replace the one entry ``who`` names with a new token of the same principal, memories, access and note.

    The old token stops working on the server's next request; the new one is shown once.
    """
    with _editing(path):
        text = _TokenText.read(path)
        if text.format == "plain":
            raise MemoryStoreError(
                "invalid_file",
                f"{text.path} is a plain list of clear-text tokens: revoke the token here and add a new one "
                "to a TOML token file (named *.toml) instead",
            )
        found = text.named(who)
        if len(found) > 1:
            ids = ", ".join(e.id for e in found)
            raise MemoryStoreError("ambiguous_match", f"{who!r} names {len(found)} tokens ({ids}): give one id")
        old = found[0]
        secret = new_token()
        new = TokenEntry(hash_token(secret), old.grant, old.note)
        text.write(text.replacing(old, new))
    return Rotated(secret, new, old)


@contextmanager
def _editing(path: str | os.PathLike[str]) -> Iterator[None]:
    """One editor of the token file's folder at a time (an ``flock``; the kernel drops it if we die).

    The folder is the admin's choice and is reached as the server reaches it, through a link
    if it is one (``/etc/gitmem`` linked to a config tree); only the token file itself is read
    without following one. Two editors naming it by its link and by its real path lock one folder.
    """
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    try:
        fd = open_folder(folder, follow=True)
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot open {folder}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@dataclass
class _TokenText:
    """A token file's text, its format and entries, and the edits that keep the rest as written."""

    path: str
    format: TokenFormat
    text: str
    entries: list[TokenEntry]

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> _TokenText:
        where, fmt = os.fspath(path), token_format(path)
        try:
            text = read_token_file(path)
        except MemoryStoreError as exc:
            if exc.code != "unavailable" or os.path.lexists(path):
                raise
            text = ""  # no file yet: no entries
        return cls(where, fmt, text, _entries_to_edit(text, where, fmt))

    def named(self, who: str) -> list[TokenEntry]:
        """The entries ``who`` names: ``principal:NAME``, ``id:HEX``, or a bare principal or id.

        A bare selector that is a principal's name and also starts another entry's id
        is ``ambiguous_match`` (never the principal first: a principal named like an
        id must not shadow ``revoke <id>`` of a leaked token); ``not_found`` if none.
        """
        kind, colon, rest = who.partition(":")
        if colon and kind in ("principal", "id"):
            found = self._of_principal(rest) if kind == "principal" else self._of_id(rest)
        else:
            found, by_id = self._of_principal(who), self._of_id(who)
            if by_id and not {e.sha256 for e in by_id} <= {e.sha256 for e in found}:
                if found:
                    other = by_id[0]
                    raise MemoryStoreError(
                        "ambiguous_match",
                        f"{who!r} is principal {who} ({', '.join(e.id for e in found)}) and the start of id {other.id} "
                        f"(principal {other.grant.principal or 'plain token'}): give principal:{who} or id:{other.id}",
                    )
                found = by_id
        if found:
            return found
        raise MemoryStoreError(
            "not_found", f"no token of {self.path} has principal or id {who!r} (see `gitmem token list`)"
        )

    def _of_principal(self, name: str) -> list[TokenEntry]:
        return [e for e in self.entries if e.grant.principal == name]

    def _of_id(self, prefix: str) -> list[TokenEntry]:
        """The entry whose hash starts with ``prefix`` (6+ hex digits); ``ambiguous_match`` for several."""
        if not _ID.fullmatch(prefix.lower()):
            return []
        by_id = [e for e in self.entries if e.sha256.startswith(prefix.lower())]
        if len(by_id) > 1:
            raise MemoryStoreError("ambiguous_match", f"id {prefix!r} starts {len(by_id)} tokens' ids: give more of it")
        return by_id

    def appended(self, block: str) -> str:
        text = _NO_TABLES.sub("", self.text) if not self.entries else self.text
        joined = "" if not text.strip() or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
        return text + joined + block

    def without(self, gone: set[str]) -> str:
        return self._edited({digest: None for digest in gone})

    def replacing(self, old: TokenEntry, new: TokenEntry) -> str:
        return self._edited({old.sha256: new})

    def _edited(self, changes: dict[str, TokenEntry | None]) -> str:
        """The file's text with each entry in ``changes`` dropped (``None``) or replaced."""
        if self.format == "json":
            kept = [entry_fields(new) for e in self.entries if (new := changes.get(e.sha256, e)) is not None]
            return json.dumps({"tokens": kept}, indent=2, ensure_ascii=False) + "\n"
        if self.format == "plain":
            out = []
            for line in self.text.splitlines(keepends=True):
                token = line.strip()
                if token and not token.startswith("#") and hash_token(token) in changes:
                    continue  # a plain list is only ever revoked from: a change here is a drop
                out.append(line)
            return "".join(out)
        blocks = self._toml_blocks()
        if blocks is None:  # tables that do not split cleanly (e.g. a string holding "[[token]]"): write them anew
            return "".join(_toml_block(changes.get(e.sha256, e)) for e in self.entries)
        preamble, parts = blocks
        out = [preamble]
        for entry, part in parts:
            if entry.sha256 not in changes:
                out.append(part)
            else:
                out.append(_toml_block(changes[entry.sha256]) + _trailing(part))
        if all(entry.sha256 in changes and changes[entry.sha256] is None for entry, _ in parts):
            # A TOML file without tables does not parse as a token file (it would grant nothing, with an error
            # in the server's log): the empty list says "no tokens" on purpose.
            out.append("token = []\n")
        return "".join(out)

    def _toml_blocks(self) -> tuple[str, list[tuple[TokenEntry, str]]] | None:
        """The text before the first ``[[token]]`` and each table's text, when each table parses alone to its entry."""
        starts = [m.start() for m in _TABLE.finditer(self.text)]
        if len(starts) != len(self.entries):
            return None
        parts = [self.text[a:b] for a, b in zip(starts, [*starts[1:], len(self.text)], strict=True)]
        out: list[tuple[TokenEntry, str]] = []
        for entry, part in zip(self.entries, parts, strict=True):
            try:
                alone = token_entries(part, self.path, "toml")
            except MemoryStoreError:
                return None
            if alone != [entry]:
                return None
            out.append((entry, part))
        return self.text[: starts[0]] if starts else self.text, out

    def write(self, text: str) -> None:
        """Replace the file with ``text``, after checking the server would read it."""
        if text.strip():
            token_entries(text, self.path, self.format)
        try:
            replace_private(self.path, text)
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot write {self.path}: {exc.strerror or exc}") from None


def _entries_to_edit(text: str, where: str, fmt: TokenFormat) -> list[TokenEntry]:
    """The entries of a file about to be edited; a TOML file of comments only (refused by the server) has none."""
    if not text.strip():
        return []
    try:
        return token_entries(text, where, fmt)
    except MemoryStoreError:
        if fmt != "toml" or token_entries(text + "\ntoken = []\n", where, fmt) != []:
            raise
        return []


def _toml_block(entry: TokenEntry | None) -> str:
    return "" if entry is None else toml_table(entry)


def _trailing(part: str) -> str:
    """The blank lines and comments after a table's last key (they belong to what follows)."""
    lines = part.splitlines(keepends=True)
    tail: list[str] = []
    for line in reversed(lines):
        if line.strip() and not line.lstrip().startswith("#"):
            break
        tail.append(line)
    return "".join(reversed(tail))


__all__ = ["TOKEN_ID_LENGTH", "Rotated", "add_token", "describe", "list_tokens", "revoke_tokens", "rotate_token"]
