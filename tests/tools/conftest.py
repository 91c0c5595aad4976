from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools.support import KINDS, new_store


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(kind: str, tmp_path: Path) -> Any:
    """An empty memory of the parametrised kind (the in-memory twin, or a bare git repo)."""
    return new_store(kind, tmp_path)
