"""The public API is what ``gitmem/__init__.py`` binds, and ``__all__`` says exactly that."""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from pathlib import Path

import gitmem

INIT = Path(gitmem.__file__)


def bound_names(source: str) -> set[str]:
    """Names the module body binds by import or assignment (not ``__future__`` features)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def public(names: set[str]) -> set[str]:
    return {n for n in names if not n.startswith("_") or n == "__version__"}


def test_the_documented_names_import() -> None:
    from gitmem import (  # noqa: F401
        Changes,
        FileEntry,
        FileFormat,
        FileText,
        FullResync,
        GitFileStore,
        GrepMatch,
        MemoryStoreError,
        Origin,
        Root,
        describe,
        validate_path,
    )


def type_checking_names(source: str) -> set[str]:
    """Names imported under ``if TYPE_CHECKING:`` (what mypy sees of the lazy exports)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            names |= bound_names(ast.unparse(node.body))
    return names


def test_all_lists_exactly_the_public_names_bound_in_init() -> None:
    """``import gitmem`` binds its exports lazily (``_LAZY``); mypy sees them as TYPE_CHECKING imports."""
    lazy = set(gitmem._LAZY)
    assert set(gitmem.__all__) == lazy | {"__version__"}
    assert type_checking_names(INIT.read_text()) == lazy
    for name, module in gitmem._LAZY.items():
        assert getattr(importlib.import_module(module), name) is getattr(gitmem, name), name


def test_all_is_sorted_and_without_duplicates() -> None:
    assert gitmem.__all__ == sorted(set(gitmem.__all__))


def test_every_exported_name_resolves_and_none_is_a_module() -> None:
    for name in gitmem.__all__:
        value = getattr(gitmem, name)
        assert not isinstance(value, types.ModuleType), name


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from gitmem import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(gitmem.__all__)


def test_no_public_attribute_escapes_all() -> None:
    """Anything public on the package at runtime (other than submodules) is exported."""
    stray = {
        name
        for name, value in vars(importlib.import_module("gitmem")).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    stray -= {"annotations", "TYPE_CHECKING", "Any"}  # what the lazy __init__ itself needs
    assert stray <= set(gitmem.__all__)


def test_the_checker_sees_what_it_must() -> None:
    source = "from __future__ import annotations\nfrom a import B as C, D\nimport e.f\nX = 1\nclass K: ...\n_p = 2\n"
    assert public(bound_names(source)) == {"C", "D", "e", "X", "K"}
