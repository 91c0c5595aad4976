from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from contract.support import KINDS, Subject, new_subject
from gitmem import FileFormat


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_store(kind: str, tmp_path: Path) -> Callable[..., Subject]:
    """Build a fresh store of the parametrised kind, optionally with other limits."""
    count = 0

    def make(fmt: FileFormat | None = None) -> Subject:
        nonlocal count
        count += 1
        where = tmp_path / f"s{count}"
        where.mkdir()
        return new_subject(kind, where, fmt)

    return make


@pytest.fixture
def store(make_store: Callable[..., Subject]) -> Subject:
    return make_store()


@pytest.fixture
def git_store(tmp_path: Path) -> Subject:
    """A git store alone, for the rows of the contract that speak of commits."""
    return new_subject("git", tmp_path)
