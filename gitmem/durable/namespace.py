"""Durable namespaces: who a node belongs to, and the folder that holds it.

A namespace is the exact triple ``(tenant, principal, scope)``. Every read and
write of durable memory names one, and nothing crosses from one to another: a
relation may only point at a node of the same namespace, and recall reads one
namespace's folder only.

The triple is caller input, so it is never used as a path directly. Each part
becomes a name: kept as is when it is a short, lower-case, plain name (``acme``,
``repo-a3s``), otherwise ``_`` plus a SHA-256 prefix of its bytes; the three are
joined with ``+`` into ONE top-level folder (``acme+alice+repo-a3s/``). A plain
name never starts with ``_`` and holds no ``+``, so no two namespaces share a
folder, and no part (``..``, ``a/b``, ``.git``, 256 bytes of anything) can reach
outside it. One folder rather than three keeps paths short: every folder on a
path is a tree git rebuilds on each write. The namespace is also written into
every node file and checked on read.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from gitmem.errors import MemoryStoreError

if TYPE_CHECKING:
    from gitmem.errors import ErrorCode

MAX_IDENTIFIER_BYTES: Final = 256
#: Joins the three parts of a namespace's folder name (plain parts never hold it).
SEPARATOR: Final = "+"

_PLAIN = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_HASHED_HEX = 32


def check_identifier(field: str, value: object, *, code: ErrorCode = "invalid_change_set") -> str:
    """``value`` if it is non-blank text of at most 256 UTF-8 bytes on one line.

    Identifiers end up in commit trailers and one-line listings, so control
    characters (newlines included) are refused as well.
    """
    if not isinstance(value, str):
        raise MemoryStoreError(code, f"{field} must be text, got {type(value).__name__}")
    if not value.strip():
        raise MemoryStoreError(code, f"{field} must not be blank")
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > MAX_IDENTIFIER_BYTES:
        raise MemoryStoreError(code, f"{field} is {size} bytes; the limit is {MAX_IDENTIFIER_BYTES}")
    if any(unicodedata.category(c) == "Cc" or c in "\u2028\u2029" for c in value):
        raise MemoryStoreError(code, f"{field} must be one line without control characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryStoreError(code, f"{field} is not valid UTF-8 (it holds a lone surrogate)") from None
    return value


def folder_name(value: str) -> str:
    """One path segment for an identifier: itself when plain, else ``_`` + a hash prefix."""
    if _PLAIN.fullmatch(value):
        return value
    return "_" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:_HASHED_HEX]


@dataclass(frozen=True, slots=True, order=True)
class Namespace:
    """The exact partition ``(tenant, principal, scope)`` a durable node lives in."""

    tenant: str
    principal: str
    scope: str

    def __post_init__(self) -> None:
        check_identifier("namespace.tenant", self.tenant)
        check_identifier("namespace.principal", self.principal)
        check_identifier("namespace.scope", self.scope)

    @property
    def folder(self) -> str:
        """The namespace's folder in the mount, ending with ``/``."""
        parts = (folder_name(self.tenant), folder_name(self.principal), folder_name(self.scope))
        return SEPARATOR.join(parts) + "/"

    def as_dict(self) -> dict[str, str]:
        return {"tenant": self.tenant, "principal": self.principal, "scope": self.scope}

    def label(self) -> str:
        """How the namespace is shown to people and in commit trailers."""
        return f"{self.tenant} / {self.principal} / {self.scope}"

    @classmethod
    def from_dict(cls, data: object) -> Namespace:
        if not isinstance(data, dict):
            raise MemoryStoreError("invalid_change_set", "namespace must be an object with tenant, principal and scope")
        unknown = sorted(set(data) - {"tenant", "principal", "scope"})
        if unknown:
            raise MemoryStoreError(
                "invalid_change_set", f"namespace has unknown fields: {', '.join(map(str, unknown))}"
            )
        return cls(data.get("tenant"), data.get("principal"), data.get("scope"))  # type: ignore[arg-type]
