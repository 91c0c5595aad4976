"""Real processes applying change sets to one durable mount at once (then git fsck --strict)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitmem.durable.repository import DurableRepository
from gitmem.gitstore import SyncGitFileStore

from .support import NS, activate, change, commits, create, fsck, git

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(SyncGitFileStore, "apply"), reason="the git store has no atomic batch yet"),
]
WORKER = str(Path(__file__).with_name("durable_worker.py"))
TIMEOUT = 120  # a liveness guard for a deadlocked worker, not a performance bound


def run_workers(tmp: Path, plans: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    go = tmp / "go"
    procs = []
    outs = []
    for i, changes in enumerate(plans):
        out = tmp / f"out-{i}.jsonl"
        outs.append(out)
        args = {"root": str(tmp), "name": "durable", "changes": changes, "go": str(go), "out": str(out)}
        procs.append(subprocess.Popen([sys.executable, WORKER, json.dumps(args)], stderr=subprocess.PIPE))
    go.touch()
    try:
        for p in procs:
            _, err = p.communicate(timeout=TIMEOUT)
            assert p.returncode == 0, err.decode(errors="replace")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [[json.loads(line) for line in out.read_text().splitlines()] for out in outs]


@pytest.fixture
def repo(tmp_path: Path) -> DurableRepository:
    return DurableRepository.open(tmp_path, "durable", create=True)


def test_same_key_same_content_from_many_processes_commits_once(tmp_path: Path, repo: DurableRepository) -> None:
    before = commits(repo.store.path)  # type: ignore[attr-defined]
    one = change("shared-key", create("n1", "Prefer small pull requests."), create("n2", "Squash before merging."))
    results = [r[0] for r in run_workers(tmp_path, [[one]] * 4)]
    assert all("error" not in r for r in results), results
    assert {tuple(r["refs"]) for r in results} == {("n1@1", "n2@1")}
    assert sum(not r["replayed"] for r in results) == 1
    assert {r["commit"] for r in results} == {next(r["commit"] for r in results if not r["replayed"])}
    assert commits(repo.store.path) == before + 1  # type: ignore[attr-defined]
    fsck(repo.store.path)  # type: ignore[attr-defined]


def test_same_key_different_content_one_wins_the_rest_conflict(tmp_path: Path, repo: DurableRepository) -> None:
    plans = [[change("key", create(f"n{i}", f"Variant number {i} of a fact."))] for i in range(4)]
    results = [r[0] for r in run_workers(tmp_path, plans)]
    winners = [r for r in results if "error" not in r]
    assert len(winners) == 1 and not winners[0]["replayed"]
    assert sorted(r["error"] for r in results if "error" in r) == ["idempotency_conflict"] * 3
    assert len(repo.nodes(NS)) == 1
    fsck(repo.store.path)  # type: ignore[attr-defined]


def test_racing_on_one_node_one_wins_on_distinct_nodes_all_win(tmp_path: Path, repo: DurableRepository) -> None:
    repo.apply(change("seed", *[create(f"n{i}", f"Candidate fact {i}.") for i in range(4)]))
    # each process activates its own node, then all try to activate node 0 at revision 1 (or 2)
    plans = [
        [
            change(f"own-{i}", activate(f"n{i}", 1, uri=f"review://{i}")),
            change(f"n0-{i}", activate("n0", 1, uri=f"review://x{i}")),
        ]
        for i in range(1, 4)
    ]
    results = run_workers(tmp_path, plans)
    assert all("error" not in r[0] for r in results), results
    n0 = [r[1] for r in results]
    assert sum("error" not in r for r in n0) == 1
    assert sorted(r["error"] for r in n0 if "error" in r) == ["revision_mismatch"] * 2
    statuses = {n.id: (n.status, n.revision) for n in repo.nodes(NS)}
    assert statuses == {f"n{i}": ("active", 2) for i in range(4)}
    log = git(repo.store.path, "log", "--format=%(trailers:key=Gitmem-Durable-Node,valueonly,separator=%x2C)")  # type: ignore[attr-defined]
    assert log.count("n0@2 active activated") == 1
    fsck(repo.store.path)  # type: ignore[attr-defined]


def test_a_writer_killed_mid_change_set_leaves_whole_change_sets_only(tmp_path: Path, repo: DurableRepository) -> None:
    import json as _json
    import signal
    import time

    from gitmem.durable.nodefile import KeyRecord

    plans = [
        change(f"batch-{b}", *[create(f"b{b}-n{i}", f"Fact {i} of batch {b}.") for i in range(16)]) for b in range(300)
    ]
    go = tmp_path / "go"
    out = tmp_path / "killed.jsonl"
    args = {"root": str(tmp_path), "name": "durable", "changes": plans, "go": str(go), "out": str(out)}
    spec = tmp_path / "plan.json"
    spec.write_text(_json.dumps(args))
    errors = tmp_path / "killed.stderr"
    with errors.open("wb") as err:
        proc = subprocess.Popen([sys.executable, WORKER, f"@{spec}"], stderr=err)
    go.touch()
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 3):
            assert proc.poll() is None, errors.read_text()
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)  # somewhere inside a later change set
    finally:
        proc.kill()
        proc.wait()
    where = repo.store.path  # type: ignore[attr-defined]
    fsck(where)
    acked = len(out.read_text().splitlines())
    nodes = {n.ref for n in repo.nodes(NS)}
    records = [KeyRecord.decode(repo.store.read(e.path).text, e.path) for e in repo.store.list() if "/keys/" in e.path]
    assert len(records) >= acked >= 3
    # every change set is all there with its record, or not there at all
    assert nodes == {ref for r in records for ref in r.nodes}
    assert all(len(r.nodes) == 16 for r in records)
    # the mount is usable at once: the killed writer's lock does not block the next one
    assert repo.apply(change("after", create("after", "Written after the kill."))).refs == ("after@1",)
    fsck(where)
