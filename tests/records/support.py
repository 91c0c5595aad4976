"""Record-store subjects for the contract tests: one over a git record mount, one over the twin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitmem import InMemoryFileStore, Root

KINDS = ("memory", "git")


def new_backend(kind: str, where: Path) -> Any:
    """A fresh file store for records: the in-memory twin, or the sync git store of a record mount."""
    if kind == "memory":
        return InMemoryFileStore()
    return Root(where).mount("facts", create=True, kind="record").sync
