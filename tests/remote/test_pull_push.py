"""Remotes: push a mount to a "hosting" bare repository, change it there, pull it back.

Two local bare repositories play the mount and the hosting service; a person
works in a clone of the hosting one, as after a pull request was merged there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from serve.support import MALFORMED_KINDS, commit_all, fsck_clean, git, has_object, malformed_commit, write

from gitmem import GitFileStore, MemoryStoreError, Origin, Root, remotes, review
from gitmem.adapters.cli import cli
from gitmem.remotes import MergeRefused


class Team:
    """A mount pushed to a hosting repository, and a person's clone of the hosting one."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = Root(tmp_path / "mem")
        self.store = self.root.mount("user", create=True, hooks=False)  # some tests push to it with plain git
        self.sync = self.store.sync
        self.sync.write("prefs/style.md", "- likes tea\n- reply in English\n", expected=None)
        self.sync.write("notes/a.md", "first note\n", expected=None)
        self.hosting = tmp_path / "hosting" / "user.git"
        git("init", "-q", "--bare", "-b", "main", str(self.hosting))
        remotes.add(self.store, "origin", str(self.hosting))
        remotes.push(self.store, "origin")
        self.work = tmp_path / "work"
        git("clone", "-q", str(self.hosting), str(self.work))

    def person_commits(self, path: str, text: str, message: str = "a person's change") -> str:
        git("pull", "-q", "--ff-only", cwd=self.work)
        write(self.work, path, text)
        pushed = commit_all(self.work, message)
        git("push", "-q", "origin", "main", cwd=self.work)
        return pushed


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return Team(tmp_path)


def test_push_sends_main_and_a_pull_fast_forwards(team: Team) -> None:
    assert git("rev-parse", "main", cwd=team.hosting).stdout.strip() == team.sync.head()
    before = team.sync.head()
    pushed = team.person_commits("notes/from-pr.md", "merged through a pull request\n")
    result = remotes.pull(team.store, "origin")
    assert (result.kind, result.before, result.after) == ("fast_forward", before, pushed)
    assert result.paths == ("notes/from-pr.md",)
    assert team.sync.head() == pushed
    assert team.sync.read("notes/from-pr.md").text == "merged through a pull request\n"
    assert remotes.pull(team.store).kind == "up_to_date"
    fsck_clean(team.store.path)


def test_a_pull_merges_when_an_agent_changed_another_file_meanwhile(team: Team) -> None:
    pushed = team.person_commits("prefs/style.md", "- likes tea\n- reply in French\n")
    team.sync.write("notes/b.md", "the agent wrote this meanwhile\n", expected=None, origin=Origin("run-1", "bot"))
    agent_head = team.sync.head()
    result = remotes.pull(team.store, "origin", origin=Origin(principal_id="alice"))
    assert result.kind == "merged" and result.before == agent_head and result.paths == ("prefs/style.md",)
    head = team.sync.head()
    assert git("rev-list", "--parents", "-n1", head, cwd=team.store.path).stdout.split()[1:] == [agent_head, pushed]
    assert team.sync.read("prefs/style.md").text.endswith("French\n")
    assert team.sync.read("notes/b.md").text == "the agent wrote this meanwhile\n"
    assert "Gitmem-Op: merge" in git("log", "-1", "--format=%(trailers)", cwd=team.store.path).stdout
    # The merge goes back to the hosting repository as a fast-forward.
    remotes.push(team.store, "origin")
    assert git("rev-parse", "main", cwd=team.hosting).stdout.strip() == head
    fsck_clean(team.store.path)


def test_a_conflicting_pull_is_refused_and_main_is_untouched(team: Team) -> None:
    pushed = team.person_commits("notes/a.md", "the person's version\n")
    current = team.sync.read("notes/a.md")
    team.sync.write("notes/a.md", "the agent's version\n", expected=current.version)
    team.sync.write("notes/c.md", "another agent file\n", expected=None)
    head = team.sync.head()
    with pytest.raises(MergeRefused) as caught:
        remotes.pull(team.store, "origin")
    assert caught.value.code == "version_mismatch"
    assert caught.value.paths == ("notes/a.md",)
    assert "notes/a.md" in caught.value.message
    assert team.sync.head() == head
    assert team.sync.read("notes/a.md").text == "the agent's version\n"
    assert not has_object(team.store.path, pushed)  # nothing of the refused pull stays
    fsck_clean(team.store.path)


def test_a_pull_bringing_content_that_breaks_the_rules_is_refused(team: Team) -> None:
    head = team.sync.head()
    key = "deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    leaked = team.person_commits("notes/deploy.md", key)
    team.person_commits("notes/deploy.md", "ask the admin\n", "drop the key again")
    with pytest.raises(MergeRefused) as caught:
        remotes.pull(team.store, "origin")
    assert caught.value.code == "invalid_file"
    assert caught.value.paths == ("notes/deploy.md",)
    assert "secret:private_key" in caught.value.message
    assert team.sync.head() == head
    assert not has_object(team.store.path, leaked)
    fsck_clean(team.store.path)


@pytest.mark.parametrize("kind", MALFORMED_KINDS)
def test_a_pull_bringing_objects_git_refuses_is_refused(team: Team, kind: str) -> None:
    # The same strict object checks as a push (git's fsck rules, through index-pack --strict):
    # libgit2 reads these objects happily, but git fsck and every strict remote refuse them.
    team.person_commits("seed.md", "seed\n")
    remotes.pull(team.store, "origin")
    head = team.sync.head()
    bad = malformed_commit(team.work, kind)
    git("push", "-q", "-f", "origin", "main", cwd=team.work)  # the hosting repo checks nothing
    pull_refused_whole(team, head, bad)


def test_commits_another_ref_of_the_mount_holds_are_still_checked(team: Team) -> None:
    head = team.sync.head()
    bad = team.person_commits("notes/key.md", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n")
    # The same commit also reached the mount under another branch, by plain git (no hooks).
    git("push", "-q", team.store.path, f"{bad}:refs/heads/topic", cwd=team.work)
    with pytest.raises(MergeRefused) as caught:
        remotes.pull(team.store, "origin")
    assert caught.value.code == "invalid_file" and caught.value.paths == ("notes/key.md",)
    assert team.sync.head() == head
    assert not [n for n in os.listdir(Path(team.store.path) / "gitmem") if n.startswith("scratch-")]


def test_a_push_behind_the_remote_is_refused_until_pulled(team: Team) -> None:
    team.person_commits("notes/pr.md", "merged there\n")
    team.sync.write("notes/agent.md", "written here\n", expected=None)
    with pytest.raises(MemoryStoreError) as caught:
        remotes.push(team.store, "origin")
    assert caught.value.code == "version_mismatch" and "pull" in caught.value.message
    assert remotes.pull(team.store).kind == "merged"
    assert [p.status for p in remotes.push(team.store, "origin")] == ["ok"]


def test_proposals_are_pushed_for_pull_requests(team: Team) -> None:
    review.enable(team.store)
    team.sync.for_run("run-9").write("notes/proposed.md", "please review\n", expected=None)
    pushed = {p.ref: p.status for p in remotes.push(team.store, "origin", proposals=True)}
    assert pushed == {"refs/heads/main": "up_to_date", "refs/heads/proposals/run-9": "new"}
    tip = review.proposal(team.store, "run-9").head
    assert git("rev-parse", "proposals/run-9", cwd=team.hosting).stdout.strip() == tip
    # Merged there (as a pull request would be), then pulled back.
    git("fetch", "-q", "origin", cwd=team.work)
    git("merge", "-q", "--no-ff", "-m", "Merge pull request #1", "origin/proposals/run-9", cwd=team.work)
    git("push", "-q", "origin", "main", cwd=team.work)
    team.sync.for_run("run-10").write("notes/later.md", "not reviewed yet\n", expected=None)
    pulled = remotes.pull(team.store)
    assert (pulled.kind, pulled.closed) == ("fast_forward", ("run-9",))
    assert team.sync.read("notes/proposed.md").text == "please review\n"
    # The merged pull request closed its proposal; the other one stays open.
    assert [p.run for p in review.proposals(team.store)] == ["run-10"]


_AGENT = """
import os, sys
from gitmem import GitFileStore
store = GitFileStore.open(sys.argv[1]).sync
i = 0
while i < 5000 and not os.path.exists(sys.argv[2]):
    store.write(f"agent/{i}.md", f"{i}\\n", expected=None)
    i += 1
print(i)
"""


def test_agent_writes_racing_a_pull_are_all_kept(team: Team, tmp_path: Path) -> None:
    team.person_commits("notes/pr.md", "merged there\n")
    start = team.sync.head()
    stop = tmp_path / "stop"
    agent = subprocess.Popen(
        [sys.executable, "-c", _AGENT, team.store.path, str(stop)], stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while team.sync.head() == start and agent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # pull once the agent is writing
        results = [remotes.pull(team.store, "origin").kind for _ in range(3)]
    finally:
        stop.touch()
        out, _ = agent.communicate(timeout=120)
    assert agent.returncode == 0
    written = int(out)
    assert results[0] == "merged" and results[1:] == ["up_to_date", "up_to_date"]
    paths = {e.path for e in team.sync.list()}
    assert {f"agent/{i}.md" for i in range(written)} <= paths and "notes/pr.md" in paths
    assert len(paths) == written + 3
    fsck_clean(team.store.path)


def test_remote_names_urls_and_missing_remotes(team: Team, tmp_path: Path) -> None:
    with pytest.raises(MemoryStoreError) as taken:
        remotes.add(team.store, "origin", str(tmp_path))
    assert taken.value.code == "already_exists"
    for bad in ("-x", "a b", "x.lock", ""):
        with pytest.raises(MemoryStoreError):
            remotes.add(team.store, bad, str(tmp_path))
    remotes.add(team.store, "hub", "https://me:s3cret@git.example.com/user.git")
    shown = {r.name: r.shown_url for r in remotes.list_remotes(team.store)}
    assert shown == {"hub": "https://***@git.example.com/user.git", "origin": str(team.hosting)}
    with pytest.raises(MemoryStoreError) as missing:
        remotes.pull(team.store, "nowhere")
    assert missing.value.code == "not_found"
    empty = tmp_path / "empty.git"
    git("init", "-q", "--bare", str(empty))
    remotes.add(team.store, "empty", str(empty))
    with pytest.raises(MemoryStoreError) as no_main:
        remotes.pull(team.store, "empty")
    assert no_main.value.code == "not_found"
    remotes.remove(team.store, "hub")
    assert [r.name for r in remotes.list_remotes(team.store)] == ["empty", "origin"]


def test_the_cli_adds_lists_pushes_and_pulls(tmp_path: Path) -> None:
    runner = CliRunner()
    root = tmp_path / "mem"

    def gm(*args: str, input: str | None = None) -> tuple[int, str, str]:
        done = runner.invoke(cli, ["--root", str(root), *args], input=input, catch_exceptions=False)
        return done.exit_code, done.stdout, done.stderr

    hosting = tmp_path / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    assert gm("init", "user")[0] == 0
    assert gm("write", "user", "a.md", "--create", input="one\n")[0] == 0
    assert gm("remote", "add", "user", "origin", str(hosting))[0] == 0
    code, out, _ = gm("remote", "list", "user", "--json")
    assert json.loads(out)["remotes"] == [{"name": "origin", "url": str(hosting)}]
    code, out, _ = gm("push", "user", "--json")
    assert code == 0 and json.loads(out)["refs"][0]["status"] == "new"
    work = tmp_path / "work"
    git("clone", "-q", str(hosting), str(work))
    write(work, "a.md", "one, edited in a clone\n")
    commit_all(work, "edit a")
    git("push", "-q", "origin", "main", cwd=work)
    assert gm("write", "user", "b.md", "--create", input="agent\n")[0] == 0
    code, out, _ = gm("pull", "user", "origin", "--json")
    assert code == 0 and json.loads(out)["result"] == "merged"
    assert gm("cat", "user", "a.md")[1] == "one, edited in a clone\n"
    # A conflict: exit 1, the path on stderr, main unchanged.
    write(work, "b.md", "the person's b\n")
    git("pull", "-q", "--no-rebase", str(hosting), "main", cwd=work)
    write(work, "b.md", "the person's b\n")
    commit_all(work, "b by hand")
    git("push", "-q", "origin", "HEAD:main", cwd=work)
    code, out, _ = gm("edit", "user", "b.md", "--old", "agent", "--new", "agent, edited")
    assert code == 0
    code, out, err = gm("pull", "user")
    assert code == 1 and "b.md" in err and "version_mismatch" in err
    assert gm("cat", "user", "b.md")[1] == "agent, edited\n"


def test_pull_through_a_store_opened_by_the_async_api(team: Team) -> None:
    team.person_commits("notes/x.md", "x\n")
    store = GitFileStore.open(team.store.path)
    assert remotes.pull(store).kind == "fast_forward"


def pull_refused_whole(team: Team, head: str, bad: str) -> None:
    """The pull is refused by git's strict object checks; ``main`` stays at ``head``, ``bad`` never arrives."""
    with pytest.raises(MemoryStoreError) as caught:
        remotes.pull(team.store, "origin")
    assert "git's object checks refuse" in caught.value.message, caught.value.message
    assert team.sync.head() == head
    assert not has_object(team.store.path, bad)
    fsck_clean(team.store.path)


def _dotgit_commit(work: Path) -> str:
    """A commit on the clone's ``main`` whose tree holds an entry named ``.git`` (made with plain git)."""
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=work, input="x\n", capture_output=True, text=True, check=True
    ).stdout.strip()
    listing = git("ls-tree", "HEAD", cwd=work).stdout + f"100644 blob {blob}\t.git\n"
    tree = subprocess.run(["git", "mktree"], cwd=work, input=listing, capture_output=True, text=True, check=True)
    commit = git("commit-tree", tree.stdout.strip(), "-p", "HEAD", "-m", "a .git entry", cwd=work).stdout.strip()
    git("update-ref", "refs/heads/main", commit, cwd=work)
    return commit


@pytest.mark.parametrize("kind", [*MALFORMED_KINDS, "dot-git-entry"])
def test_history_git_refuses_is_refused_the_same_when_the_pull_must_merge(team: Team, kind: str) -> None:
    # An agent wrote here meanwhile, so the pull is a three-way merge: the merge itself must not
    # read what came in before the checks did (libgit2's merge failed on a '.git' entry: "unavailable").
    team.person_commits("seed.md", "seed\n")
    remotes.pull(team.store, "origin")
    team.sync.write("notes/agent.md", "written here meanwhile\n", expected=None)
    head = team.sync.head()
    bad = _dotgit_commit(team.work) if kind == "dot-git-entry" else malformed_commit(team.work, kind)
    git("push", "-q", "-f", "origin", "main", cwd=team.work)
    pull_refused_whole(team, head, bad)
    with pytest.raises(MergeRefused) as caught:  # and a conflict proposal does not open on it either
        remotes.pull(team.store, "origin", propose=True)
    assert caught.value.code == "invalid_file", caught.value.message
    assert team.sync.head() == head


def test_a_squash_merge_with_the_forges_default_message_is_refused_with_what_to_do(team: Team) -> None:
    # A forge squashes a pull request of two gitmem commits into one whose default message is each
    # commit's message in turn: two Gitmem-Principal lines, one outside the trailers. Every root's pull
    # refuses it (who it names could be read two ways), and says why and what the forge should do.
    review.enable(team.store)
    for path in ("s/one.md", "s/two.md"):
        team.sync.write(path, f"{path}\n", expected=None, origin=Origin("pr1", "bot"))
    remotes.push(team.store, proposals=True)
    git("fetch", "-q", "origin", cwd=team.work)
    git("merge", "-q", "--squash", "origin/proposals/pr1", cwd=team.work)
    logged = git("log", "--reverse", "--format=* %B", "main..origin/proposals/pr1", cwd=team.work).stdout
    git("commit", "-q", "-m", f"Proposal pr1 (#1)\n\n{logged}", cwd=team.work)
    git("push", "-q", "origin", "main", cwd=team.work)
    head = team.sync.head()
    done = subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(team.root.path), "pull", "user"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "identity" in done.stderr, done.stderr
    assert "squash with the pull request's title as the message" in done.stderr, done.stderr
    assert team.sync.head() == head


def test_a_refusal_found_before_a_merge_names_main_as_a_fast_forwards_does(team: Team) -> None:
    team.sync.write("notes/agent.md", "written here meanwhile\n", expected=None)
    head = team.sync.head()
    team.person_commits("notes/deploy.md", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    with pytest.raises(MergeRefused) as caught:
        remotes.pull(team.store, "origin")
    assert caught.value.code == "invalid_file" and caught.value.paths == ("notes/deploy.md",)
    assert all(reason.startswith("refs/heads/main: commit ") for reason in caught.value.reasons), caught.value.reasons
    assert team.sync.head() == head


@pytest.mark.parametrize("path", ["identity", "provenance"])
def test_a_file_named_like_a_message_rule_gets_the_files_hint(team: Team, path: str) -> None:
    # The hint is chosen by the rules broken, not by a rule's name found in a line that also names a path.
    head = team.sync.head()
    team.person_commits(path, "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    done = subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(team.root.path), "pull", "user"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and f": {path}: " in done.stderr, done.stderr
    assert "fix the listed files" in done.stderr and "squash" not in done.stderr, done.stderr
    assert team.sync.head() == head
