from __future__ import annotations

from pathlib import Path

import pytest
from contract.support import Subject, new_subject


@pytest.fixture
def mem(tmp_path: Path) -> Subject:
    """A git memory (``mem.repo`` is the bare repository)."""
    return new_subject("git", tmp_path / "store")
