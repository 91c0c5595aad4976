"""One ``gitmem serve`` per module on 127.0.0.1 (free port), always shut down; a fresh mount per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp
from gitmem.adapters.receive_pack import DEFAULT_MAX_PUSH_BYTES

from .support import TOKEN, Mount, Served


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = Root(tmp_path_factory.mktemp("served"))
    app = GitHttpApp(root, tokens=frozenset({TOKEN}))
    server = GitHttpServer(app, "127.0.0.1", 0).start()
    try:
        yield Served(root, app, server)
    finally:
        server.stop()
        assert server._thread is not None and not server._thread.is_alive(), "the server did not shut down"


_names = itertools.count()


@pytest.fixture
def mount(served: Served) -> Iterator[Mount]:
    name = f"m{next(_names)}"
    store = served.root.mount(name, create=True)
    yield Mount(name, store, Path(store.path))
    served.app.before_update = None
    served.app.public_read = False
    served.app.max_push_bytes = DEFAULT_MAX_PUSH_BYTES
