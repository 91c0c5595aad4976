from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from records.support import KINDS, new_backend


@pytest.fixture(params=KINDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A fresh file store under a record store: the git store of a record mount, or the twin."""
    return new_backend(str(request.param), tmp_path)


@pytest.fixture
def git_backend(tmp_path: Path) -> Any:
    return new_backend("git", tmp_path)
