"""The review gate: a run writes to its proposal, others read main, people approve or reject."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from serve.support import fsck_clean, git

from gitmem import GitFileStore, MemoryStoreError, Origin, review
from gitmem.adapters.cli import cli
from gitmem.model import Changes
from gitmem.review import MergeRefused

RUN = "run-42"


@pytest.fixture
def store(tmp_path: Path) -> GitFileStore:
    store = GitFileStore.init(tmp_path / "user.git")
    store.sync.write("prefs/style.md", "- likes tea\n- reply in English\n", expected=None)
    review.enable(store)
    return store


def trailers(path: str, rev: str = "main") -> str:
    return git("log", "-1", "--format=%(trailers)", rev, cwd=path).stdout


def test_a_run_writes_to_its_proposal_and_other_readers_keep_main(store: GitFileStore) -> None:
    sync = store.sync
    main = sync.head()
    style = sync.read("prefs/style.md")
    agent = sync.for_run(RUN)
    v1 = agent.write("prefs/style.md", "- likes coffee\n- reply in English\n", expected=style.version)
    agent.write("notes/new.md", "a note from the run\n", expected=None, origin=Origin(principal_id="bot"))
    # Everyone else still reads main, unchanged.
    assert sync.head() == main
    assert sync.read("prefs/style.md") == style
    assert [e.path for e in sync.list()] == ["prefs/style.md"]
    assert sync.search("coffee").matches == ()
    assert sync.changes(main) == Changes(main, ())
    # The run sees its own proposal through every read.
    assert agent.read("prefs/style.md").version == v1
    assert [e.path for e in agent.list()] == ["notes/new.md", "prefs/style.md"]
    assert [m.path for m in agent.search("coffee").matches] == ["prefs/style.md"]
    changed = agent.changes(main)
    assert isinstance(changed, Changes) and changed.paths == ("notes/new.md", "prefs/style.md")
    # A second edit by the run checks against its own proposal, not main.
    agent.write("prefs/style.md", "- likes coffee\n", expected=v1)
    # The proposal is a branch forked from main; its commits carry the run.
    [found] = review.proposals(store)
    assert (found.run, found.ref, found.base, found.commits) == (RUN, f"refs/heads/proposals/{RUN}", main, 3)
    assert found.paths == ("notes/new.md", "prefs/style.md") and found.principals == ("bot",)
    runs = git("log", "--format=%(trailers:key=Gitmem-Run,valueonly)", f"proposals/{RUN}", cwd=store.path).stdout
    assert runs.split() == [RUN, RUN, RUN]
    # A plain store writing with the run id lands on the same proposal.
    sync.write("notes/other.md", "also the run\n", expected=None, origin=Origin(run_id=RUN))
    assert sync.head() == main
    assert review.proposal(store, RUN).commits == 4
    fsck_clean(store.path)


def test_writes_without_a_run_id_and_writes_with_the_gate_off_go_to_main(store: GitFileStore) -> None:
    sync = store.sync
    sync.write("a.md", "by a person\n", expected=None, origin=Origin(principal_id="alice"))
    assert sync.read("a.md").text == "by a person\n"
    review.enable(store, False)
    sync.for_run(RUN).write("b.md", "no gate\n", expected=None)
    assert sync.read("b.md").text == "no gate\n"
    assert review.proposals(store) == []


def test_restore_and_revert_by_a_run_go_through_the_gate_and_carry_the_run(store: GitFileStore) -> None:
    sync = store.sync
    style = sync.read("prefs/style.md")
    first = sync.head()
    sync.write("prefs/style.md", "- likes milk\n", expected=style.version)
    main = sync.head()
    agent = sync.for_run(RUN)

    restored = agent.restore("prefs/style.md", first, expected=sync.read("prefs/style.md").version)

    assert restored == style.version and sync.head() == main  # main is untouched
    assert agent.read("prefs/style.md").version == style.version  # the run sees its proposal
    runs = git("log", "--format=%(trailers:key=Gitmem-Run,valueonly)", f"proposals/{RUN}", cwd=store.path).stdout
    assert runs.split() == [RUN] and review.proposal(store, RUN).commits == 1
    agent.write("notes/n.md", "from the run\n", expected=None)
    tip = review.proposal(store, RUN).head

    assert agent.revert(tip) is not None

    assert sync.head() == main
    with pytest.raises(MemoryStoreError) as err:
        agent.read("notes/n.md")
    assert err.value.code == "not_found"
    runs = git("log", "--format=%(trailers:key=Gitmem-Run,valueonly)", f"proposals/{RUN}", cwd=store.path).stdout
    assert runs.split() == [RUN, RUN, RUN]
    ops = git("log", "--format=%(trailers:key=Gitmem-Op,valueonly)", f"proposals/{RUN}", cwd=store.path).stdout
    assert ops.split()[:3] == ["revert", "create", "restore"]
    fsck_clean(store.path)


def test_approve_merges_with_the_trailer_and_deletes_the_proposal(store: GitFileStore) -> None:
    sync = store.sync
    agent = sync.for_run(RUN)
    agent.write("notes/new.md", "from the run\n", expected=None)
    sync.write("notes/main.md", "a person wrote on main meanwhile\n", expected=None)
    before = sync.head()
    tip = review.proposal(store, RUN).head
    diff = review.diff(store, RUN)
    assert [(d.path, d.status) for d in diff] == [("notes/new.md", "added")]  # not main's own change
    result = review.approve(store, RUN, approver="carol")
    assert result.kind == "merged" and result.before == before
    assert sync.head() == result.after
    assert git("rev-list", "--parents", "-n1", "main", cwd=store.path).stdout.split()[1:] == [before, tip]
    assert "Gitmem-Approved-By: carol" in trailers(store.path)
    assert "Gitmem-Op: merge" in trailers(store.path)
    assert {e.path for e in sync.list()} == {"notes/new.md", "notes/main.md", "prefs/style.md"}
    assert review.proposals(store) == []
    assert agent.read("notes/new.md").text == "from the run\n"  # the run reads main again
    fsck_clean(store.path)


def test_approving_when_main_did_not_move_still_records_the_approval(store: GitFileStore) -> None:
    sync = store.sync
    before = sync.head()
    sync.for_run(RUN).write("notes/new.md", "x\n", expected=None)
    tip = review.proposal(store, RUN).head
    result = review.approve(store, RUN, approver="carol")
    assert (
        git("rev-parse", "main^{tree}", cwd=store.path).stdout
        == git("rev-parse", f"{tip}^{{tree}}", cwd=store.path).stdout
    )
    assert git("rev-list", "--parents", "-n1", "main", cwd=store.path).stdout.split()[1:] == [before, tip]
    assert result.paths == ("notes/new.md",)
    assert "Gitmem-Approved-By: carol" in trailers(store.path)


def test_a_conflicting_approve_is_refused_and_changes_nothing(store: GitFileStore) -> None:
    sync = store.sync
    style = sync.read("prefs/style.md")
    sync.for_run(RUN).write("prefs/style.md", "- likes coffee\n", expected=style.version)
    sync.write("prefs/style.md", "- likes water\n", expected=style.version)
    main, tip = sync.head(), review.proposal(store, RUN).head
    with pytest.raises(MergeRefused) as caught:
        review.approve(store, RUN, approver="carol")
    assert caught.value.code == "version_mismatch"
    assert caught.value.paths == ("prefs/style.md",)
    assert "prefs/style.md" in caught.value.message
    assert sync.head() == main
    assert review.proposal(store, RUN).head == tip
    fsck_clean(store.path)


def test_a_proposal_branch_changed_by_plain_git_is_checked_before_it_lands(store: GitFileStore, tmp_path: Path) -> None:
    sync = store.sync
    sync.for_run(RUN).write("notes/ok.md", "fine\n", expected=None)
    main = sync.head()
    work = tmp_path / "work"
    git("clone", "-q", "-b", f"proposals/{RUN}", store.path, str(work))
    (work / "notes" / "blob.md").write_bytes(b"binary\x00content\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "sneak a binary file in", cwd=work)
    git("push", "-q", "origin", f"HEAD:proposals/{RUN}", cwd=work)  # no hooks installed: accepted
    with pytest.raises(MergeRefused) as caught:
        review.approve(store, RUN, approver="carol")
    assert caught.value.code == "invalid_file" and caught.value.paths == ("notes/blob.md",)
    assert sync.head() == main
    fsck_clean(store.path)


def test_reject_removes_the_proposal(store: GitFileStore) -> None:
    sync = store.sync
    main = sync.head()
    agent = sync.for_run(RUN)
    agent.write("notes/bad.md", "wrong\n", expected=None)
    tip = review.reject(store, RUN, rejecter="dana", reason="not what we asked for")
    assert git("show-ref", cwd=store.path).stdout.split()[1::2] == ["refs/gitmem/reviews", "refs/heads/main"]
    assert sync.head() == main
    assert review.proposals(store) == []
    with pytest.raises(MemoryStoreError) as caught:
        agent.read("notes/bad.md")
    assert caught.value.code == "not_found"
    # The run starts afresh from main on its next write.
    agent.write("notes/good.md", "right\n", expected=None)
    assert review.proposal(store, RUN).base == main and review.proposal(store, RUN).head != tip
    [record] = review.rejections(store)
    assert (record.run, record.head, record.rejected_by, record.reason) == (RUN, tip, "dana", "not what we asked for")
    # The record does not keep the rejected content reachable (one commit, its empty tree).
    assert len(git("rev-list", "--objects", "refs/gitmem/reviews", cwd=store.path).stdout.splitlines()) == 2
    second = review.reject(store, RUN, rejecter="erin")
    assert [(r.head, r.rejected_by, r.reason) for r in review.rejections(store)] == [
        (second, "erin", None),
        (tip, "dana", "not what we asked for"),
    ]
    agent.write("notes/again.md", "again\n", expected=None)
    with pytest.raises(MemoryStoreError) as anonymous:
        review.reject(store, RUN, rejecter=" ")
    assert anonymous.value.code == "forbidden" and review.proposal(store, RUN).head
    fsck_clean(store.path)
    for call in (
        lambda: review.reject(store, "nobody", rejecter="x"),
        lambda: review.approve(store, "nobody", approver="x"),
    ):
        with pytest.raises(MemoryStoreError) as missing:
            call()
        assert missing.value.code == "not_found"


def test_a_run_id_that_cannot_name_a_branch_is_refused_not_written_to_main(store: GitFileStore) -> None:
    sync = store.sync
    main = sync.head()
    # one component, or a principal's folder and a topic (x/y): never deeper, never an empty part
    for bad in ("a..b", "x/y/z", "/y", "x/", "x//y", "-lead", "end.lock", "sp ace", "x/-y"):
        with pytest.raises(MemoryStoreError) as caught:
            sync.write("n.md", "x\n", expected=None, origin=Origin(run_id=bad))
        assert caught.value.code == "forbidden"
    assert sync.head() == main


_WRITER = """
import sys
from gitmem import GitFileStore, Origin
store = GitFileStore.open(sys.argv[1]).sync
for i in range(int(sys.argv[3])):
    store.write(f"{sys.argv[2]}/{i}.md", f"{i}\\n", expected=None, origin=Origin(run_id="shared-run"))
"""


def test_two_processes_starting_the_same_proposal_lose_nothing(store: GitFileStore) -> None:
    main = store.sync.head()
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, store.path, side, "15"]) for side in ("a", "b")]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    found = review.proposal(store, "shared-run")
    assert found.base == main and found.commits == 30
    assert len(store.sync.for_run("shared-run").list()) == 31
    assert store.sync.head() == main
    fsck_clean(store.path)


def test_the_cli_enables_lists_shows_approves_and_rejects(tmp_path: Path) -> None:
    runner = CliRunner()
    root = tmp_path / "mem"

    def gm(*args: str, input: str | None = None) -> Result:
        return runner.invoke(cli, ["--root", str(root), *args], input=input, catch_exceptions=False)

    assert gm("init", "user").exit_code == 0
    assert gm("review", "enable", "user").exit_code == 0
    assert gm("write", "user", "a.md", "--create", "--run", "r1", input="from r1\n").exit_code == 0
    assert gm("write", "user", "b.md", "--create", "--run", "r2", input="from r2\n").exit_code == 0
    assert gm("ls", "user").stdout.strip() == ""
    listed = json.loads(gm("review", "list", "user", "--json").stdout)
    assert listed["review"] is True and [p["run"] for p in listed["proposals"]] == ["r1", "r2"]
    shown = gm("review", "show", "user", "r1")
    assert shown.exit_code == 0 and "+from r1" in shown.stdout
    approved = json.loads(gm("review", "approve", "user", "r1", "--principal", "dana", "--json").stdout)
    assert approved["approved_by"] == "dana" and approved["paths"] == ["a.md"]
    assert "Gitmem-Approved-By: dana" in trailers(str(root / "user.git"))
    assert gm("review", "reject", "user", "r2").exit_code == 0
    assert gm("ls", "user").stdout.split()[0] == "a.md"
    missing = gm("review", "approve", "user", "r2", "--json")
    assert missing.exit_code == 1 and json.loads(missing.stdout)["error"] == "not_found"
    # Both sides change a.md: approving is refused with the path, exit code 1, main unchanged.
    assert gm("edit", "user", "a.md", "--old", "from r1", "--new", "from r3", "--run", "r3").exit_code == 0
    assert gm("edit", "user", "a.md", "--old", "from r1", "--new", "by hand").exit_code == 0
    refused = gm("review", "approve", "user", "r3", "--json")
    assert refused.exit_code == 1
    error = json.loads(refused.stdout)
    assert (error["error"], error["paths"]) == ("version_mismatch", ["a.md"])
    assert gm("cat", "user", "a.md").stdout == "by hand\n"
    assert "r3" in gm("review", "list", "user").stdout


def test_agent_tools_of_a_run_edit_its_proposal_again_and_again(store: GitFileStore) -> None:
    from gitmem.tools import FileMemoryCapability, FileMount

    main = store.sync.head()
    tools = FileMemoryCapability([FileMount("user", store, "write")])
    who = Origin(run_id=RUN, principal_id="bot")

    for new in ("coffee", "cocoa", "juice"):  # each edit reads what the run wrote before
        old = {"coffee": "tea", "cocoa": "coffee", "juice": "cocoa"}[new]
        done = tools.call(
            "edit", {"memory": "user", "path": "prefs/style.md", "old_string": old, "new_string": new}, origin=who
        )
        assert "error" not in done, done
    mine = tools.call("view", {"memory": "user", "path": "prefs/style.md"}, origin=who)
    theirs = tools.call("view", {"memory": "user", "path": "prefs/style.md"})
    assert "juice" in str(mine["content"]) and "tea" in str(theirs["content"])
    assert store.sync.head() == main
    assert review.proposal(store, RUN).commits == 3


def test_a_run_view_sees_its_proposal_appear_get_packed_and_go_whoever_changes_it(store: GitFileStore) -> None:
    """A run's view remembers that it has no proposal (with the state of ``packed-refs``), and
    each read still sees a proposal that plain git created, packed, moved or deleted meanwhile."""
    sync = store.sync
    agent = sync.for_run(RUN)
    main = sync.head()
    ref = f"refs/heads/proposals/{RUN}"
    assert agent.read("prefs/style.md").text == "- likes tea\n- reply in English\n"  # no proposal: main
    assert agent.read("prefs/style.md").text == "- likes tea\n- reply in English\n"  # the absence remembered
    # Another process makes the proposal (a loose ref): the next read goes there.
    work = sync.for_run("someone-else")
    work.write("notes/x.md", "on a proposal\n", expected=None)
    other = git("rev-parse", "refs/heads/proposals/someone-else", cwd=store.path).stdout.strip()
    git("update-ref", ref, other, cwd=store.path)
    assert agent.read("notes/x.md").text == "on a proposal\n"
    assert agent.head() == other
    # Packed (the loose file goes, packed-refs holds it): still found.
    git("pack-refs", "--all", cwd=store.path)
    assert not (Path(store.path) / ref).exists()
    assert agent.head() == other
    # Deleted from packed-refs by plain git: the view reads main again.
    git("update-ref", "-d", ref, cwd=store.path)
    assert agent.head() == main
    with pytest.raises(MemoryStoreError) as caught:
        agent.read("notes/x.md")
    assert caught.value.code == "not_found"
    # Absent with packed-refs unchanged (remembered), then created loose again by plain git.
    assert agent.head() == main
    git("update-ref", ref, other, cwd=store.path)
    assert agent.head() == other
    # And absent once more after a plain-git delete of that loose ref, with packed-refs as it was.
    git("update-ref", "-d", ref, cwd=store.path)
    assert agent.head() == main
    fsck_clean(store.path)


def test_review_list_credits_each_commit_to_its_own_author(store: GitFileStore, tmp_path: Path) -> None:
    agent = store.sync.for_run(RUN)
    agent.write("notes/a.md", "from the agent\n", expected=None, origin=Origin(principal_id="claude"))
    # A person fixes the proposal with plain git: their commit is theirs, not the agent's.
    clone = tmp_path / "clone"
    git("clone", "-q", "-b", f"proposals/{RUN}", str(store.path), str(clone))
    (clone / "notes" / "a.md").write_text("from the agent, fixed by a person\n")
    person = {"GIT_AUTHOR_NAME": "Alice Person", "GIT_AUTHOR_EMAIL": "alice@example.com"}
    git("commit", "-qam", "fix the agent's note", cwd=clone, env=person)
    git("push", "-q", "origin", f"HEAD:refs/heads/proposals/{RUN}", cwd=clone)
    [found] = review.proposals(store)
    assert [(who, summary) for _c, who, summary in found.log] == [
        ("Alice Person", "fix the agent's note"),
        ("claude", "create notes/a.md"),
    ]
    assert found.authors == (("Alice Person", 1), ("claude", 1)) and found.principals == ("claude",)
    root = str(Path(store.path).parent)
    listed = CliRunner().invoke(cli, ["--root", root, "review", "list", "user"], catch_exceptions=False)
    assert "2 commits" in listed.output and "by Alice Person (1), claude (1)" in listed.output
    shown = CliRunner().invoke(cli, ["--root", root, "review", "show", "user", RUN], catch_exceptions=False)
    assert "Alice Person  fix the agent's note" in shown.output and "claude  create notes/a.md" in shown.output
    as_json = json.loads(CliRunner().invoke(cli, ["--root", root, "review", "list", "user", "--json"]).output)
    assert as_json["proposals"][0]["authors"] == [{"who": "Alice Person", "commits": 1}, {"who": "claude", "commits": 1}]
    fsck_clean(store.path)


@pytest.mark.parametrize("who", ["x\udcffy", "a<b>", "mallory\rGitmem-Run: other", "a\u2028b", "a\x0bb", "a\tb"])
def test_a_rejecter_no_identity_trailer_may_hold_is_refused_and_nothing_moves(store: GitFileStore, who: str) -> None:
    # The rejecter's name becomes the record's author and its Gitmem-Rejected-By trailer: held to the one
    # rule of identity trailers, as an approver is. A lone surrogate or angle brackets failed deep in
    # libgit2 as "unavailable: git error", and a carriage return went into the trailer as it was.
    store.sync.for_run(RUN).write("notes/bad.md", "wrong\n", expected=None)
    refs = git("show-ref", cwd=store.path).stdout
    with pytest.raises(MemoryStoreError) as caught:
        review.reject(store, RUN, rejecter=who)
    assert caught.value.code == "forbidden", caught.value
    assert git("show-ref", cwd=store.path).stdout == refs
    assert [p.run for p in review.proposals(store)] == [RUN]
