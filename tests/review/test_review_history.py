"""Under the review gate a run's history reads (log, diff, blame, find) follow its proposal; others read main."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from serve.support import git

from gitmem import GitFileStore, MemoryStoreError, SyncGitFileStore, review

RUN = "run-7"


@pytest.fixture
def store(tmp_path: Path) -> SyncGitFileStore:
    """A gated memory: main has two commits, the run's proposal two more, main one more after the fork."""
    async_store = GitFileStore.init(tmp_path / "user.git")
    sync = async_store.sync
    sync.write("prefs/style.md", "likes tea\nreply in English\n", expected=None)
    sync.write("notes/old.md", "an old note about gardening\n", expected=None)
    review.enable(async_store)
    agent = sync.for_run(RUN)
    agent.write("prefs/style.md", "likes coffee\nreply in English\n", expected=sync.read("prefs/style.md").version)
    agent.write("notes/run.md", "the run learnt about volcanoes\n", expected=None)
    sync.write("notes/main.md", "a person wrote about volcanoes on main\n", expected=None)
    return sync


def commits(store: SyncGitFileStore, rev: str) -> list[str]:
    return git("rev-list", rev, cwd=store.path).stdout.split()


def test_a_runs_log_holds_its_proposal_on_top_of_main_and_nobody_elses_does(store: SyncGitFileStore) -> None:
    agent = store.for_run(RUN)
    proposal = review.proposal(store, RUN)

    mine = agent.log()

    assert [e.commit for e in mine] == commits(store, proposal.head)  # what git log of the branch says
    assert [(e.op, e.paths) for e in mine[:2]] == [("create", ("notes/run.md",)), ("edit", ("prefs/style.md",))]
    assert proposal.base in [e.commit for e in mine]  # main's history up to the fork is there
    assert "notes/main.md" not in {p for e in mine for p in e.paths}  # main's later change is not in this view
    theirs = store.log()
    assert [e.commit for e in theirs] == commits(store, "main")
    assert not {e.commit for e in theirs} & {e.commit for e in mine[:2]}
    assert [e.commit for e in store.for_run("run-other").log()] == commits(store, "main")
    # Filters and paths apply on the run's history too.
    assert [e.op for e in agent.log("prefs/style.md")] == ["edit", "create"]
    assert [e.op for e in agent.log(run=RUN)] == ["create", "edit"]
    assert store.log(run=RUN) == []
    # The async face reads the same view.
    assert [e.commit for e in asyncio.run(GitFileStore(store).for_run(RUN).log())] == [e.commit for e in mine]


def test_diff_and_blame_of_a_run_default_to_its_proposal_head(store: SyncGitFileStore) -> None:
    agent = store.for_run(RUN)
    proposal = review.proposal(store, RUN)
    assert proposal.base is not None

    changed = agent.diff(proposal.base)
    assert [(d.path, d.status) for d in changed] == [("notes/run.md", "added"), ("prefs/style.md", "modified")]
    assert "+likes coffee" in changed[1].patch
    # The same diff with an explicit head; main's readers diff to main.
    assert agent.diff(proposal.base, proposal.head) == changed
    assert [(d.path, d.status) for d in store.diff(proposal.base)] == [("notes/main.md", "added")]
    # An explicit b is honoured through a run too.
    assert [d.path for d in agent.diff(proposal.base, "main")] == ["notes/main.md"]

    [first, second] = agent.blame("prefs/style.md")
    edit = agent.log("prefs/style.md")[0]
    assert (first.text, first.commit, first.origin.run_id) == ("likes coffee", edit.commit, RUN)
    assert second.commit == proposal.base or second.commit in commits(store, proposal.base)
    assert [line.text for line in store.blame("prefs/style.md")] == ["likes tea", "reply in English"]
    assert [line.text for line in agent.blame("prefs/style.md", "main")] == ["likes tea", "reply in English"]
    assert agent.blame("notes/run.md")[0].origin.run_id == RUN
    with pytest.raises(MemoryStoreError) as caught:
        store.blame("notes/run.md")  # only on the proposal
    assert caught.value.code == "not_found"
    with pytest.raises(MemoryStoreError) as caught:
        agent.blame("notes/main.md")  # only on main
    assert caught.value.code == "not_found"


def test_find_through_a_run_ranks_its_proposal_files(store: SyncGitFileStore) -> None:
    agent = store.for_run(RUN)

    mine = agent.find("volcanoes")

    assert [h.path for h in mine] == ["notes/run.md"]  # its own file, not main's later one
    assert mine[0].version == agent.read("notes/run.md").version and "volcanoes" in mine[0].snippet
    assert [h.path for h in store.find("volcanoes")] == ["notes/main.md"]
    assert [h.path for h in agent.find("coffee")] == ["prefs/style.md"]
    assert store.find("coffee") == []
    assert [h.path for h in agent.find("gardening note", path="notes/")] == ["notes/old.md"]
    assert agent.find("gardening", path="prefs/") == []
    with pytest.raises(MemoryStoreError) as caught:
        agent.find("   ")
    assert caught.value.code == "invalid_pattern"


def test_a_run_without_a_proposal_reads_main_history(store: SyncGitFileStore) -> None:
    review.reject(store, RUN, rejecter="dana")
    for view in (store.for_run(RUN), store.for_run("never-wrote")):
        assert view.log() == store.log()
        first = store.log()[-1].commit
        assert view.diff(first) == store.diff(first)
        assert view.blame("prefs/style.md") == store.blame("prefs/style.md")
        assert [h.path for h in view.find("volcanoes")] == ["notes/main.md"]
