"""Run the frameworks' copied tests: their async tests, their marks, and the roots they leave."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.adapters.frameworks import shims

pytest.importorskip("langgraph.store.base")
pytest.importorskip("agents")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # no trace export (it would try the network)

_WRONG_KEY_POP = (
    "EncryptedSession checks the key inside the pop only for SQLiteSession; over GitMemSession a wrong-key "
    "pop removes the item (a commit: `gitmem restore` brings it back)"
)

#: Copied tests that fail against gitmem on purpose: each one's reason is in DIFFERENCES.md.
#: They run as strict xfails, so one that starts passing (or a new one failing) shows.
DIFFERS: dict[str, str] = {
    "test_langgraph_sqlite_store_suite.py::test_vector_store_initialization": "reads SqliteStore's sqlite connection",
    "test_langgraph_sqlite_store_suite.py::test_sql_injection_vulnerability": "no SQL: any filter key is a JSON key",
    "test_langgraph_sqlite_store_suite.py::test_scores": "scores are the recall engine's (fused ranks), not cosines",
    "test_langgraph_sqlite_store_suite.py::test_embed_with_path": "scores are the recall engine's, not cosines",
    "test_langgraph_async_sqlite_store_suite.py::test_embed_with_path": "scores are the recall engine's, not cosines",
    "test_langgraph_memory_store_suite.py::test_embed_with_path": "scores are the recall engine's, not cosines",
    "test_openai_session_suite.py::test_sqlite_session_closed_rejects_empty_add_items": (
        "GitMemSession holds no connection: close() releases nothing and refuses nothing"
    ),
    # EncryptedSession authenticates a pop inside the store's transaction only over the SDK's own
    # SQLiteSession (it checks the class); over any other store it pops first, then decrypts.
    "test_openai_encrypt_session_suite.py::test_encrypted_pop_wrong_key_preserves_recoverable_history": _WRONG_KEY_POP,
    "test_openai_encrypt_session_suite.py::test_encrypted_pop_rechecks_authentication_after_expired_tail": _WRONG_KEY_POP,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        file, _, name = item.nodeid.rpartition("/")[2].partition("::")
        reason = DIFFERS.get(f"{file}::{name.split('[')[0]}")
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def pytest_configure(config: pytest.Config) -> None:
    # The copies carry pytest-asyncio's and pytest-retry's marks; gitmem runs neither plugin
    # (a flaky test is a failure here), so the marks are only registered.
    config.addinivalue_line("markers", "asyncio: an async test (run by this folder's conftest)")
    config.addinivalue_line("markers", "flaky(retries): upstream retries it; gitmem does not")
    config.addinivalue_line("markers", "allow_call_model_methods: upstream lets it call a model class's methods")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """An ``async def`` test runs in its own event loop (what pytest-asyncio's auto mode does)."""
    function = pyfuncitem.obj
    if not inspect.iscoroutinefunction(function):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    arguments: dict[str, Any] = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(function(**arguments))
    return True


@pytest.fixture(autouse=True)
def _remove_roots() -> Iterator[None]:
    yield
    shims.remove_roots()
