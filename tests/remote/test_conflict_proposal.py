"""Conflict proposals, joining and cloning, through the library (the forge scenarios run the CLI).

A local bare repository plays the forge; a person works in a plain-git clone of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from serve.support import commit_all, fsck_clean, git, has_object, hosted, write

from gitmem import MemoryStoreError, Origin, remotes, review
from gitmem.remotes import MergeRefused


class Pair:
    """Memory ``user`` pushed to ``hosting``; ``work`` is a person's clone of it."""

    def __init__(self, tmp_path: Path) -> None:
        self.root, self.store, self.hosting = hosted(tmp_path, {"notes/a.md": "first\n", "notes/b.md": "bee\n"})
        self.sync = self.store.sync
        self.work = tmp_path / "work"
        git("clone", "-q", str(self.hosting), str(self.work))

    def person(self, path: str, text: str | None) -> str:
        if text is None:
            git("rm", "-q", path, cwd=self.work)
            git("commit", "-q", "-m", f"remove {path}", cwd=self.work)
            pushed = git("rev-parse", "HEAD", cwd=self.work).stdout.strip()
        else:
            write(self.work, path, text)
            pushed = commit_all(self.work, f"change {path}")
        git("push", "-q", "origin", "main", cwd=self.work)
        return pushed

    def agent(self, path: str, text: str) -> None:
        current = self.sync.read(path)
        self.sync.write(path, text, expected=current.version)


@pytest.fixture
def pair(tmp_path: Path) -> Pair:
    return Pair(tmp_path)


def test_a_conflict_proposal_only_opens_for_history_that_passes_the_rules(pair: Pair) -> None:
    pair.person("notes/c.md", "password = hunter2-is-my-password\n")
    pushed = pair.person("notes/a.md", "theirs\n")
    pair.agent("notes/a.md", "ours\n")
    head = pair.sync.head()
    with pytest.raises(MergeRefused) as caught:
        remotes.pull(pair.store, propose=True)
    assert caught.value.paths == ("notes/c.md",) and caught.value.code == "invalid_file"
    assert pair.sync.head() == head and review.proposals(pair.store) == []
    assert not has_object(pair.store.path, pushed)
    fsck_clean(pair.store.path)


def test_theirs_takes_a_deletion_and_approval_keeps_what_agents_wrote_meanwhile(pair: Pair) -> None:
    theirs = pair.person("notes/a.md", None)
    pair.agent("notes/a.md", "ours\n")
    result = remotes.pull(pair.store, propose=True)
    assert (result.kind, result.paths, result.proposal) == ("conflict", ("notes/a.md",), "merge-origin")
    # Pulling again while neither side moved keeps the draft (and what was settled in it).
    draft = review.conflict(pair.store, "merge-origin")
    assert draft is not None and draft.unresolved == ("notes/a.md",) and draft.theirs == theirs
    assert remotes.pull(pair.store, propose=True).proposal == "merge-origin"
    assert review.conflict(pair.store, "merge-origin") == draft
    with pytest.raises(MemoryStoreError) as caught:
        review.resolve(pair.store, "merge-origin", "notes/b.md", side="ours")
    assert caught.value.code == "not_found"
    # The draft is this memory's own unfinished merge: push --proposals never sends it.
    with pytest.raises(MemoryStoreError) as behind:
        remotes.push(pair.store, proposals=True)
    assert behind.value.code == "version_mismatch"
    assert "merge-origin" not in git("ls-remote", "--heads", str(pair.hosting)).stdout
    settled = review.resolve(pair.store, "merge-origin", "notes/a.md", side="theirs")
    assert settled.unresolved == ()
    pair.sync.write("notes/agent.md", "written meanwhile\n", expected=None, origin=Origin("run-1", "bot"))
    before = pair.sync.head()
    landed = review.approve(pair.store, "merge-origin", approver="alice")
    assert landed.kind == "merged" and landed.before == before
    with pytest.raises(MemoryStoreError):
        pair.sync.read("notes/a.md")
    assert pair.sync.read("notes/agent.md").text == "written meanwhile\n"
    assert review.proposals(pair.store) == []
    git("merge-base", "--is-ancestor", theirs, "main", cwd=pair.store.path)
    assert [p.status for p in remotes.push(pair.store)] == ["ok"]
    fsck_clean(pair.store.path)
    fsck_clean(pair.hosting)


def test_only_a_new_memory_joins_an_unrelated_history(pair: Pair, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    git("init", "-q", "-b", "main", str(plain))
    write(plain, "notes.md", "kept in plain git\n")
    tip = commit_all(plain, "notes from elsewhere")
    other = pair.root.mount("other", create=True)
    other.sync.write("mine.md", "own work\n", expected=None)
    head = other.sync.head()
    remotes.add(other, "origin", str(plain))
    with pytest.raises(MergeRefused) as caught:
        remotes.pull(other)
    assert caught.value.code == "version_mismatch" and "gitmem clone" in caught.value.message
    assert other.sync.head() == head
    fresh = pair.root.mount("fresh", create=True)
    remotes.add(fresh, "origin", str(plain))
    joined = remotes.pull(fresh)
    assert joined.kind == "joined" and fresh.sync.head() == tip and joined.paths == ("notes.md",)
    fsck_clean(fresh.path)


def test_clone_refuses_a_taken_name_and_leaves_nothing_when_the_remote_is_unreachable(
    pair: Pair, tmp_path: Path
) -> None:
    with pytest.raises(MemoryStoreError) as caught:
        remotes.clone(pair.root, str(pair.hosting), "user")
    assert caught.value.code == "already_exists"
    with pytest.raises(MemoryStoreError) as caught:
        remotes.clone(pair.root, str(tmp_path / "nowhere.git"), "lost")
    assert "lost" not in pair.root.mounts()
    store, result = remotes.clone(pair.root, str(pair.hosting))
    assert pair.root.mounts() == ["hosting", "user"]
    # Two memories made in the same second share their "init memory" commit (a fast-forward); else it gives way.
    assert result.kind in ("fast_forward", "joined") and store.sync.head() == pair.sync.head()
    assert result.paths == ("notes/a.md", "notes/b.md")
    assert [(r.name, r.url) for r in remotes.list_remotes(store)] == [("origin", str(pair.hosting))]


def test_a_conflict_proposal_never_brings_back_what_this_memory_erased(pair: Pair) -> None:
    pair.sync.forget("notes/b.md")  # the forge still holds it: a copy pushed before the erasure
    pair.person("notes/a.md", "theirs\n")
    pair.agent("notes/a.md", "ours\n")
    head = pair.sync.head()
    with pytest.raises(MergeRefused) as caught:
        remotes.pull(pair.store, propose=True)
    assert caught.value.code == "forbidden" and "notes/b.md" in caught.value.paths
    assert any("erased" in r for r in caught.value.reasons)
    assert pair.sync.head() == head and review.proposals(pair.store) == []
    blob = git("rev-parse", "HEAD:notes/b.md", cwd=pair.work).stdout.strip()
    assert not has_object(pair.store.path, blob)
    fsck_clean(pair.store.path)


def test_a_squashed_proposal_is_closed_even_when_main_edited_its_files_since(pair: Pair) -> None:
    review.enable(pair.store)
    pair.sync.for_run("r1").write("notes/a.md", "proposed\n", expected=pair.sync.read("notes/a.md").version)
    pair.sync.for_run("r1").write("notes/new.md", "also proposed\n", expected=None)
    pair.sync.for_run("r2").write("notes/other.md", "still open\n", expected=None)
    remotes.push(pair.store, proposals=True)
    git("fetch", "-q", "origin", cwd=pair.work)
    git("merge", "-q", "--squash", "origin/proposals/r1", cwd=pair.work)
    git("commit", "-q", "-m", "Squashed pull request #1", cwd=pair.work)
    git("push", "-q", "origin", "main", cwd=pair.work)
    pair.person("notes/a.md", "edited after the merge\n")  # main no longer holds the proposal's version
    pulled = remotes.pull(pair.store)
    assert pulled.closed == ("r1",) and pulled.abandoned == ()
    assert [p.run for p in review.proposals(pair.store)] == ["r2"]
    assert pair.sync.read("notes/a.md").text == "edited after the merge\n"
    pushed = {p.ref for p in remotes.push(pair.store, proposals=True)}
    assert pushed == {"refs/heads/main", "refs/heads/proposals/r2"}
    fsck_clean(pair.store.path)


def test_pulling_again_after_the_remote_moved_never_drops_a_resolution_made_in_the_draft(pair: Pair) -> None:
    pair.person("notes/a.md", "theirs\n")
    pair.agent("notes/a.md", "ours\n")
    assert remotes.pull(pair.store, propose=True).proposal == "merge-origin"
    settled = review.resolve(pair.store, "merge-origin", "notes/a.md", text="ours and theirs, merged by hand\n")
    assert settled.unresolved == ()
    pair.person("notes/b.md", "bee, edited on the forge\n")  # the remote moves on meanwhile
    head = pair.sync.head()
    with pytest.raises(MemoryStoreError) as caught:
        remotes.pull(pair.store, propose=True)
    assert caught.value.code == "version_mismatch" and "notes/a.md" in caught.value.message, caught.value.message
    kept = review.conflict(pair.store, "merge-origin")
    assert kept == settled and pair.sync.head() == head
    # What was settled is still there to approve; the next pull brings the rest.
    review.approve(pair.store, "merge-origin", approver="alice")
    assert pair.sync.read("notes/a.md").text == "ours and theirs, merged by hand\n"
    assert remotes.pull(pair.store).kind in ("merged", "fast_forward")
    assert pair.sync.read("notes/b.md").text == "bee, edited on the forge\n"
    fsck_clean(pair.store.path)


def test_a_draft_nobody_settled_anything_in_is_replaced_when_the_remote_moved(pair: Pair) -> None:
    pair.person("notes/a.md", "theirs\n")
    pair.agent("notes/a.md", "ours\n")
    remotes.pull(pair.store, propose=True)
    moved = pair.person("notes/b.md", "bee, edited on the forge\n")
    result = remotes.pull(pair.store, propose=True)
    assert (result.kind, result.paths) == ("conflict", ("notes/a.md",))
    draft = review.conflict(pair.store, "merge-origin")
    assert draft is not None and draft.theirs == moved


def test_a_half_settled_draft_the_new_pull_keeps_names_what_is_left_before_it_can_be_approved(pair: Pair) -> None:
    pair.person("notes/a.md", "theirs\n")
    pair.person("notes/b.md", "bee, theirs\n")
    pair.agent("notes/a.md", "ours\n")
    pair.agent("notes/b.md", "bee, ours\n")
    assert remotes.pull(pair.store, propose=True).paths == ("notes/a.md", "notes/b.md")
    review.resolve(pair.store, "merge-origin", "notes/a.md", side="ours")
    pair.person("notes/c.md", "sea\n")  # the remote moves on
    with pytest.raises(MemoryStoreError) as caught:
        remotes.pull(pair.store, propose=True)
    # "approve it" alone is advice that fails (approval is refused while notes/b.md is unresolved).
    assert caught.value.code == "version_mismatch" and "notes/b.md" in caught.value.message, caught.value.message
    with pytest.raises(MemoryStoreError):
        review.approve(pair.store, "merge-origin", approver="alice")
    review.resolve(pair.store, "merge-origin", "notes/b.md", side="theirs")
    review.approve(pair.store, "merge-origin", approver="alice")
    assert remotes.pull(pair.store).kind in ("merged", "fast_forward")
    assert pair.sync.read("notes/c.md").text == "sea\n"
    fsck_clean(pair.store.path)
