"""SessionMemory on a git session mount: the calls, hygiene in commits, stats off main."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitmem.errors import MemoryStoreError
from gitmem.root import Root
from gitmem.session.hygiene import DAY
from gitmem.session.location import default_memory_dir, open_session_memory
from gitmem.session.memory import SessionMemory


class Clock:
    def __init__(self, t: float = 1_790_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(tmp_path: Path, clock: Clock) -> SessionMemory:
    return open_session_memory(tmp_path / "mem", clock=clock)


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def repo_of(memory: SessionMemory) -> str:
    return memory.store.path  # type: ignore[attr-defined,no-any-return]


def commits(memory: SessionMemory) -> int:
    return int(git(repo_of(memory), "rev-list", "--count", "main"))


def test_remember_success_and_failure_use_the_seed_formats(memory: SessionMemory, clock: Clock) -> None:
    ok = memory.remember_success(
        "release preflight", ["bash", "search"], "Release checks passed after provider verification"
    )
    assert ok.content == (
        "Success: release preflight\nTools: bash, search\nResult: Release checks passed after provider verification"
    )
    assert (ok.importance, ok.memory_type, ok.tags) == (0.8, "procedural", ("success", "bash", "search"))
    clock.t += 1
    bad = memory.remember_failure("provider verification", "missing PROVIDER_BASE_URL", ["bash"])
    assert bad.content == "Failure: provider verification\nError: missing PROVIDER_BASE_URL\nAttempted tools: bash"
    assert (bad.importance, bad.memory_type, bad.tags) == (0.9, "episodic", ("failure", "bash"))
    assert [i.id for i in memory.recall_by_tags(["release"], 10)] == []
    assert [i.id for i in memory.recall_by_tags(["bash"], 10)] == [bad.id, ok.id]
    assert [i.id for i in memory.recall_by_tags(["success"], 10)] == [ok.id]
    assert memory.get(ok.id) == ok.with_access(2, clock.t)


def test_each_remember_is_one_reviewable_commit(memory: SessionMemory) -> None:
    before = commits(memory)
    item = memory.remember("Use pnpm, not npm, in this repository.", tags=["tooling"], importance=0.7)
    assert commits(memory) == before + 1
    repo = repo_of(memory)
    files = git(repo, "ls-tree", "-r", "--name-only", "main").split()
    assert len(files) == 1 and files[0].startswith("items/")
    shown = git(repo, "show", f"main:{files[0]}")
    assert json.loads(shown)["id"] == item.id
    assert '  "content": "Use pnpm, not npm, in this repository.",\n' in shown
    git(repo, "fsck", "--strict")


def test_an_exact_duplicate_merges_into_the_canonical_item(memory: SessionMemory, clock: Clock) -> None:
    first = memory.remember("Release checks passed after provider verification", importance=0.4, tags=["release"])
    clock.t += 60
    second = memory.remember(
        "  release CHECKS passed after   provider verification ", importance=0.9, tags=["ci"], memory_type="semantic"
    )
    assert second.id == first.id
    assert len(memory) == 1
    stored = memory.get(first.id)
    assert stored.importance == 0.9
    assert stored.content == "  release CHECKS passed after   provider verification "
    assert stored.tags == ("release", "ci")
    assert stored.memory_type == "semantic"
    assert stored.metadata["duplicate_count"] == 1
    assert stored.timestamp == clock.t
    dup_id = stored.metadata["duplicate_ids"][0]
    assert memory.get(dup_id).id == first.id  # the duplicate's id still finds the canonical item
    diff = git(repo_of(memory), "diff", "main~1", "main")
    assert '-  "importance": 0.4,' in diff and '+  "importance": 0.9,' in diff


def test_short_texts_are_never_merged(memory: SessionMemory) -> None:
    a = memory.remember("Use pnpm")
    b = memory.remember("Use pnpm")
    assert a.id != b.id and len(memory) == 2


def test_recent_and_tags(memory: SessionMemory, clock: Clock) -> None:
    ids = []
    for n in range(5):
        clock.t += 1
        ids.append(memory.remember(f"memory number {n} about the release process", tags=[f"t{n % 2}"]).id)
    assert [i.id for i in memory.recent(3)] == ids[::-1][:3]
    assert [i.id for i in memory.recall_by_tags(["t1"], 10)] == [ids[3], ids[1]]
    assert memory.tag_counts() == {"t0": 3, "t1": 2}
    with pytest.raises(MemoryStoreError) as caught:
        memory.recent(0)
    assert caught.value.code == "invalid_query"


def test_recall_counts_accesses_without_committing(memory: SessionMemory, clock: Clock) -> None:
    item = memory.remember("remember to run the release checklist", tags=["release"])
    before = commits(memory)
    for _ in range(3):
        clock.t += 5
        memory.recall_by_tags(["release"], 5)
    assert commits(memory) == before
    seen = memory.get(item.id)
    assert (seen.access_count, seen.last_accessed) == (3, clock.t)
    stats = Path(repo_of(memory)) / "gitmem" / "session-stats"
    assert stats.is_file()
    again = open_session_memory(Path(repo_of(memory)).parent)  # another handle (process) sees them
    assert again.get(item.id).access_count == 3


def test_secrets_are_refused_with_the_rule_named(memory: SessionMemory) -> None:
    with pytest.raises(MemoryStoreError, match="secret rule 'github_token'") as caught:
        memory.remember("the CI token is ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    assert caught.value.code == "invalid_text"
    assert len(memory) == 0


def test_delete(memory: SessionMemory) -> None:
    item = memory.remember("an item that is about to be deleted")
    memory.delete(item.id)
    assert len(memory) == 0
    with pytest.raises(MemoryStoreError) as caught:
        memory.delete(item.id)
    assert caught.value.code == "not_found"


def test_prune_is_one_commit_that_revert_undoes(memory: SessionMemory, clock: Clock) -> None:
    stale = [memory.remember(f"stale low importance note {n} from long ago", importance=0.2).id for n in range(4)]
    kept = memory.remember("stale but pinned note from long ago", importance=0.2, tags=["pinned"])
    recalled = memory.remember("stale but often recalled note", importance=0.2, tags=["hot"])
    for _ in range(3):
        memory.recall_by_tags(["hot"], 1)
    clock.t += 91 * DAY
    fresh = memory.remember("a fresh note that pruning leaves alone", importance=0.1)
    before = commits(memory)
    dry = memory.prune(dry_run=True)
    assert set(dry.removed) == set(stale) and commits(memory) == before
    report = memory.prune()
    assert set(report.removed) == set(stale)
    assert report.kept_protected == 2 and report.remaining == 3
    assert commits(memory) == before + 1
    assert {i.id for i in memory.items()} == {kept.id, recalled.id, fresh.id}
    store = memory.store
    store.revert(git(repo_of(memory), "rev-parse", "main").strip())  # type: ignore[attr-defined]
    assert len(memory) == 7
    git(repo_of(memory), "fsck", "--strict")


def test_prune_with_max_items(memory: SessionMemory, clock: Clock) -> None:
    for n in range(5):
        clock.t += DAY
        memory.remember(f"note number {n} for the item cap", importance=0.1 * (n + 1))
    report = memory.prune(max_items=2)
    assert len(report.removed) == 3
    assert sorted(i.importance for i in memory.items()) == [0.4, 0.5]


def test_supersede_and_conflict(memory: SessionMemory) -> None:
    old = memory.remember("deploys go through the staging cluster first")
    new = memory.remember("deploys go straight to production after CI passes")
    memory.supersede(old.id, new.id)
    assert memory.get(old.id).superseded
    assert [i.id for i in memory.recent(10)] == [new.id]
    assert {i.id for i in memory.items()} == {old.id, new.id}
    a = memory.remember("the API returns timestamps in UTC")
    b = memory.remember("the API returns timestamps in local time")
    memory.mark_conflict(a.id, b.id)
    assert memory.get(a.id).conflicts_with == (b.id,)
    assert memory.get(b.id).conflicts_with == (a.id,)
    with pytest.raises(MemoryStoreError):
        memory.supersede(a.id, "mem-missing")


def test_an_unreadable_item_file_is_skipped_not_fatal(memory: SessionMemory) -> None:
    memory.remember("one good item that parses fine")
    memory.store.write("items/zz/broken.json", "{not json", expected=None)
    assert len(memory) == 1
    assert "items/zz/broken.json" in memory.skipped


def test_default_location(tmp_path: Path) -> None:
    assert default_memory_dir(tmp_path) == tmp_path / ".gitmem" / "memory"
    assert default_memory_dir(tmp_path, "custom") == tmp_path / "custom"
    assert default_memory_dir(tmp_path, tmp_path / "abs") == tmp_path / "abs"
    memory = open_session_memory(default_memory_dir(tmp_path))
    memory.remember("stored under the workspace's .gitmem folder")
    assert (tmp_path / ".gitmem" / "memory" / "session.git" / "HEAD").is_file()
    assert Root(tmp_path / ".gitmem" / "memory").kind("session") == "session"


def test_a_folder_that_cannot_be_created_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(MemoryStoreError) as caught:
        open_session_memory(blocker / "memory")
    assert caught.value.code == "unavailable"
    assert str(blocker / "memory") in caught.value.message


def test_a_file_mount_is_not_a_session_memory(tmp_path: Path) -> None:
    Root(tmp_path).mount("session", create=True)
    with pytest.raises(MemoryStoreError) as caught:
        open_session_memory(tmp_path)
    assert caught.value.code == "wrong_kind"


def test_recall_similar_with_the_seed_example(memory: SessionMemory, clock: Clock) -> None:
    ok = memory.remember_success(
        "release preflight", ["bash", "search"], "Release checks passed after provider verification"
    )
    clock.t += 1
    bad = memory.remember_failure("provider verification", "missing PROVIDER_BASE_URL", ["bash"])
    memory.remember("the office coffee machine is on the third floor")
    related = memory.recall_similar("release provider verification", 5)
    assert [r.item.id for r in related] == [ok.id, bad.id]
    assert related[0].score == pytest.approx(1.0)
    assert related[1].score == pytest.approx(2 / 3)
    assert related[0].item.access_count == 1
    with pytest.raises(MemoryStoreError) as caught:
        memory.recall_similar("   ", 5)
    assert caught.value.code == "invalid_query"


def test_recall_leaves_out_superseded_and_annotates_conflicts(memory: SessionMemory, clock: Clock) -> None:
    old = memory.remember("deploys go through the staging cluster first")
    clock.t += 1
    new = memory.remember("deploys go straight to production after CI")
    clock.t += 1
    other = memory.remember("deploys need a second reviewer on Fridays")
    assert [r.item.id for r in memory.recall_similar("deploys", 5)] == [other.id, new.id, old.id]
    memory.supersede(old.id, new.id)
    memory.mark_conflict(new.id, other.id)
    results = memory.recall_similar("deploys", 5)
    assert [r.item.id for r in results] == [other.id, new.id]
    assert [c.id for c in results[0].conflicts] == [new.id]
    assert [c.id for c in results[1].conflicts] == [other.id]
    memory.delete(other.id)
    assert [r.item.id for r in memory.recall_similar("deploys", 5)] == [new.id]


def test_relations_and_prune_are_single_commits_with_readable_messages(memory: SessionMemory) -> None:
    a = memory.remember("the API returns timestamps in UTC")
    b = memory.remember("the API returns timestamps in local time")
    before = commits(memory)
    memory.mark_conflict(a.id, b.id)
    assert commits(memory) == before + 1
    message = git(repo_of(memory), "log", "-1", "--format=%B")
    assert message.startswith(f"{a.id} conflicts with {b.id}\n")
    assert "Gitmem-Op: session-relate" in message
    with pytest.raises(MemoryStoreError) as caught:
        memory.mark_conflict(a.id, a.id)
    assert caught.value.code == "invalid_query"
    memory.remember("an old unimportant note", importance=0.1)
    memory.prune(max_items=2)
    assert git(repo_of(memory), "log", "-1", "--format=%s") == "prune 1 session items\n"
    assert "Gitmem-Prune-Rule: older than 90 days and importance < 0.5, max_items=2" in git(
        repo_of(memory), "log", "-1", "--format=%B"
    )
    assert git(repo_of(memory), "log", "--format=%s", "--grep", "remember").count("remember mem-") == 3
