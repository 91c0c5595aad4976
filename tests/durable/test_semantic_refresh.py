"""The shared vector index: refresh from Active-only snapshots, index-revision CAS, health, erasure."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitmem.adapters.cli import cli
from gitmem.durable import DurableRepository, RecallPolicy
from gitmem.durable.semantic import EmbeddingIdentity, FixtureEmbedder, SemanticRecall, partition_of
from gitmem.errors import MemoryStoreError
from gitmem.recall.vectors import NodeRef, SqliteVectorIndex, VectorRecord

from .support import NS, OTHER, activate, change, create, fsck

IDENT = EmbeddingIdentity("fixture", "unit", "r1", 3)
TEXTS = {
    "alpha deploys need a canary": [1, 0, 0],
    "beta rollbacks keep the audit": [0, 1, 0],
    "gamma caches are warmed first": [0, 0, 1],
    "alpha deploys need a canary and a verifier": [1, 0.1, 0],
    "q-alpha": [1, 0, 0],
    "q-gamma": [0, 0, 1],
}


def repo_with(tmp_path: Path, embedder: Any = None, **options: Any) -> DurableRepository:
    semantic = SemanticRecall(embedder or FixtureEmbedder(TEXTS, IDENT), **options)
    return DurableRepository.open(tmp_path / "root", "team", create=True, semantic_recall=semantic)


def seed(repo: DurableRepository) -> None:
    repo.apply(
        change(
            "seed",
            create("a", "alpha deploys need a canary", status="active"),
            create("b", "beta rollbacks keep the audit", status="active"),
            create("c", "gamma caches are warmed first"),  # a candidate
        )
    )


FUSED = RecallPolicy(3, 0.0, 0, semantic=True)


def test_refresh_publishes_active_only_and_follows_revisions(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    seed(repo)
    assert repo.semantic_health(NS).state == "missing"
    first = repo.refresh_semantic_recall(NS)
    assert (first.outcome, first.active, first.embedded, first.index_revision) == ("published", 2, 2, 1)
    assert first.commit == repo.store.head()
    semantic = repo.semantic_recall
    assert semantic is not None and semantic.index is not None
    assert set(semantic.index.entries(partition_of(NS))) == {"a", "b"}  # never the candidate
    assert [h.node.id for h in repo.recall(NS, "q-gamma", FUSED).hits] == []
    assert repo.semantic_health(NS).state == "ready"
    assert repo.refresh_semantic_recall(NS).outcome == "unchanged"  # nothing to embed, no new revision

    # the candidate is activated and "a" revised: the index lags until the next refresh
    repo.apply(change("act", activate("c", 1)))
    revise = {
        "op": "revise",
        "node_id": "a",
        "expected_revision": 1,
        "content": "alpha deploys need a canary and a verifier",
        "evidence": [{"uri": "review://9", "digest": "sha256:9", "kind": "manual"}],
    }
    repo.apply(change("rev", revise))
    health = repo.semantic_health(NS)
    assert (health.state, health.lag, health.indexed_commit) == ("lagging", 2, first.commit)
    answer = repo.recall(NS, "q-alpha", FUSED)
    assert answer.fallback is not None and "revision and content digest" in answer.fallback  # stale vector refused
    second = repo.refresh_semantic_recall(NS, consistency="index_revision_cas")
    assert (second.embedded, second.removed, second.started_revision, second.index_revision) == (2, 0, 1, 2)
    hit = repo.recall(NS, "q-alpha", FUSED).hits[0]
    assert (hit.node.id, hit.node.revision, hit.via) == ("a", 2, "fused")
    assert [h.node.id for h in repo.recall(NS, "q-gamma", FUSED).hits] == ["c"]

    # a tombstoned node leaves the partition by its revision
    repo.apply(change("tomb", {"op": "set_status", "node_id": "b", "expected_revision": 1, "status": "tombstoned"}))
    third = repo.refresh_semantic_recall(NS)
    assert (third.removed, third.active) == (1, 2)
    assert set(semantic.index.entries(partition_of(NS))) == {"a", "c"}
    assert repo.semantic_health(NS).state == "ready"
    fsck(tmp_path / "root" / "team.git")


def test_a_refresh_from_an_older_snapshot_never_overwrites_a_newer_index(tmp_path: Path) -> None:
    """Two runtimes share one index file; the one that started first publishes last and is refused."""
    repo = repo_with(tmp_path)
    seed(repo)
    other = DurableRepository.open(
        tmp_path / "root", "team", semantic_recall=SemanticRecall(FixtureEmbedder(TEXTS, IDENT))
    )

    class Interleaving(FixtureEmbedder):
        def embed(self, texts: list[str]) -> list[tuple[float, ...]]:
            out = super().embed(texts)
            if self.calls == 1:  # while this refresh embeds, another one publishes a newer snapshot
                other.apply(change("act", activate("c", 1)))
                assert other.refresh_semantic_recall(NS).index_revision == 1
            return out

    slow = DurableRepository.open(tmp_path / "root", "team", semantic_recall=SemanticRecall(Interleaving(TEXTS, IDENT)))
    with pytest.raises(MemoryStoreError) as raised:
        slow.refresh_semantic_recall(NS, consistency="index_revision_cas")
    assert raised.value.code == "version_mismatch"
    health = slow.semantic_health(NS)
    assert (health.index_revision, health.vectors, health.state) == (1, 3, "failing")  # the newer index stands
    assert health.failures == 1 and health.last_error is not None and "version_mismatch" in health.last_error
    retry = slow.refresh_semantic_recall(NS, consistency="index_revision_cas")
    assert retry.outcome == "unchanged" and slow.semantic_health(NS).state == "ready"


def test_a_failing_provider_keeps_the_previous_partition_and_is_reported(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    seed(repo)
    repo.refresh_semantic_recall(NS)
    repo.apply(change("new", create("d", "a text the provider does not know", status="active")))
    for _ in range(2):
        with pytest.raises(MemoryStoreError) as raised:
            repo.refresh_semantic_recall(NS)
        assert raised.value.code == "unavailable"
    health = repo.semantic_health(NS)
    assert (health.state, health.failures, health.vectors, health.index_revision) == ("failing", 2, 2, 1)
    assert health.last_error is not None and "declares no vector" in health.last_error
    assert [h.node.id for h in repo.recall(NS, "q-alpha", FUSED).hits] == ["a"]  # still served, verified


def test_a_weaker_index_fails_a_cas_refresh_before_any_work(tmp_path: Path) -> None:
    class Weak(SqliteVectorIndex):
        @property
        def consistency(self) -> Any:
            return "partition_atomic"

    embedder = FixtureEmbedder(TEXTS, IDENT)
    repo = repo_with(tmp_path, embedder, index=Weak(tmp_path / "weak.sqlite3"))
    seed(repo)
    with pytest.raises(MemoryStoreError) as raised:
        repo.refresh_semantic_recall(NS, consistency="index_revision_cas")
    assert raised.value.code == "unavailable" and embedder.calls == 0
    assert repo.refresh_semantic_recall(NS).outcome == "published"  # no CAS asked: partition-atomic is enough


def test_partitions_and_generations_never_mix(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    seed(repo)
    repo.apply(change("other", create("z", "alpha deploys need a canary", status="active"), ns=OTHER))
    repo.refresh_semantic_recall(NS)
    semantic = repo.semantic_recall
    assert semantic is not None
    assert semantic.search(OTHER, "q-alpha", 5) == []  # OTHER's partition is empty
    repo.refresh_semantic_recall(OTHER)
    assert [h.node_id for h in semantic.search(OTHER, "q-alpha", 5)] == ["z"]
    assert [h.node_id for h in semantic.search(NS, "q-alpha", 5)] == ["a"]
    # another model revision is another generation: the old vectors are not compared with its queries
    moved = DurableRepository.open(
        tmp_path / "root",
        "team",
        semantic_recall=SemanticRecall(FixtureEmbedder(TEXTS, EmbeddingIdentity("fixture", "unit", "r2", 3))),
    )
    assert moved.semantic_health(NS).state == "stale_generation"
    assert moved.semantic_recall is not None and moved.semantic_recall.search(NS, "q-alpha", 5) == []
    assert moved.refresh_semantic_recall(NS).embedded == 2  # the partition is replaced whole
    assert moved.semantic_health(NS).state == "ready"


def test_mutations_check_their_input_and_change_nothing_when_refused(tmp_path: Path) -> None:
    index = SqliteVectorIndex(tmp_path / "v.sqlite3")
    index.mutate("p", generation="g", commit="c1", upsert=[VectorRecord("a", 1, "d1", [1.0, 0.0])])
    for bad in ([float("nan"), 0.0], [1.0, 0.0, 0.0], "xy"):
        with pytest.raises(MemoryStoreError) as raised:
            index.mutate("p", generation="g", commit="c2", upsert=[VectorRecord("b", 1, "d", bad)])  # type: ignore[arg-type]
        assert raised.value.code == "invalid_query"
    with pytest.raises(MemoryStoreError) as raised:
        index.mutate("p", generation="g", commit="c2", delete=[NodeRef("a", 1)], expected_revision=0)
    assert raised.value.code == "version_mismatch"
    state = index.partition("p")
    assert state is not None and (state.revision, state.count, state.commit) == (1, 1, "c1")
    index.mutate("p", generation="g", commit="c3", delete=[NodeRef("a", 2)], expected_revision=1)  # another revision
    assert index.entries("p") == {"a": (1, "d1")}
    assert [h.node_id for h in index.query("p", "g", [1.0, 0.0], limit=5)] == ["a"]
    assert index.query("p", "other-generation", [1.0, 0.0], limit=5) == []


def test_purge_deletes_the_index_and_it_comes_back_empty(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    seed(repo)
    repo.refresh_semantic_recall(NS)
    folder = tmp_path / "root" / "team.git" / "gitmem" / "derived" / "semantic"
    assert (folder / "vectors.sqlite3").exists()
    repo.store.purge()  # type: ignore[attr-defined]
    assert not folder.exists()
    assert repo.semantic_health(NS).state == "missing"  # the open handle does not serve the deleted file


CAS_WORKER = """
import sys
from gitmem.errors import MemoryStoreError
from gitmem.recall.vectors import SqliteVectorIndex, VectorRecord
index = SqliteVectorIndex(sys.argv[1])
won = 0
for i in range(int(sys.argv[3])):
    seen = index.status().revision
    try:
        index.mutate("p", generation="g", commit=sys.argv[2], upsert=[VectorRecord(sys.argv[2] + str(i), 1, "d", [1.0])],
                     expected_revision=seen)
        won += 1
    except MemoryStoreError as exc:
        assert exc.code == "version_mismatch", exc
print(won)
"""


@pytest.mark.slow
def test_cas_across_processes_loses_no_publication(tmp_path: Path) -> None:
    path = str(tmp_path / "v.sqlite3")
    SqliteVectorIndex(path).status()
    procs = [
        subprocess.Popen([sys.executable, "-c", CAS_WORKER, path, f"w{n}-", "40"], stdout=subprocess.PIPE, text=True)
        for n in range(3)
    ]
    won = sum(int(p.communicate(timeout=120)[0]) for p in procs)
    index = SqliteVectorIndex(path)
    assert index.status().revision == won  # every success bumped the revision exactly once
    assert len(index.entries("p")) == won  # and its vector is there: no publication was lost


def test_maintenance_refreshes_on_an_interval(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    seed(repo)
    maintenance = repo.semantic_maintenance([NS], interval=0.05)
    try:
        deadline = time.monotonic() + 10
        while repo.semantic_health(NS).state != "ready" and time.monotonic() < deadline:
            time.sleep(0.02)
        repo.apply(change("act", activate("c", 1)))
        while repo.semantic_health(NS).vectors != 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        maintenance.close()
    health = repo.semantic_health(NS)
    assert (health.state, health.vectors) == ("ready", 3) and maintenance.rounds >= 2
    with pytest.raises(MemoryStoreError):
        repo.semantic_maintenance([NS], interval=0)


def test_cli_health(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    seed(repo)
    repo.refresh_semantic_recall(NS)
    args = ["--root", str(tmp_path / "root"), "durable", "health", "team", "-n", *NS.as_dict().values()]
    done = CliRunner().invoke(cli, [*args, "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert (data["state"], data["vectors"], data["lag"], data["last_outcome"]) == ("ready", 2, 0, "published")
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0 and "state           ready" in text.output
