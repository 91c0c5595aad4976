from __future__ import annotations

from collections.abc import Iterator

import pytest
from race_support import Worker


@pytest.fixture(autouse=True)
def _no_worker_outlives_its_test() -> Iterator[None]:
    yield
    while Worker.live:
        Worker.live.pop().kill()
