"""Refresh the copies of the frameworks' own tests from their released source distributions.

    .venv/bin/python tests/adapters/frameworks/refresh_upstream.py [--check]

The releases are pinned here, in :data:`RELEASES` (the one place: bump a version
and run this). For each release the script downloads its source distribution with
pip (``pip download --no-binary :all: --no-deps name==version``), takes the test
files :data:`COPIES` lists, applies each copy's mechanical changes - the header
naming the source and the licence, the stand-ins from ``shims.py`` in place of the
framework's own store or session, the tests left out with their reasons in
``DIFFERENCES.md`` - and writes them beside this file with the licence the
distribution ships (``LICENSE-<project>``). A change a copy asks for that no
longer matches the new release stops the script with the copy and the change
named: the rules are then updated by a person, never silently skipped.

``--check`` writes nothing and exits 1 when a copy differs from what the pinned
releases give (run it after a bump, or to see that nobody edited a copy by hand).
It needs the package index; the tests themselves run offline.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: The releases the copies come from: the one place their versions are pinned.
RELEASES: dict[str, str] = {
    "langgraph": "1.2.24",
    "langgraph-checkpoint": "4.3.2",
    "langgraph-checkpoint-sqlite": "3.1.2",
    "openai-agents": "0.24.0",
}
#: The licence file each distribution's LICENSE is copied to.
LICENSES: dict[str, str] = {
    "langgraph": "LICENSE-langgraph",
    "langgraph-checkpoint": "LICENSE-langgraph",
    "langgraph-checkpoint-sqlite": "LICENSE-langgraph",
    "openai-agents": "LICENSE-openai-agents",
}


@dataclass(frozen=True)
class Copy:
    """One upstream file and the mechanical changes that make it run against gitmem."""

    dist: str
    source: str  # path inside the distribution
    target: str  # file name beside this script
    note: str = "Changed on purpose, and why: DIFFERENCES.md."
    replace: tuple[tuple[str, str], ...] = ()  # exact text -> text; each must occur
    regex: tuple[tuple[str, str], ...] = ()  # pattern -> replacement; each must match
    drop: tuple[str, ...] = ()  # top-level tests (with their decorators) left out
    drop_methods: tuple[str, ...] = ()  # test methods of a class left out
    helper: bool = False  # a helper module, not a test file
    keep: tuple[str, ...] = ()  # only these top-level tests (with their decorators), after ``prelude``
    prelude: str = ""  # with ``keep``: the imports and fixtures in place of the file's own header

    def header(self) -> str:
        licence = LICENSES[self.dist]
        lines = [
            f"# Copied from {self.dist} {RELEASES[self.dist]} (its source distribution): {self.source}",
            f"# (MIT, see {licence} beside this file). {self.note}",
            "# Written by refresh_upstream.py: change the rules there, not this file.",
            "# ruff: noqa",
            "# mypy: ignore-errors",
        ]
        return "\n".join(lines) + "\n"


SESSION_NOTE = (
    "Changed on purpose, and why: DIFFERENCES.md.\n"
    "# The session under test is GitMemSession: SQLiteSession below is tests/adapters/frameworks/shims.py's."
)
STORE_NOTE = (
    "Changed on purpose, and why: DIFFERENCES.md.\n"
    "# The store under test is GitMemStore (tests/adapters/frameworks/shims.py)."
)
SDK_HELPERS = (
    ("from tests.test_responses import", "from tests.adapters.frameworks.sdk_test_responses import"),
    ("from tests.model_test_helpers import", "from tests.adapters.frameworks.sdk_model_test_helpers import"),
    ("from tests.utils.simple_session import", "from tests.adapters.frameworks.sdk_simple_session import"),
)
ONE_SQLITE_KIND = (r'params=\["memory", "file"\]', 'params=["memory"]')
ONE_CONN_TYPE = (r'parametrize\("conn_type", \["memory", "file"\]\)', 'parametrize("conn_type", ["memory"])')

GRAPH_NOTE = (
    "Only the tests that run a store inside a graph; the rest of the file is langgraph's runtime.\n"
    "# The store under test is GitMemStore, the checkpointer LangGraph's InMemorySaver (the prelude's fixtures)."
)
GRAPH_PRELUDE = '''import operator
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore
from langgraph.types import StreamWriter
from typing_extensions import TypedDict

from gitmem.adapters.langgraph_store import GitMemStore
from tests.adapters.frameworks.support import fsck

NEEDS_CONTEXTVARS = pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.11+ is required")


@pytest.fixture
def sync_checkpointer() -> BaseCheckpointSaver:
    return InMemorySaver()


@pytest.fixture
def async_checkpointer() -> BaseCheckpointSaver:
    return InMemorySaver()


@pytest.fixture
def sync_store(tmp_path: Path) -> Iterator[GitMemStore]:
    store = GitMemStore.open(tmp_path / "root")
    yield store
    store.close()
    fsck(tmp_path / "root" / "langgraph.git")  # every commit the graph made


async_store = sync_store'''

COPIES: tuple[Copy, ...] = (
    # -- langgraph: a store inside a compiled graph (pregel) ----------------------------------------
    Copy("langgraph", "tests/test_pregel.py", "test_langgraph_graph_store_suite.py", note=GRAPH_NOTE,
         keep=("test_store_injected", "test_overriding_injectable_args_with_tasks"), prelude=GRAPH_PRELUDE),
    Copy("langgraph", "tests/test_pregel_async.py", "test_langgraph_graph_store_async_suite.py", note=GRAPH_NOTE,
         keep=("test_store_injected_async", "test_overriding_injectable_args_with_async_task"),
         prelude=GRAPH_PRELUDE),
    # -- openai-agents: the session, its compaction and its encryption --------------------------
    Copy("openai-agents", "tests/test_responses.py", "sdk_test_responses.py",
         note="A helper of the copied SDK tests, unchanged but for its imports.", replace=(), helper=True),
    Copy("openai-agents", "tests/model_test_helpers.py", "sdk_model_test_helpers.py",
         note="A helper of the copied SDK tests, unchanged but for its imports.", helper=True),
    Copy("openai-agents", "tests/utils/simple_session.py", "sdk_simple_session.py",
         note="A helper of the copied SDK tests, unchanged but for its imports.", helper=True),
    Copy(
        "openai-agents", "tests/memory/test_session_limit.py", "test_openai_session_limit_suite.py", note=SESSION_NOTE,
        replace=(
            ("from agents import Agent, RunConfig, SQLiteSession\n",
             "from agents import Agent, RunConfig\nfrom tests.adapters.frameworks.shims import SQLiteSession\n"),
            ("from tests.memory.test_session import run_agent_async\n",
             "from tests.adapters.frameworks.test_openai_session_suite import run_agent_async\n"),
        ),
    ),
    Copy(
        "openai-agents", "tests/memory/test_openai_responses_compaction_session.py",
        "test_openai_compaction_session_suite.py", note=SESSION_NOTE,
        replace=(
            ("    SessionSettings,\n    SQLiteSession,\n", "    SessionSettings,\n"),
            ("from tests.utils.simple_session import SimpleListSession\n",
             "from tests.utils.simple_session import SimpleListSession\nfrom tests.adapters.frameworks.shims import SQLiteSession\n"),
        ),
        drop_methods=("test_settled_pop_failure_invalidates_response_chain",
                      "test_settled_clear_failure_invalidates_response_chain"),
    ),
    Copy(
        "openai-agents", "tests/memory/test_compaction_model_visibility.py",
        "test_openai_compaction_visibility_suite.py", note=SESSION_NOTE,
        replace=(
            ("from agents.memory import OpenAIResponsesCompactionSession, Session, SQLiteSession\n",
             "from agents.memory import OpenAIResponsesCompactionSession, Session\n"),
            ("from tests.utils.simple_session import IdStrippingSession, SimpleListSession\n",
             "from tests.utils.simple_session import IdStrippingSession, SimpleListSession\n"
             "from tests.adapters.frameworks.shims import SQLiteSession\n"),
        ),
    ),
    Copy(
        "openai-agents", "tests/memory/test_compaction_suffix.py", "test_openai_compaction_suffix_suite.py",
        note=SESSION_NOTE,
        replace=(
            ('pytest.importorskip("aiosqlite")\n', ""),
            ("from agents.extensions.memory.async_sqlite_session import AsyncSQLiteSession\n", ""),
            ("from agents.memory import OpenAIResponsesCompactionSession, SQLiteSession\n",
             "from agents.memory import OpenAIResponsesCompactionSession\n"),
            ("from tests.test_responses import get_text_message\n",
             "from tests.adapters.frameworks.agents_helpers import get_text_message\n"
             "from tests.adapters.frameworks.shims import AsyncSQLiteSession, SQLiteSession\n"),
            ('@pytest.fixture(params=[False, True], ids=["sqlite", "async-sqlite"])\n'
             "async def backend(request: pytest.FixtureRequest, tmp_path: Path):\n"
             "    factory = AsyncSQLiteSession if request.param else SQLiteSession\n"
             '    store = factory("suffix", tmp_path / "history.db", session_settings={"limit": 20})\n'
             "    await store.get_items()\n"
             "    yield store\n"
             "    if isinstance(store, AsyncSQLiteSession):\n"
             "        await store.close()\n"
             "    else:\n"
             "        store.close()\n",
             '@pytest.fixture(params=[False], ids=["sqlite"])\n'
             "def backend(request: pytest.FixtureRequest, tmp_path: Path):\n"
             "    factory = AsyncSQLiteSession if request.param else SQLiteSession\n"
             '    store = factory("suffix", tmp_path / "history.db", session_settings={"limit": 20})\n'
             "    yield store\n"
             "    store.close()\n"),
        ),
        drop=("test_suffix_transaction_rolls_back_failed_insert",
              "test_cancelled_suffix_transaction_settles_before_newer_append",
              "test_failed_encrypted_suffix_transaction_preserves_original_tokens"),
    ),
    Copy(
        "openai-agents", "tests/extensions/memory/test_encrypt_session.py", "test_openai_encrypt_session_suite.py",
        note=SESSION_NOTE,
        replace=(
            ("    SessionSettings,\n    SQLiteSession,\n    TResponseInputItem,\n",
             "    SessionSettings,\n    TResponseInputItem,\n"),
            ("from tests.test_responses import get_function_tool_call, get_text_message\n",
             "from tests.adapters.frameworks.agents_helpers import get_function_tool_call, get_text_message\n"
             "from tests.adapters.frameworks.shims import SQLiteSession\n"),
            ("    from tests.test_responses import get_text_message\n",
             "    from tests.adapters.frameworks.agents_helpers import get_text_message\n"),
        ),
        drop=("test_encrypted_pop_authentication_is_atomic_with_concurrent_mutations",
              "test_encrypted_pop_wrong_key_preserves_row_identity",
              "test_encrypted_pop_cancellation_waits_for_authentication_rollback",
              "test_encrypted_pop_preserves_sqlalchemy_history",
              "test_encrypted_session_scan_budget_does_not_turn_redis_negative_limit_into_history"),
    ),
    Copy(
        "openai-agents", "tests/memory/test_session.py", "test_openai_session_suite.py", note=SESSION_NOTE,
        replace=(
            ("from agents import Agent, RunConfig, Runner, SessionSettings, SQLiteSession, TResponseInputItem\n",
             "from agents import Agent, RunConfig, Runner, SessionSettings, TResponseInputItem\n"),
            ("from agents.memory.sqlite_session import _await_mutation\n", ""),
            ("from tests.test_responses import get_text_message\n",
             "from tests.adapters.frameworks.agents_helpers import get_text_message\n"
             "from tests.adapters.frameworks.shims import SQLiteSession\n"),
        ),
        drop=(  # SQLite's connections, transactions, locks and corrupt rows, and the SDK's private _await_mutation
            "test_await_mutation_cancellation_hides_later_failure_without_loop_error",
            "test_sqlite_session_close_closes_worker_thread_connections",
            "test_sqlite_session_close_retries_quarantined_connection",
            "test_sqlite_session_closes_retired_connections_before_the_next_allocation",
            "test_sqlite_session_failed_add_items_releases_write_lock",
            "test_sqlite_session_failed_clear_session_rolls_back",
            "test_sqlite_session_failed_pop_item_releases_write_lock",
            "test_sqlite_session_file_lock_is_shared_across_instances",
            "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
            "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows",
            "test_sqlite_session_keeps_connections_of_live_worker_threads",
            "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
            "test_sqlite_session_pop_item_skips_corrupt_most_recent",
            "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome",
            "test_sqlite_session_reaps_connections_from_exited_worker_threads",
            "test_sqlite_session_rollback_failure_evicts_connection",
        ),
    ),
    # -- langgraph: the SQLite store's suites ----------------------------------------------------
    Copy(
        "langgraph-checkpoint", "tests/embed_test_utils.py", "embed_test_utils.py",
        note="A helper of the copied store tests, unchanged.", helper=True,
    ),
    Copy(
        "langgraph-checkpoint-sqlite", "tests/test_store.py", "test_langgraph_sqlite_store_suite.py", note=STORE_NOTE,
        replace=(
            ("from langgraph.store.sqlite import SqliteStore\n"
             "from langgraph.store.sqlite.base import (\n"
             "    NS_MATCH_FUNCTION,\n"
             "    BaseSqliteStore,\n"
             "    SqliteIndexConfig,\n"
             "    _escape_glob_literal,\n"
             "    _namespace_match_pattern,\n"
             ")\n",
             "from tests.adapters.frameworks.shims import SqliteStore\n\nSqliteIndexConfig = dict\n"),
        ),
        regex=(ONE_SQLITE_KIND, ONE_CONN_TYPE),
        drop=("test_nonnull_migrations", "test_escape_glob_literal", "test_namespace_match_pattern",
              "test_list_namespaces_prefix_uses_indexable_condition"),
    ),
    Copy(
        "langgraph-checkpoint-sqlite", "tests/test_async_store.py", "test_langgraph_async_sqlite_store_suite.py",
        note=STORE_NOTE,
        replace=(
            ("from collections.abc import AsyncIterator, Generator, Iterable\n",
             "from collections.abc import AsyncIterator, Generator, Iterable, Iterator\n"),
            ("from langgraph.store.sqlite import AsyncSqliteStore\n"
             "from langgraph.store.sqlite.base import SqliteIndexConfig\n"
             "from tests.test_store import CharacterEmbeddings\n",
             "from tests.adapters.frameworks.shims import AsyncSqliteStore\n"
             "from tests.adapters.frameworks.test_langgraph_sqlite_store_suite import CharacterEmbeddings\n"
             "\nSqliteIndexConfig = dict\n"),
            ('@pytest.fixture(scope="function", params=["memory", "file"])\n'
             "async def store(request: pytest.FixtureRequest) -> AsyncIterator[AsyncSqliteStore]:\n"
             '    """Create an AsyncSqliteStore for testing."""\n'
             '    if request.param == "memory":\n'
             "        # In-memory store\n"
             '        async with AsyncSqliteStore.from_conn_string(":memory:") as store:\n'
             "            await store.setup()\n"
             "            yield store\n"
             "    else:\n"
             "        # Temporary file store\n"
             "        temp_file = tempfile.NamedTemporaryFile(delete=False)\n"
             "        temp_file.close()\n"
             "        try:\n"
             "            async with AsyncSqliteStore.from_conn_string(temp_file.name) as store:\n"
             "                await store.setup()\n"
             "                yield store\n"
             "        finally:\n"
             "            os.unlink(temp_file.name)\n",
             '@pytest.fixture(scope="function", params=["memory"])  # gitmem: one kind of store (a mount in a temporary folder)\n'
             "def store(request: pytest.FixtureRequest) -> Iterator[AsyncSqliteStore]:\n"
             '    """Create a store for testing (gitmem: a sync fixture; each async test runs in its own loop)."""\n'
             "    from tests.adapters.frameworks.shims import _AsyncTestStore, root_for\n"
             "\n"
             '    store = _AsyncTestStore.open(root_for(":memory:" if request.param == "memory" else request.node.name))\n'
             "    yield store\n"
             "    store.close()\n"),
        ),
        regex=(ONE_SQLITE_KIND,),
        drop=("test_no_running_loop",),
    ),
    Copy(
        "langgraph-checkpoint-sqlite", "tests/test_ttl.py", "test_langgraph_ttl_suite.py",
        note=STORE_NOTE + "\n# The waits for a TTL to run out advance a fake clock (shims.FakeClock) instead of sleeping,"
        "\n# except in the two sweeper-thread tests, which wait for the real thread.",
        replace=(
            ("from langgraph.store.sqlite import SqliteStore\nfrom langgraph.store.sqlite.aio import AsyncSqliteStore\n",
             "from tests.adapters.frameworks.shims import AsyncSqliteStore, FakeClock, SqliteStore\n"
             "\n\n"
             "def _sleep(seconds: float) -> None:\n"
             "    clock = SqliteStore.clock\n"
             "    (clock.sleep if clock is not None else time.sleep)(seconds)\n"
             "\n\n"
             "async def _asleep(seconds: float) -> None:\n"
             "    clock = AsyncSqliteStore.clock\n"
             "    await (clock.asleep if clock is not None else asyncio.sleep)(seconds)\n"
             "\n\n"
             "@pytest.fixture(autouse=True)\n"
             "def clock(request: pytest.FixtureRequest) -> Generator[FakeClock, None, None]:\n"
             '    """A fake clock for every test but the sweeper tests (they wait for a real thread)."""\n'
             '    fake = None if "sweeper" in request.node.name else FakeClock()\n'
             "    SqliteStore.clock = AsyncSqliteStore.clock = fake\n"
             "    yield fake\n"
             "    SqliteStore.clock = AsyncSqliteStore.clock = None\n"),
        ),
        regex=((r"\bawait asyncio\.sleep\(", "await _asleep("), (r"\btime\.sleep\(", "_sleep(")),
    ),
    Copy(
        "langgraph-checkpoint", "tests/test_store.py", "test_langgraph_memory_store_suite.py", note=STORE_NOTE,
        replace=(
            ("from pytest_mock import MockerFixture\n", ""),
            ("from langgraph.store.memory import InMemoryStore\nfrom tests.embed_test_utils import CharacterEmbeddings\n",
             "from tests.adapters.frameworks.embed_test_utils import CharacterEmbeddings\n"
             "from tests.adapters.frameworks.shims import InMemoryStore\n"),
        ),
        drop=(
            # LangGraph's own helpers, no store
            "test_dedupe_ops_maps_repeated_reads_and_puts_to_one_op", "test_get_text_at_path",
            "test_get_text_at_path_with_non_dict_mapping", "test_validate_op_namespace_rejects_invalid_labels",
            "test_validate_op_namespace_allows_empty_prefix_and_wildcards",
            # through pytest-mock, which gitmem does not install
            "test_async_batch_store", "test_async_batch_store_deduplication", "test_rejects_invalid_namespace_labels",
            "test_async_rejects_invalid_namespace_labels",
        ),
    ),
)  # fmt: skip


class RuleMismatch(Exception):
    """A copy's rule no longer matches the release: a person updates the rule."""


def _drop(text: str, name: str, *, method: bool) -> str:
    """``text`` without test ``name``: its decorators, signature and body, up to the next statement at its level."""
    start, end = _span(text, name, method=method)
    lines = text.split("\n")
    return "\n".join(lines[:start] + lines[end:])


def _keep(text: str, names: tuple[str, ...]) -> str:
    """Only the top-level tests ``names`` of ``text`` (each with its decorators), two blank lines apart."""
    lines = text.split("\n")
    kept = []
    for name in names:
        start, end = _span(text, name, method=False)
        kept.append("\n".join(lines[start:end]).strip("\n"))
    return "\n\n\n".join(kept) + "\n"


def _span(text: str, name: str, *, method: bool) -> tuple[int, int]:
    """The lines of test ``name``: from its first decorator to the next statement at its level."""
    indent = "    " if method else ""
    lines = text.split("\n")
    start_re = re.compile(rf"^{indent}(?:async )?def {re.escape(name)}\(")
    at = next((i for i, line in enumerate(lines) if start_re.match(line)), None)
    if at is None:
        raise RuleMismatch(f"no test {name!r} to leave out")
    start = at
    while start > 0:  # back over its decorators, a multi-line one (ending in a bare ")") included
        above = lines[start - 1]
        if above.startswith(indent + "@"):
            start -= 1
        elif above == indent + ")":
            head = start - 2
            while head >= 0 and not lines[head].startswith(indent + "@"):
                head -= 1
            if head < 0:
                break
            start = head
        else:
            break
    end = at + 1
    while end < len(lines):
        line = lines[end]
        deeper = len(line) - len(line.lstrip()) > len(indent)
        if not line.strip() or deeper or line.startswith(indent + ")"):
            end += 1
            continue
        break
    return start, end


def transform(copy: Copy, text: str) -> str:
    for old, new in copy.replace:
        if old not in text:
            raise RuleMismatch(f"{copy.target}: the text to replace is gone: {old[:80]!r}")
        text = text.replace(old, new)
    for pattern, new in copy.regex:
        text, n = re.subn(pattern, new, text)
        if n == 0:
            raise RuleMismatch(f"{copy.target}: the pattern {pattern!r} matches nothing")
    for name in copy.drop:
        text = _drop(text, name, method=False)
    for name in copy.drop_methods:
        text = _drop(text, name, method=True)
    if copy.keep:
        text = copy.prelude + "\n\n" + _keep(text, copy.keep)
    for old, new in SDK_HELPERS:
        text = text.replace(old, new)
    return copy.header() + text


def download(dist: str, version: str, into: Path) -> Path:
    """The distribution's unpacked source folder (pip fetches the sdist; nothing is built or installed)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps", "-d", str(into),
         f"{dist}=={version}"],
        check=True,
    )  # fmt: skip
    stem = f"{dist.replace('-', '_')}-{version}"
    archive = into / f"{stem}.tar.gz"
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / stem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a copy differs")
    args = parser.parse_args(argv)
    differ = 0
    with tempfile.TemporaryDirectory(prefix="gitmem-upstream-") as tmp:
        sources = {dist: download(dist, version, Path(tmp)) for dist, version in RELEASES.items()}
        outputs: dict[str, str] = {}
        for dist, folder in sources.items():
            outputs[LICENSES[dist]] = (folder / "LICENSE").read_text(encoding="utf-8")
        for copy in COPIES:
            outputs[copy.target] = transform(copy, (sources[copy.dist] / copy.source).read_text(encoding="utf-8"))
    for name, text in outputs.items():
        target = HERE / name
        old = target.read_text(encoding="utf-8") if target.exists() else ""
        if old == text:
            continue
        differ += 1
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), name, name, n=1))
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {name}")
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
