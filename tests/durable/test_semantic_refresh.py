"""The shared vector index: refresh from Active-only snapshots, index-revision CAS, health, erasure.

The contract tests run against every index gitmem ships (``kind``): the embedded
SQLite default and the LanceDB adapter in its embedded mode.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitmem.adapters.cli import cli
from gitmem.adapters.lance_vectors import LanceVectorIndex, _table_name, lance_index_in
from gitmem.durable import DurableRepository, RecallPolicy
from gitmem.durable import semantic as semantic_module
from gitmem.durable.namespace import Namespace
from gitmem.durable.nodefile import node_path
from gitmem.durable.semantic import EmbeddingIdentity, FixtureEmbedder, SemanticRecall, partition_of
from gitmem.errors import MemoryStoreError
from gitmem.recall.vectors import NodeRef, SqliteVectorIndex, VectorIndex, VectorRecord

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


KINDS = pytest.mark.parametrize("kind", ["sqlite", "lance"])
INDEX_CLASSES: dict[str, type[Any]] = {"sqlite": SqliteVectorIndex, "lance": LanceVectorIndex}


def make_index(kind: str, path: Path, cls: type[Any] | None = None) -> VectorIndex:
    """An index of ``kind`` at ``path`` (a file for SQLite, a folder for LanceDB)."""
    made: VectorIndex = (cls or INDEX_CLASSES[kind])(path)
    return made


def semantic_for(kind: str, embedder: Any = None, **options: Any) -> SemanticRecall:
    if kind == "lance":
        options.setdefault("index_factory", lance_index_in)
    return SemanticRecall(embedder or FixtureEmbedder(TEXTS, IDENT), **options)


def repo_with(tmp_path: Path, embedder: Any = None, kind: str = "sqlite", **options: Any) -> DurableRepository:
    semantic = semantic_for(kind, embedder, **options)
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


@KINDS
def test_refresh_publishes_active_only_and_follows_revisions(tmp_path: Path, kind: str) -> None:
    repo = repo_with(tmp_path, kind=kind)
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


@KINDS
def test_a_refresh_from_an_older_snapshot_never_overwrites_a_newer_index(tmp_path: Path, kind: str) -> None:
    """Two runtimes share one index; the one that started first publishes last and is refused."""
    repo = repo_with(tmp_path, kind=kind)
    seed(repo)
    other = DurableRepository.open(tmp_path / "root", "team", semantic_recall=semantic_for(kind))

    class Interleaving(FixtureEmbedder):
        def embed(self, texts: list[str]) -> list[tuple[float, ...]]:
            out = super().embed(texts)
            if self.calls == 1:  # while this refresh embeds, another one publishes a newer snapshot
                other.apply(change("act", activate("c", 1)))
                assert other.refresh_semantic_recall(NS).index_revision == 1
            return out

    slow = DurableRepository.open(
        tmp_path / "root", "team", semantic_recall=semantic_for(kind, Interleaving(TEXTS, IDENT))
    )
    with pytest.raises(MemoryStoreError) as raised:
        slow.refresh_semantic_recall(NS, consistency="index_revision_cas")
    assert raised.value.code == "version_mismatch"
    health = slow.semantic_health(NS)
    assert (health.index_revision, health.vectors, health.state) == (1, 3, "failing")  # the newer index stands
    assert health.failures == 1 and health.last_error is not None and "version_mismatch" in health.last_error
    retry = slow.refresh_semantic_recall(NS, consistency="index_revision_cas")
    assert retry.outcome == "unchanged" and slow.semantic_health(NS).state == "ready"


@KINDS
def test_a_failing_provider_keeps_the_previous_partition_and_is_reported(tmp_path: Path, kind: str) -> None:
    repo = repo_with(tmp_path, kind=kind)
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


@KINDS
def test_a_weaker_index_fails_a_cas_refresh_before_any_work(tmp_path: Path, kind: str) -> None:
    weak = type("Weak", (INDEX_CLASSES[kind],), {"consistency": property(lambda self: "partition_atomic")})
    embedder = FixtureEmbedder(TEXTS, IDENT)
    repo = repo_with(tmp_path, embedder, index=make_index(kind, tmp_path / "weak", weak))
    seed(repo)
    with pytest.raises(MemoryStoreError) as raised:
        repo.refresh_semantic_recall(NS, consistency="index_revision_cas")
    assert raised.value.code == "unavailable" and embedder.calls == 0
    assert repo.refresh_semantic_recall(NS).outcome == "published"  # no CAS asked: partition-atomic is enough


@KINDS
def test_a_schedule_is_refused_on_an_index_without_the_revision_cas(tmp_path: Path, kind: str) -> None:
    """The scheduled refresh always requires index-revision CAS; on-demand keeps the caller's choice."""
    weak = type("Weak", (INDEX_CLASSES[kind],), {"consistency": property(lambda self: "partition_atomic")})
    embedder = FixtureEmbedder(TEXTS, IDENT)
    repo = repo_with(tmp_path, embedder, index=make_index(kind, tmp_path / "weak", weak))
    seed(repo)
    threads = threading.active_count()
    with pytest.raises(MemoryStoreError) as raised:
        repo.semantic_maintenance([NS], interval=0.05)
    assert raised.value.code == "unavailable" and "index_revision_cas" in raised.value.message
    assert embedder.calls == 0 and threading.active_count() == threads  # nothing embedded, no thread started
    assert repo.semantic_health(NS).state == "missing"
    assert repo.refresh_semantic_recall(NS).outcome == "published"  # on demand: partition-atomic was asked


@KINDS
def test_every_scheduled_round_publishes_with_the_revision_cas(tmp_path: Path, kind: str) -> None:
    """Each round's publish carries the revision it started from (a stale round cannot overwrite a newer index)."""
    expected: list[int | None] = []
    base = INDEX_CLASSES[kind]

    def mutate(self: Any, partition: str, **options: Any) -> int:
        expected.append(options.get("expected_revision"))
        result: int = base.mutate(self, partition, **options)
        return result

    spying = type("Spying", (base,), {"mutate": mutate})
    repo = repo_with(tmp_path, index=make_index(kind, tmp_path / "spy", spying))
    seed(repo)
    maintenance = repo.semantic_maintenance([NS], interval=0.05)
    try:
        deadline = time.monotonic() + 10
        while not expected and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        maintenance.close()
    assert expected and all(isinstance(revision, int) for revision in expected), expected


@KINDS
def test_partitions_and_generations_never_mix(tmp_path: Path, kind: str) -> None:
    repo = repo_with(tmp_path, kind=kind)
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
        semantic_recall=semantic_for(kind, FixtureEmbedder(TEXTS, EmbeddingIdentity("fixture", "unit", "r2", 3))),
    )
    assert moved.semantic_health(NS).state == "stale_generation"
    assert moved.semantic_recall is not None and moved.semantic_recall.search(NS, "q-alpha", 5) == []
    assert moved.refresh_semantic_recall(NS).embedded == 2  # the partition is replaced whole
    assert moved.semantic_health(NS).state == "ready"


@KINDS
def test_mutations_check_their_input_and_change_nothing_when_refused(tmp_path: Path, kind: str) -> None:
    index = make_index(kind, tmp_path / "v")
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


@KINDS
def test_purge_deletes_the_index_and_it_comes_back_empty(tmp_path: Path, kind: str) -> None:
    repo = repo_with(tmp_path, kind=kind)
    seed(repo)
    repo.refresh_semantic_recall(NS)
    folder = tmp_path / "root" / "team.git" / "gitmem" / "derived" / "semantic"
    assert (folder / {"sqlite": "vectors.sqlite3", "lance": "lancedb"}[kind]).exists()
    repo.store.purge()  # type: ignore[attr-defined]
    assert not folder.exists()
    assert repo.semantic_health(NS).state == "missing"  # the open handle does not serve the deleted file


def test_a_refresh_after_one_write_reads_only_that_node_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_with(tmp_path)
    seed(repo)
    repo.refresh_semantic_recall(NS)
    decoded: list[str] = []
    real = semantic_module.decode_node
    monkeypatch.setattr(
        semantic_module, "decode_node", lambda text, path, ns=None: decoded.append(path) or real(text, path, ns)
    )
    assert repo.refresh_semantic_recall(NS).outcome == "unchanged"
    assert decoded == []
    repo.apply(change("act", activate("c", 1)))
    receipt = repo.refresh_semantic_recall(NS)
    assert (receipt.outcome, receipt.active, receipt.embedded, receipt.commit) == ("published", 3, 1, repo.store.head())
    assert decoded == [node_path(NS, "c")]


def test_only_the_most_recently_refreshed_namespaces_stay_caught_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = repo_with(tmp_path, active_partitions=2)
    spaces = [Namespace("acme", name, "repo-gitmem") for name in ("ann", "ben", "cat")]
    for at, ns in enumerate(spaces):
        repo.apply(change(f"seed-{at}", create("a", "alpha deploys need a canary", status="active"), ns=ns))
        repo.apply(change(f"more-{at}", create("b", "beta rollbacks keep the audit", status="active"), ns=ns))
        assert repo.refresh_semantic_recall(ns).outcome == "published"
    semantic = repo.semantic_recall
    assert semantic is not None and len(semantic._active) == 2  # a long-lived server does not grow per namespace
    decoded: list[str] = []
    real = semantic_module.decode_node
    monkeypatch.setattr(
        semantic_module, "decode_node", lambda text, path, ns=None: decoded.append(path) or real(text, path, ns)
    )
    assert repo.refresh_semantic_recall(spaces[2]).outcome == "unchanged" and decoded == []  # kept: caught up
    receipt = repo.refresh_semantic_recall(spaces[0])  # dropped: read whole again, and as right as ever
    assert (receipt.outcome, receipt.active) == ("unchanged", 2) and len(decoded) == 2
    assert len(semantic._active) == 2
    assert [h.node_id for h in semantic.search(spaces[0], "q-alpha", 5)] == ["a"]


def test_a_node_forgotten_between_refreshes_leaves_the_index(tmp_path: Path) -> None:
    repo = repo_with(tmp_path)
    seed(repo)
    repo.refresh_semantic_recall(NS)
    repo.store.forget(node_path(NS, "a"))  # type: ignore[attr-defined]  # history rewritten: erased everywhere
    receipt = repo.refresh_semantic_recall(NS)  # the same process, the same recall
    assert (receipt.outcome, receipt.active) == ("published", 1)
    semantic = repo.semantic_recall
    assert semantic is not None and semantic.index is not None
    assert set(semantic.index.entries(partition_of(NS))) == {"b"}
    assert repo.semantic_health(NS).state == "ready"
    fsck(tmp_path / "root" / "team.git")


CAS_WORKER = """
import sys
from gitmem.adapters.lance_vectors import LanceVectorIndex
from gitmem.errors import MemoryStoreError
from gitmem.recall.vectors import SqliteVectorIndex, VectorRecord
index = {"sqlite": SqliteVectorIndex, "lance": LanceVectorIndex}[sys.argv[4]](sys.argv[1])
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
@KINDS
def test_cas_across_processes_loses_no_publication(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "v"
    make_index(kind, path).status()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CAS_WORKER, str(path), f"w{n}-", {"sqlite": "40", "lance": "15"}[kind], kind],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    won = sum(int(p.communicate(timeout=120)[0]) for p in procs)
    index = make_index(kind, path)
    assert index.status().revision == won  # every success bumped the revision exactly once
    assert len(index.entries("p")) == won  # and its vector is there: no publication was lost


def test_lance_optimize_compacts_without_moving_the_revision(tmp_path: Path) -> None:
    index = LanceVectorIndex(tmp_path / "v")
    for n in range(6):  # six versions, each with its own fragment
        index.mutate("p", generation="g", commit=f"c{n}", upsert=[VectorRecord(f"n{n}", 1, "d", [1.0, float(n)])])
    index.mutate("p", generation="g", commit="c6", delete=[NodeRef("n0", 1)])
    before = (index.status().revision, index.entries("p"), [h.node_id for h in index.query("p", "g", [0, 1], limit=3)])
    fragments = index._connect().open_table(_table_name("p")).stats()["fragment_stats"]["num_fragments"]
    time.sleep(1.1)
    assert index.optimize(keep_seconds=1) == 1
    table = index._connect().open_table(_table_name("p"))
    assert table.stats()["fragment_stats"]["num_fragments"] < fragments
    assert len(table.list_versions()) <= 2  # seven versions before: the older ones are reclaimed
    after = (index.status().revision, index.entries("p"), [h.node_id for h in index.query("p", "g", [0, 1], limit=3)])
    assert after == before
    assert LanceVectorIndex(tmp_path / "v").entries("p") == before[1]  # another process reads the compacted version
    index.mutate("p", generation="g", commit="c7", upsert=[VectorRecord("z", 1, "d", [0.0, 1.0])], expected_revision=7)
    with pytest.raises(MemoryStoreError) as raised:
        index.optimize(keep_seconds=-1)
    assert raised.value.code == "invalid_query"


KILLED_WRITER = """
import sys
from gitmem.adapters.lance_vectors import LanceVectorIndex
from gitmem.recall.vectors import NodeRef, VectorRecord
index = LanceVectorIndex(sys.argv[1])
i = 0
while True:
    seen = index.status().revision
    # each mutation adds one node and deletes one that is not there: the count is the revision
    index.mutate("p", generation="g", commit=str(i), upsert=[VectorRecord(f"k{seen}", 1, "d", [1.0, 0.5])],
                 delete=[NodeRef("absent", 1)], expected_revision=seen)
    i += 1
    print(i, flush=True)
"""


@pytest.mark.slow
def test_a_lance_writer_killed_after_its_commit_is_never_served(tmp_path: Path) -> None:
    """The window the side table covers: the Lance commit is made, its publication is not."""
    path = tmp_path / "v"
    index = LanceVectorIndex(path)
    index.mutate("p", generation="g", commit="c1", upsert=[VectorRecord("a", 1, "d", [1.0, 0.0])])
    import lancedb

    table = lancedb.connect(str(path / "lance")).open_table(_table_name("p"))
    published = table.version
    script = (
        "import os, signal, sys\n"
        "from gitmem.adapters.lance_vectors import LanceVectorIndex\n"
        "from gitmem.recall.vectors import NodeRef, VectorRecord\n"
        "class Dies(LanceVectorIndex):\n"
        "    def _mutate(self, *args):\n"
        "        super()._mutate(*args)\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "Dies(sys.argv[1]).mutate('p', generation='g', commit='c2', upsert=[VectorRecord('b', 1, 'd', [0.0, 1.0])],\n"
        "                         delete=[NodeRef('a', 1)], expected_revision=1)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, timeout=120)
    assert done.returncode == -9
    table.checkout_latest()
    assert table.version > published  # the Lance commit landed
    state = index.partition("p")
    assert state is not None
    assert (index.status().revision, state.commit) == (1, "c1")
    assert index.entries("p") == {"a": (1, "d")}  # the killed writer's commit (a deleted, b added) is not served
    assert [h.node_id for h in LanceVectorIndex(path).query("p", "g", [0.6, 0.8], limit=5)] == ["a"]
    index.mutate("p", generation="g", commit="c3", upsert=[VectorRecord("c", 1, "d", [0.0, 1.0])], expected_revision=1)
    assert index.entries("p") == {"a": (1, "d"), "c": (1, "d")}  # published on top of c1, not of the lost commit


@pytest.mark.slow
def test_a_killed_lance_writer_leaves_the_published_state(tmp_path: Path) -> None:
    """SIGKILL a writer at random points (inside a Lance commit or between it and the publication)."""
    import random
    import signal

    path = tmp_path / "v"
    rng = random.Random(31)
    for _ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # it has published at least once
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        index = LanceVectorIndex(path)
        revision = index.status().revision
        state = index.partition("p")
        assert state is not None and state.revision == revision
        assert set(index.entries("p")) == {f"k{n}" for n in range(revision)} and state.count == revision
        hits = index.query("p", "g", [1.0, 0.5], limit=100)
        assert len(hits) == revision  # the published version is served, never a killed writer's commit
        index.close()
    # a writer after the last kill discards any unpublished commit and publishes on top
    index = LanceVectorIndex(path)
    revision = index.status().revision
    index.mutate("p", generation="g", commit="after", upsert=[VectorRecord("last", 1, "d", [0.0, 1.0])],
                 expected_revision=revision)  # fmt: skip
    assert set(index.entries("p")) == {*(f"k{n}" for n in range(revision)), "last"}


@KINDS
def test_maintenance_refreshes_on_an_interval(tmp_path: Path, kind: str) -> None:
    repo = repo_with(tmp_path, kind=kind)
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
