"""The durable repository on a real git mount: one commit per change set, all or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem.durable.namespace import Namespace
from gitmem.durable.node import Evidence
from gitmem.durable.nodefile import key_path, node_path
from gitmem.durable.recall import RecallPolicy
from gitmem.durable.repository import DurableRepository
from gitmem.errors import MemoryStoreError
from gitmem.gitstore import SyncGitFileStore
from gitmem.model import Edit
from gitmem.root import Root

from .support import MANUAL, NS, OTHER, activate, change, commits, create, fsck, git, memory_store

GIT_HAS_APPLY = hasattr(SyncGitFileStore, "apply")


@pytest.fixture(params=["memory", "git"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> DurableRepository:
    """The repository over the in-memory batch store and over a real git mount."""
    if request.param == "memory":
        return DurableRepository(memory_store())
    if not GIT_HAS_APPLY:
        pytest.skip("the git store has no atomic batch yet")
    return DurableRepository.open(tmp_path, "durable", create=True)


@pytest.fixture
def git_repo(tmp_path: Path) -> DurableRepository:
    if not GIT_HAS_APPLY:
        pytest.skip("the git store has no atomic batch yet")
    return DurableRepository.open(tmp_path, "durable", create=True)


def path_of(repo: DurableRepository) -> str:
    return str(repo.store.path)  # type: ignore[attr-defined]


def test_a_change_set_is_one_commit_with_trailers_git_can_read(git_repo: DurableRepository) -> None:
    repo = git_repo
    from gitmem.model import Origin

    before = commits(path_of(repo))
    result = repo.apply(
        change("turn-1", create("pref-tabs", "Indent Go code with tabs."), activate("pref-tabs", 1)),
        origin=Origin(run_id="run-9", principal_id="alice@example.com"),
    )
    assert result.refs == ("pref-tabs@2",) and not result.replayed
    assert commits(path_of(repo)) == before + 1
    node = repo.node(NS, "pref-tabs")
    assert (node.status, node.revision, node.revision_kind) == ("active", 2, "activated")
    where = path_of(repo)
    trailers = git(where, "log", "-1", "--format=%(trailers:only,unfold)")
    assert "Gitmem-Durable-Key: turn-1" in trailers
    assert "Gitmem-Durable-Node: pref-tabs@2 active activated" in trailers
    assert "Gitmem-Durable-Evidence: pref-tabs@2 manual review://pr/8" in trailers
    assert "Gitmem-Op: durable" in trailers
    # who activated what: git log --author finds it, and the file is plain Markdown
    assert git(where, "log", "--author=alice@example.com", "--format=%H").split() == [result.commit]
    text = git(where, "show", f"main:{node_path(NS, 'pref-tabs')}")
    assert text.startswith("---\ngitmem: durable-node\n---\nIndent Go code with tabs.\n<!--")
    assert 'status: "active"' in text
    fsck(where)


def test_one_bad_operation_changes_nothing(repo: DurableRepository) -> None:
    repo.apply(change("seed", create("a", "Alpha fact."), create("b", "Beta fact.")))
    head = repo.store.head()
    bad_sets = [
        change("k1", create("c", "Gamma."), activate("a", 1, kind="tool_result")),  # not authorising
        change("k2", create("c", "Gamma."), activate("a", 7)),  # stale revision
        change(
            "k3",
            create("c", "Gamma."),
            {"op": "set_status", "node_id": "b", "expected_revision": 1, "status": "conflicted"},
        ),
        change("k4", create("c", "Gamma."), create("c", "Gamma again.")),
        change("k5", create("c", "Gamma."), activate("missing", 1)),
    ]
    codes = []
    for bad in bad_sets:
        with pytest.raises(MemoryStoreError) as info:
            repo.apply(bad)
        codes.append(info.value.code)
    assert codes == [
        "invalid_transition",
        "revision_mismatch",
        "invalid_change_set",
        "already_exists",
        "node_not_found",
    ]
    assert repo.store.head() == head
    assert repo.get(NS, "c") is None
    for key in ("k1", "k2", "k3", "k4", "k5"):
        with pytest.raises(MemoryStoreError):
            repo.store.read(key_path(NS, key))


def test_creating_an_id_that_exists_is_refused_whatever_the_order(repo: DurableRepository) -> None:
    repo.apply(change("seed", create("x", "Existing fact.")))
    head = repo.store.head()
    for key, ops in (
        ("again", [create("x", "Another text.")]),
        ("late", [activate("x", 1), create("x", "Another text.")]),
        ("mixed", [create("fresh", "New fact."), create("x", "Another text.")]),
    ):
        with pytest.raises(MemoryStoreError) as info:
            repo.apply(change(key, *ops))
        assert info.value.code == "already_exists", key
    assert repo.store.head() == head and repo.get(NS, "fresh") is None
    assert repo.node(NS, "x").revision == 1


def test_replay_returns_the_first_result_and_other_content_conflicts(repo: DurableRepository) -> None:
    first = repo.apply(change("turn-2", create("n", "Run make check before pushing.")))
    head = repo.store.head()
    again = repo.apply(change("turn-2", create("n", "Run make check before pushing.")))
    assert again.replayed and again.refs == first.refs
    # the first commit is found again in history (a store without history cannot say)
    assert again.commit == (first.commit if hasattr(repo.store, "log") else None)
    assert again.digest == first.digest and repo.store.head() == head
    with pytest.raises(MemoryStoreError) as info:
        repo.apply(change("turn-2", create("n", "Run make lint before pushing.")))
    assert info.value.code == "idempotency_conflict"
    # the same key in another namespace is another key
    assert not repo.apply(change("turn-2", create("n", "Something else."), ns=OTHER)).replayed


def racing(repo: DurableRepository, racer: dict[str, object]) -> list[bool]:
    """Make the next ``apply`` of ``repo``'s store first let another writer commit ``racer``."""
    store = repo.store
    real_apply = store.apply
    fired: list[bool] = []

    def racing_apply(edits: list[Edit], **kw: object) -> object:
        if not fired:  # another writer commits between our staging and our commit
            fired.append(True)
            DurableRepository(store).apply(racer)
        return real_apply(edits, **kw)  # type: ignore[arg-type]

    store.apply = racing_apply  # type: ignore[method-assign]
    return fired


def test_a_race_on_an_unrelated_node_is_restaged(repo: DurableRepository) -> None:
    repo.apply(change("seed", create("a", "Alpha."), create("b", "Beta.")))
    fired = racing(repo, change("other", activate("b", 1)))
    result = repo.apply(change("mine", activate("a", 1)))
    assert fired and result.refs == ("a@2",)
    assert repo.node(NS, "a").status == repo.node(NS, "b").status == "active"  # both changes kept
    if hasattr(repo.store, "path"):
        fsck(path_of(repo))


def test_a_race_on_the_same_node_fails_with_revision_mismatch(repo: DurableRepository) -> None:
    repo.apply(change("seed", create("a", "Alpha.")))
    fired = racing(
        repo, change("other", {"op": "corroborate", "node_id": "a", "expected_revision": 1, "evidence": [MANUAL]})
    )
    with pytest.raises(MemoryStoreError) as info:
        repo.apply(change("mine", activate("a", 1)))
    assert fired and info.value.code == "revision_mismatch"
    assert repo.node(NS, "a").revision == 2 and repo.node(NS, "a").status == "candidate"


def test_a_concurrent_change_to_a_read_neighbour_is_noticed(repo: DurableRepository) -> None:
    repo.apply(change("seed", create("a", "Alpha."), create("b", "Beta.")))
    racing(repo, change("tomb", {"op": "set_status", "node_id": "b", "expected_revision": 1, "status": "tombstoned"}))
    with pytest.raises(MemoryStoreError) as info:
        repo.apply(
            change(
                "link",
                {
                    "op": "add_relation",
                    "node_id": "a",
                    "expected_revision": 1,
                    "relation": {"kind": "related_to", "target": "b"},
                },
                {
                    "op": "add_relation",
                    "node_id": "b",
                    "expected_revision": 1,
                    "relation": {"kind": "related_to", "target": "a"},
                },
            )
        )
    assert info.value.code == "revision_mismatch"
    assert repo.node(NS, "a").relations == ()


def test_namespaces_are_isolated_even_with_crafted_ids(repo: DurableRepository) -> None:
    crafted = Namespace("../acme", "alice/../../bob", ".git")
    repo.apply(change("k", create("../../etc/passwd", "Crafted id."), ns=crafted))
    repo.apply(change("k", create("shared-id", "Alice's fact about tabs."), activate("shared-id", 1)))
    assert repo.get(OTHER, "shared-id") is None
    assert repo.get(crafted, "../../etc/passwd") is not None
    files = [e.path for e in repo.store.list()]
    assert all(p.count("/") == 3 and ".." not in p.split("/") and ".git" not in p.split("/") for p in files)
    # a relation can never point into another namespace
    with pytest.raises(MemoryStoreError) as info:
        repo.apply(
            change(
                "x",
                create("bobs", "Bob's note.", relations=[{"kind": "related_to", "target": "shared-id"}]),
                ns=OTHER,
            )
        )
    assert info.value.code == "node_not_found"
    assert repo.recall(OTHER, "tabs fact").hits == ()
    # a node file copied into another namespace's folder is refused on read
    text = repo.store.read(node_path(NS, "shared-id")).text
    repo.store.write(node_path(OTHER, "shared-id"), text, expected=None)
    with pytest.raises(MemoryStoreError) as bad:
        repo.get(OTHER, "shared-id")
    assert bad.value.code == "invalid_file"


def test_only_active_nodes_are_recalled(repo: DurableRepository) -> None:
    words = "deploy checklist staging"
    repo.apply(
        change(
            "seed",
            create("cand", f"Candidate {words}."),
            create("act", f"Active {words}.", status="active"),
            create("old", f"Superseded {words}.", status="active"),
            create("tomb", f"Tombstoned {words}.", status="active"),
            create(
                "new", f"Replacement {words}.", status="active", relations=[{"kind": "supersedes", "target": "old"}]
            ),
            {
                "op": "add_relation",
                "node_id": "old",
                "expected_revision": 1,
                "relation": {"kind": "superseded_by", "target": "new"},
            },
            {"op": "set_status", "node_id": "old", "expected_revision": 2, "status": "superseded"},
            {"op": "set_status", "node_id": "tomb", "expected_revision": 1, "status": "tombstoned"},
        )
    )
    repo.apply(change("seed", create("foreign", f"Foreign {words}.", status="active"), ns=OTHER))
    hits = repo.recall(NS, words, RecallPolicy(max_results=10)).hits
    assert sorted(h.node.id for h in hits) == ["act", "new"]
    assert all(h.node.status == "active" and h.score == 1.0 for h in hits)
    # activating the candidate makes it recallable; tombstoning removes it again
    repo.apply(change("on", activate("cand", 1)))
    assert "cand" in [h.node.id for h in repo.recall(NS, words, RecallPolicy(max_results=10)).hits]
    repo.apply(change("off", {"op": "set_status", "node_id": "cand", "expected_revision": 2, "status": "tombstoned"}))
    assert "cand" not in [h.node.id for h in repo.recall(NS, words, RecallPolicy(max_results=10)).hits]


def test_recall_policy_bounds_scores_and_related_reads(repo: DurableRepository) -> None:
    repo.apply(
        change(
            "seed",
            create(
                "index",
                "Release signing handbook index",
                status="active",
                relations=[{"kind": "related_to", "target": "proc"}],
            ),
            create(
                "proc",
                "Verify provenance attestations before publishing",
                status="active",
                relations=[{"kind": "related_to", "target": "index"}],
            ),
            create("half", "Release notes template", status="active"),
        )
    )
    assert [h.node.id for h in repo.recall(NS, "release signing handbook").hits] == ["index", "half"]
    assert [h.node.id for h in repo.recall(NS, "release signing handbook", RecallPolicy(min_score=0.5)).hits] == [
        "index"
    ]
    grown = repo.recall(NS, "release signing handbook", RecallPolicy(min_score=0.5, related_lookups=1)).hits
    assert [(h.node.id, h.via) for h in grown] == [("index", "lexical"), ("proc", "related")]
    for bad in (dict(max_results=0), dict(max_results=101), dict(min_score=-0.1), dict(related_lookups=101)):
        with pytest.raises(MemoryStoreError) as info:
            RecallPolicy(**bad)  # type: ignore[arg-type]
        assert info.value.code == "invalid_query"
    with pytest.raises(MemoryStoreError):
        repo.recall(NS, "   ")


def test_history_comes_from_git(git_repo: DurableRepository) -> None:
    repo = git_repo
    repo.apply(change("one", create("n", "First wording.")))
    repo.apply(
        change(
            "two",
            {
                "op": "revise",
                "node_id": "n",
                "expected_revision": 1,
                "content": "Second wording.",
                "evidence": [MANUAL],
            },
        )
    )
    repo.apply(change("three", activate("n", 2)))
    revisions = repo.history(NS, "n")
    assert [(r.node.revision, r.node.status, r.node.content) for r in revisions] == [
        (3, "active", "Second wording."),
        (2, "candidate", "Second wording."),
        (1, "candidate", "First wording."),
    ]
    # only the current revision is in the file; no embedded history
    assert repo.store.read(node_path(NS, "n")).text.count("wording") == 1


def test_activate_convenience_and_usage_ledger(repo: DurableRepository) -> None:
    from datetime import UTC, datetime, timedelta

    from gitmem.durable.ledger import AccessEvent

    repo.apply(change("seed", create("n", "Prefer rebase over merge.")))
    repo.activate(NS, "n", 1, [Evidence("review://x", "sha256:1", "manual")])
    later = datetime.now(UTC) + timedelta(seconds=1)
    event = AccessEvent("turn-1/n", NS, "n", 2, later)
    assert repo.record_admission(event) is True
    assert repo.record_admission(event) is False  # idempotent by event id
    with pytest.raises(MemoryStoreError) as info:
        repo.record_admission(AccessEvent("turn-1/n", NS, "n", 2, later + timedelta(seconds=1)))
    assert info.value.code == "idempotency_conflict"
    with pytest.raises(MemoryStoreError) as stale:
        repo.record_admission(AccessEvent("turn-2/n", NS, "n", 1, later))
    assert stale.value.code == "revision_mismatch"
    repo.record_use(AccessEvent("use-1", NS, "n", 2, later))
    repo.record_use(AccessEvent("use-1", NS, "n", 2, later))
    assert (repo.usage(NS, "n").admissions, repo.usage(NS, "n").uses) == (1, 1)
    # the ledger is beside the repository, not in it
    assert not any("ledger" in e.path for e in repo.store.list())
    if hasattr(repo.store, "path"):
        assert Path(path_of(repo), "gitmem", "durable-ledger.sqlite3").exists()


def test_a_durable_mount_refuses_to_open_as_another_kind(tmp_path: Path, git_repo: DurableRepository) -> None:
    DurableRepository.open(tmp_path, "mem", create=True)
    with pytest.raises(MemoryStoreError) as info:
        Root(tmp_path).mount("mem", kind="file")
    assert info.value.code == "wrong_kind"
    Root(tmp_path).mount("files", create=True)
    with pytest.raises(MemoryStoreError) as again:
        DurableRepository.open(tmp_path, "files")
    assert again.value.code == "wrong_kind"
