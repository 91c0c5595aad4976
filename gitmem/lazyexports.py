"""A package's public names, each imported from its module on first use (PEP 562).

``import gitmem`` (or ``gitmem.session``, ``gitmem.durable``) must not load the
modules behind every name it exports: a CLI call pays for each import, and most
calls use a few names. A package declares ``{name: module}`` and takes its module
``__getattr__`` and ``__dir__`` from :func:`exports`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def exports(
    package: str, table: Mapping[str, str], namespace: MutableMapping[str, Any], names: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: a name of ``table`` is imported once, then kept in ``namespace``."""

    def getattr_(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups skip this function
        return value

    def dir_() -> list[str]:
        return sorted(names)

    return getattr_, dir_
