"""docs/errors.md's table is the error tree's: every code, its meaning and what to do, in order."""

from __future__ import annotations

import re
from pathlib import Path

from gitmem.errors import CODES, STORE_ERROR_CODES, TOOL_ERROR_CODES, MemoryStoreError

DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
ROW = re.compile(r"^\| `([a-z_]+)` \| (.+) \| (.+) \|$", re.M)


def expected_table() -> str:
    return "\n".join(f"| `{code}` | {m.meaning} | {m.what_to_do} |" for code, m in CODES.items())


def test_every_code_has_a_meaning_and_what_to_do() -> None:
    assert set(CODES) == STORE_ERROR_CODES | TOOL_ERROR_CODES
    for code, meaning in CODES.items():
        assert meaning.meaning.strip() and meaning.what_to_do.strip(), code
        MemoryStoreError(code)  # type: ignore[arg-type]  # every documented code can be raised


def test_the_docs_table_is_the_error_tree() -> None:
    rows = [m.group(0) for m in ROW.finditer(DOC.read_text(encoding="utf-8"))]
    assert "\n".join(rows) == expected_table(), "paste this table into docs/errors.md:\n" + expected_table()


def test_the_readme_and_the_cli_page_link_the_table() -> None:
    root = DOC.parents[1]
    assert "docs/errors.md" in (root / "README.md").read_text(encoding="utf-8")
    assert "(errors.md)" in (root / "docs" / "cli.md").read_text(encoding="utf-8")
