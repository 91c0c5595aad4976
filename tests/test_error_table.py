"""docs/errors.md's table is the error tree's: every code, its meaning and what to do, in order."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gitmem import errors
from gitmem.errors import CODES, STORE_ERROR_CODES, TOOL_ERROR_CODES, MemoryStoreError

DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
ROW = re.compile(r"^\| `([a-z_]+)` \| (.+) \| (.+) \|$", re.M)


def expected_table() -> str:
    return "\n".join(f"| `{code}` | {meaning} | {what_to_do} |" for code, (meaning, what_to_do) in CODES.items())


def test_every_code_has_a_meaning_and_what_to_do() -> None:
    assert set(CODES) == STORE_ERROR_CODES | TOOL_ERROR_CODES
    for code, (meaning, what_to_do) in CODES.items():
        assert meaning.strip() and what_to_do.strip(), code
        MemoryStoreError(code)  # type: ignore[arg-type]  # every documented code can be raised
    with pytest.raises(ValueError, match="unknown error code"):
        MemoryStoreError("not_a_code")  # type: ignore[arg-type]


def literal_codes(alias: str) -> list[str]:
    """The codes of the type ``alias`` in errors.py (it exists for the type checker only, so it is read from the source)."""
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == alias for t in node.targets):
            assert isinstance(node.value, ast.Subscript)
            return [c.value for c in ast.walk(node.value.slice) if isinstance(c, ast.Constant)]
    raise AssertionError(f"no {alias} in errors.py")


def test_the_code_types_are_the_table() -> None:
    """A code the type checker accepts is one the table explains, and the other way round."""
    assert literal_codes("StoreErrorCode") == [c for c in CODES if c in STORE_ERROR_CODES]
    assert literal_codes("ToolErrorCode") == [c for c in CODES if c in TOOL_ERROR_CODES]


def test_the_docs_table_is_the_error_tree() -> None:
    rows = [m.group(0) for m in ROW.finditer(DOC.read_text(encoding="utf-8"))]
    assert "\n".join(rows) == expected_table(), "paste this table into docs/errors.md:\n" + expected_table()


def test_the_readme_and_the_cli_page_link_the_table() -> None:
    root = DOC.parents[1]
    assert "docs/errors.md" in (root / "README.md").read_text(encoding="utf-8")
    assert "(errors.md)" in (root / "docs" / "cli.md").read_text(encoding="utf-8")
