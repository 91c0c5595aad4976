"""Which store keeps which promise of the seam (mypy checks the same statically in each store module)."""

from __future__ import annotations

from pathlib import Path

from gitmem import (
    BatchFileStore,
    FileStore,
    ForwardingFileStore,
    HistoryStore,
    InMemoryFileStore,
    RunScopedStore,
    SearchableFileStore,
    SyncGitFileStore,
)


def test_the_git_store_implements_every_protocol(tmp_path: Path) -> None:
    store = SyncGitFileStore.init(tmp_path / "m.git")
    for protocol in (FileStore, SearchableFileStore, BatchFileStore, RunScopedStore, HistoryStore):
        assert isinstance(store, protocol), protocol.__name__
    assert isinstance(store.for_run("run-1"), RunScopedStore)


def test_the_twin_searches_and_batches_but_keeps_no_history_or_runs() -> None:
    store = InMemoryFileStore()
    for protocol in (FileStore, SearchableFileStore, BatchFileStore):
        assert isinstance(store, protocol), protocol.__name__
    assert not isinstance(store, RunScopedStore) and not isinstance(store, HistoryStore)


def test_a_forwarding_store_offers_the_contract_only() -> None:
    plain = ForwardingFileStore(InMemoryFileStore())
    assert isinstance(plain, FileStore)
    assert not isinstance(plain, SearchableFileStore) and not isinstance(plain, BatchFileStore)
