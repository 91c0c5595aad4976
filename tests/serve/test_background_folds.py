"""``gitmem serve`` folds packs on a thread of its own: no write's reply waits for a fold, and the count stays bounded.

In-process for the engine's hand-over (which thread folds, the bound when the
folds fall behind, folding in the writer again once the server stops), and one
real ``gitmem serve`` process whose MCP writes are folded behind their replies.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from contract.support import assert_fsck_clean

from bench.mcp_http_client import HttpMcpClient
from gitmem import GitFileStore
from gitmem.adapters.folding import BackgroundFolds
from gitmem.adapters.http_front import _WarmFirst
from gitmem.adapters.tokens import token_entry
from gitmem.git import engine, packwrite
from gitmem.git.repo import GitRepo

from .support import start_serve, stop_serve


@pytest.fixture
def folds() -> Iterator[BackgroundFolds]:
    started = BackgroundFolds().start()
    try:
        yield started
    finally:
        started.close()
    assert engine.fold_elsewhere(None) is None  # closing gave the folds back to the writers


def _folders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that fold, from now on."""
    names: list[str] = []
    real = engine.fold

    def fold(repo: GitRepo) -> None:
        names.append(threading.current_thread().name)
        real(repo)

    monkeypatch.setattr(engine, "fold", fold)
    return names


def test_a_due_fold_runs_on_the_servers_thread_after_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folds: BackgroundFolds
) -> None:
    monkeypatch.setattr(engine, "MAX_PACKS", 4)
    names = _folders(monkeypatch)
    store = GitFileStore.init(tmp_path / "m.git").sync
    for n in range(3 * (engine.MAX_PACKS + 1)):
        store.write(f"f{n}.md", f"{n}\n", expected=None)
        # The fold thread is let keep up: a writer that finds it behind by 2 x MAX_PACKS
        # folds itself (the bound, tested below), which a loaded machine would trigger.
        assert folds.idle(60)
    assert names and set(names) == {"gitmem-serve-fold"}  # never the writer's thread
    assert packwrite.pack_count(store.path) <= engine.MAX_PACKS
    assert_fsck_clean(Path(store.path))
    folds.close()
    store.write("after.md", "once the server stopped\n", expected=None)
    for n in range(engine.MAX_PACKS + 1):
        store.write(f"g{n}.md", f"{n}\n", expected=None)
    assert names[-1] == threading.current_thread().name  # the writer folds again


def test_the_pack_count_stays_bounded_when_the_folds_fall_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "MAX_PACKS", 4)
    names = _folders(monkeypatch)
    handed: list[str] = []
    previous = engine.fold_elsewhere(lambda repo: handed.append(repo.path))  # a folder that never folds
    try:
        store = GitFileStore.init(tmp_path / "m.git").sync
        most = 0
        for n in range(10 * (engine.MAX_PACKS + 1)):
            store.write(f"f{n}.md", f"{n}\n", expected=None)
            most = max(most, packwrite.pack_count(store.path))
    finally:
        engine.fold_elsewhere(previous)
    assert handed  # folds were handed over while the count was low
    assert names  # and the writer folded once the count passed twice MAX_PACKS
    assert most <= 3 * engine.MAX_PACKS + 1
    assert_fsck_clean(Path(store.path))


def test_the_last_thread_to_go_idle_is_woken_first() -> None:
    cond = _WarmFirst()
    woken: list[int] = []
    ready = threading.Event()

    def worker(n: int) -> None:
        with cond:
            cond.wait(30)
            woken.append(n)
            ready.set()

    threads = []
    for n in range(3):
        threads.append(threading.Thread(target=worker, args=(n,)))
        threads[-1].start()
        deadline = time.monotonic() + 30
        while len(cond._waiters) < n + 1 and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.001)
    with cond:
        cond.notify()
    assert ready.wait(30)
    assert woken == [2]
    with cond:
        cond.notify_all()
    for t in threads:
        t.join(30)
    assert sorted(woken) == [0, 1, 2]


def test_a_served_memory_is_folded_behind_its_writes(tmp_path: Path) -> None:
    token = "tok-folds-0123456789abcdef"
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(token, "agent", ["team"], "write"))
    root = tmp_path / "root"
    GitFileStore.init(root / "team.git")
    proc, info = start_serve(root, tokens)
    try:
        with HttpMcpClient(info["url"] + "/mcp", token) as client:
            for n in range(2 * (engine.MAX_PACKS + 1)):
                done = client.call("memory_file_create", memory="team", path=f"n{n}.md", content=f"{n}\n")
                assert not done.is_error, done
        deadline = time.monotonic() + 60
        while packwrite.pack_count(str(root / "team.git")) > engine.MAX_PACKS and time.monotonic() < deadline:
            time.sleep(0.05)
        assert packwrite.pack_count(str(root / "team.git")) <= engine.MAX_PACKS
    finally:
        log = stop_serve(proc)
    assert "Traceback" not in log, log
    assert_fsck_clean(root / "team.git")
    assert GitFileStore.open(root / "team.git").sync.read("n49.md").text == "49\n"
