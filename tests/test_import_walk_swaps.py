"""A folder swapped for a link while ``gitmem import`` walks it brings in nothing from outside the folder.

The folder handed to import may be shared (a synced vault, a drop folder) with someone
who can rename and link in it while the import runs. Between the walk's look at an entry
and its use, a subfolder can become a link to a folder of the user's the other cannot read
(``~/.ssh``): listing it, reading its ``.gitignore`` or one of its files through the link
would import that folder's files into a memory. Every folder is entered, and every file
read, as the very one the walk looked at; one swapped meanwhile is refused and named.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gitmem import exchange
from gitmem.exchange import scan_folder
from gitmem.fileformat import FileFormat

SECRET = "outside: a file the folder's writer cannot read\n"


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    folder, outside = tmp_path / "vault", tmp_path / "private"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "a.md").write_text("inside\n")
    (folder / "notes" / ".gitignore").write_text("*.tmp\n")
    outside.mkdir()
    (outside / "a.md").write_text(SECRET)
    (outside / "id.md").write_text(SECRET)
    (outside / ".gitignore").write_text("a.md\n")
    return folder, outside


def _swap(folder: Path, outside: Path) -> None:
    """What the other writer does: the real folder moved away, a link to ``outside`` in its place."""
    os.rename(folder / "notes", folder / "notes.old")
    os.symlink(outside, folder / "notes")


def _once(monkeypatch: pytest.MonkeyPatch, name: str, when: Callable[..., bool], then: Callable[[], None]) -> None:
    real = getattr(exchange, name)
    done = []

    def hooked(*args: Any, **kwargs: Any) -> Any:
        if not done and when(*args):
            done.append(True)
            then()
        return real(*args, **kwargs)

    monkeypatch.setattr(exchange, name, hooked)


def _texts(folder: Path, **options: Any) -> dict[str, str]:
    scan = scan_folder(folder, FileFormat(), **options)
    refused = {r.path for r in scan.refused}
    return {path: text for path, text in scan.accepted} | {path: "(refused)" for path in refused}


@pytest.mark.parametrize("gitignore", [False, True])
def test_a_folder_swapped_for_a_link_after_the_walk_looked_at_it_is_not_entered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitignore: bool
) -> None:
    folder, outside = _folders(tmp_path)
    # The swap lands after the walk saw "notes" as a folder, before it lists it.
    real = exchange.ignorerules.ignored_by
    swapped = []

    def looked_at(rules: Any, path: str, is_dir: bool) -> Any:
        if path == "notes" and not swapped:
            swapped.append(True)
            _swap(folder, outside)
        return real(rules, path, is_dir)

    monkeypatch.setattr(exchange.ignorerules, "ignored_by", looked_at)
    texts = _texts(folder, gitignore=gitignore)
    assert swapped
    assert SECRET not in texts.values(), texts
    assert "notes/id.md" not in texts, texts


def test_a_file_whose_folder_is_swapped_for_a_link_before_it_is_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, outside = _folders(tmp_path)
    # The walk is over; the swap lands before the files are read.
    _once(monkeypatch, "validate_path", lambda rel, *a: rel == "notes/a.md", lambda: _swap(folder, outside))
    texts = _texts(folder)
    assert SECRET not in texts.values(), texts
    assert texts["notes/a.md"] == "(refused)", texts
