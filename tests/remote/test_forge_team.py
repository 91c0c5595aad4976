"""A team on a plain forge: two gitmem roots (two machines) and git's own smart-HTTP server.

The forge is ``git http-backend`` behind a CGI runner (:mod:`remote.forge`): no
gitmem code runs there. Every gitmem call is a new ``gitmem`` process; people on
the forge work with plain git in their own clone, as they would through a web UI.
After each scenario, ``git fsck --strict`` holds for both memories and the forge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote.forge import Forge, new_repo, running_daemon, running_forge

PASSWORD = "s3cret-forge-pass"


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


class Machine:
    """``gitmem --root ROOT ...`` as a new process, as on one machine of the team."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", **(env or {})}
        self.seen: list[str] = []

    def __call__(self, *args: str, ok: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(self.root), *args],
            capture_output=True, text=True, env=self.env, timeout=180, input=input,
        )  # fmt: skip
        self.seen.append(done.stdout + done.stderr)
        assert (done.returncode == 0) == ok, (args, done.stdout, done.stderr)
        return done

    def json(self, *args: str, ok: bool = True, input: str | None = None) -> dict[str, object]:
        out = self(*args, "--json", ok=ok, input=input).stdout
        return dict(json.loads(out))

    def mount(self, name: str) -> Path:
        return self.root / f"{name}.git"

    def head(self, name: str) -> str:
        return git("rev-parse", "main", cwd=self.mount(name)).strip()

    def cat(self, name: str, path: str) -> str:
        return self("cat", name, path).stdout


def fsck(*repos: Path) -> None:
    for repo in repos:
        done = subprocess.run(["git", "fsck", "--strict"], cwd=repo, capture_output=True, text=True)
        assert done.returncode == 0, (repo, done.stdout, done.stderr)


@pytest.fixture
def forge(tmp_path: Path) -> Iterator[Forge]:
    with running_forge(tmp_path / "forge") as running:
        yield running


@pytest.fixture
def person(forge: Forge, tmp_path: Path) -> Path:
    """A person's plain-git clone of the forge's ``team`` repository, which they started with two notes."""
    new_repo(forge, "team")
    work = tmp_path / "person"
    git("clone", "-q", forge.url("team"), str(work))
    git("checkout", "-q", "-b", "main", cwd=work)
    (work / "notes").mkdir()
    (work / "notes" / "a.md").write_text("first line\nsecond line\n")
    (work / "prefs.md").write_text("- likes tea\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "start the team memory", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    return work


def forge_main(forge: Forge, name: str = "team") -> str:
    return git("rev-parse", "main", cwd=forge.repo(name)).strip()


def test_two_roots_join_by_clone_and_by_init_and_reach_one_history(forge: Forge, person: Path, tmp_path: Path) -> None:
    a, b = Machine(tmp_path / "a"), Machine(tmp_path / "b")
    cloned = a.json("clone", forge.url("team"))
    assert cloned["memory"] == "team" and cloned["head"] == forge_main(forge)
    # The person's commit came in byte for byte: the same id, author and message.
    assert a.head("team") == forge_main(forge)
    assert git("log", "-1", "--format=%an %s", cwd=a.mount("team")).strip() == "tester start the team memory"
    # init + remote add + pull joins too: the new memory's empty first commit gives way.
    b("init", "team")
    b("remote", "add", "team", "origin", forge.url("team"))
    joined = b.json("pull", "team")
    assert joined["result"] == "joined" and joined["after"] == forge_main(forge)
    assert set(joined["paths"]) == {"notes/a.md", "prefs.md"}  # type: ignore[arg-type]
    assert b.cat("team", "notes/a.md") == "first line\nsecond line\n"

    # Different files on two machines: pull + push on each reach one history.
    a("write", "team", "from-a.md", "--create", "--principal", "ann", input="written on a\n")
    b("write", "team", "from-b.md", "--create", "--principal", "bob", input="written on b\n")
    a("push", "team")
    assert b.json("push", "team", ok=False)["error"] == "version_mismatch"
    merged = b.json("pull", "team")
    assert merged["result"] == "merged" and merged["paths"] == ["from-a.md"]
    b("push", "team")
    assert a.json("pull", "team")["result"] == "fast_forward"
    assert a.head("team") == b.head("team") == forge_main(forge)
    parents = git("rev-list", "--parents", "-n1", "main", cwd=forge.repo("team")).split()[1:]
    assert len(parents) == 2
    for m in (a, b):
        assert m.cat("team", "from-a.md") == "written on a\n" and m.cat("team", "from-b.md") == "written on b\n"
    fsck(a.mount("team"), b.mount("team"), forge.repo("team"))


def test_a_conflict_is_finished_with_gitmem_commands_only(forge: Forge, person: Path, tmp_path: Path) -> None:
    a, b = Machine(tmp_path / "a"), Machine(tmp_path / "b")
    a("clone", forge.url("team"))
    b("clone", forge.url("team"))
    a("edit", "team", "notes/a.md", "--old", "first line", "--new", "first line, as ann says", "--principal", "ann")
    a("write", "team", "only-a.md", "--create", input="clean on a\n")
    a("push", "team")
    b("edit", "team", "notes/a.md", "--old", "first line", "--new", "first line, as bob says", "--principal", "bob")
    ours = b.head("team")
    theirs = forge_main(forge)

    # A plain pull names the file, moves nothing and says how to finish.
    refused = b("pull", "team", ok=False)
    assert "notes/a.md" in refused.stderr and "--propose" in refused.stderr
    assert b.head("team") == ours

    # --propose opens the conflict proposal; main still does not move.
    opened = b.json("pull", "team", "--propose", ok=False)
    assert (opened["result"], opened["proposal"], opened["paths"]) == ("conflict", "merge-origin", ["notes/a.md"])
    assert b.head("team") == ours
    shown = b.json("review", "show", "team", "merge-origin")
    conflict = shown["conflict"]
    assert conflict["unresolved"] == [
        {
            "path": "notes/a.md",
            "ours": "first line, as bob says\nsecond line\n",
            "theirs": "first line, as ann says\nsecond line\n",
        }
    ]
    # Approval waits for every file; a secret in the merged text is refused like any write.
    still = b.json("review", "approve", "team", "merge-origin", "--principal", "bob", ok=False)
    assert still["error"] == "version_mismatch" and still["paths"] == ["notes/a.md"]
    leaked = "first line\npassword = hunter2-is-my-password\n"
    b("review", "resolve", "team", "merge-origin", "notes/a.md", "--file", "-", input=leaked, ok=False)
    merged_text = "first line, as ann and bob agree\nsecond line\n"
    done = b.json("review", "resolve", "team", "merge-origin", "notes/a.md", "--file", "-", input=merged_text)
    assert done["unresolved"] == []
    assert b.head("team") == ours
    b("review", "approve", "team", "merge-origin", "--principal", "bob")

    head = b.head("team")
    assert git("rev-list", "--parents", "-n1", head, cwd=b.mount("team")).split()[1:] == [ours, theirs]
    trailers = git("log", "-1", "--format=%(trailers)", cwd=b.mount("team"))
    assert "Gitmem-Approved-By: bob" in trailers
    assert b.cat("team", "notes/a.md") == merged_text and b.cat("team", "only-a.md") == "clean on a\n"
    assert "merge-origin" not in b("review", "list", "team").stdout
    pushed = b.json("push", "team")
    assert {r["ref"]: r["status"] for r in pushed["refs"]} == {"refs/heads/main": "ok"}  # type: ignore[union-attr,index]
    assert forge_main(forge) == head
    assert a.json("pull", "team")["result"] == "fast_forward"
    assert a.head("team") == b.head("team") == head
    assert a.cat("team", "notes/a.md") == merged_text
    fsck(a.mount("team"), b.mount("team"), forge.repo("team"))


def test_pull_requests_merged_every_way_are_closed_and_one_closed_unmerged_is_named(
    forge: Forge, person: Path, tmp_path: Path
) -> None:
    a = Machine(tmp_path / "a")
    a("clone", forge.url("team"))
    a("review", "enable", "team")
    for run in ("by-merge", "by-squash", "by-rebase", "dropped"):
        a("write", "team", f"{run}/one.md", "--create", "--run", run, input=f"{run} one\n")
        a("write", "team", f"{run}/two.md", "--create", "--run", run, input=f"{run} two\n")
    a("push", "team", "--proposals")

    # The forge merges three pull requests three ways and closes the fourth unmerged.
    git("fetch", "-q", "origin", cwd=person)
    git("merge", "-q", "--no-ff", "-m", "Merge pull request #1", "origin/proposals/by-merge", cwd=person)
    git("merge", "-q", "--squash", "origin/proposals/by-squash", cwd=person)
    git("commit", "-q", "-m", "Squashed pull request #2", cwd=person)
    base = git("merge-base", "HEAD", "origin/proposals/by-rebase", cwd=person).strip()
    git("cherry-pick", f"{base}..origin/proposals/by-rebase", cwd=person)
    git("push", "-q", "origin", "main", cwd=person)
    for run in ("by-merge", "by-squash", "by-rebase", "dropped"):
        git("push", "-q", "origin", "--delete", f"proposals/{run}", cwd=person)

    pulled = a.json("pull", "team")
    assert pulled["closed"] == ["by-merge", "by-rebase", "by-squash"]
    assert pulled["abandoned"] == ["dropped"]
    listed = a.json("review", "list", "team")
    assert [p["run"] for p in listed["proposals"]] == ["dropped"]  # type: ignore[union-attr,index]
    # The merged ones are never pushed again; main went back as it was.
    pushed = a.json("push", "team", "--proposals")
    refs = {r["ref"] for r in pushed["refs"]}  # type: ignore[union-attr,index]
    assert refs == {"refs/heads/main", "refs/heads/proposals/dropped"}
    heads = git("ls-remote", "--heads", forge.url("team")).split()
    assert not any(h.endswith(("by-merge", "by-squash", "by-rebase")) for h in heads)
    for run in ("by-merge", "by-squash", "by-rebase"):
        assert a.cat("team", f"{run}/two.md") == f"{run} two\n"
    # Rejected here, it is no longer reported.
    a("review", "reject", "team", "dropped", "--principal", "ann")
    assert a.json("pull", "team")["abandoned"] == []
    fsck(a.mount("team"), forge.repo("team"))


def test_clone_hands_the_password_to_the_credential_helper_and_never_shows_it(tmp_path: Path) -> None:
    config = tmp_path / "gitconfig"
    store = tmp_path / "credentials"
    git("config", "--file", str(config), "credential.helper", f"store --file={store}")
    with running_forge(tmp_path / "forge", password=PASSWORD) as forge:
        new_repo(forge, "team")
        seed = tmp_path / "seed"
        git("init", "-q", "-b", "main", str(seed))
        (seed / "a.md").write_text("hello\n")
        git("add", "-A", cwd=seed)
        git("commit", "-q", "-m", "seed", cwd=seed)
        git("push", "-q", forge.url("team", with_password=True), "main", cwd=seed)
        a = Machine(tmp_path / "a", env={"GIT_CONFIG_GLOBAL": str(config)})
        a("clone", forge.url("team", with_password=True), "mem")
        assert PASSWORD in store.read_text()  # the helper holds it ...
        assert PASSWORD not in (a.mount("mem") / "config").read_text()  # ... the memory does not
        assert f"http://alice@127.0.0.1:{forge.port}/team.git" in (a.mount("mem") / "config").read_text()
        a("write", "mem", "b.md", "--create", input="from a\n")
        a("push", "mem")
        a("pull", "mem")
        a("remote", "list", "mem")
        assert not any(PASSWORD in seen for seen in a.seen)
        assert forge_main(forge) == a.head("mem")
        fsck(a.mount("mem"), forge.repo("team"))

        # Without a helper the password cannot go anywhere else: it stays in the config, never shown.
        b = Machine(tmp_path / "b")
        b("clone", forge.url("team", with_password=True), "mem")
        b("pull", "mem")
        b("remote", "list", "mem")
        assert not any(PASSWORD in seen for seen in b.seen)


def test_a_clone_of_history_the_memory_refuses_lists_each_file_and_rule_and_creates_nothing(
    forge: Forge, person: Path, tmp_path: Path
) -> None:
    (person / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    git("add", "-A", cwd=person)
    git("commit", "-q", "-m", "add a logo", cwd=person)
    git("rm", "-q", "logo.png", cwd=person)
    git("commit", "-q", "-m", "remove the logo", cwd=person)
    git("push", "-q", "origin", "main", cwd=person)
    a = Machine(tmp_path / "a")
    refused = a.json("clone", forge.url("team"), ok=False)
    assert refused["error"] == "invalid_file"
    assert refused["paths"] == ["logo.png"]
    assert any("logo.png" in r and "invalid_file" in r for r in refused["reasons"])  # type: ignore[union-attr]
    assert not a.mount("team").exists()
    assert a.json("mounts")["mounts"] == []
    fsck(forge.repo("team"))


def test_the_same_team_works_over_git_daemon(tmp_path: Path) -> None:
    forge = tmp_path / "daemon"
    with running_daemon(forge) as base:
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(forge / "team.git")], check=True)
        seed = tmp_path / "seed"
        git("init", "-q", "-b", "main", str(seed))
        (seed / "a.md").write_text("one\n")
        git("add", "-A", cwd=seed)
        git("commit", "-q", "-m", "seed", cwd=seed)
        git("push", "-q", f"{base}/team.git", "main", cwd=seed)
        a, b = Machine(tmp_path / "a"), Machine(tmp_path / "b")
        a("clone", f"{base}/team.git")
        b("clone", f"{base}/team.git", "mine")
        a("write", "team", "a2.md", "--create", input="from a\n")
        b("edit", "mine", "a.md", "--old", "one", "--new", "one, from b")
        a("push", "team")
        assert b.json("pull", "mine")["result"] == "merged"
        b("push", "mine")
        assert a.json("pull", "team")["result"] == "fast_forward"
        assert a.head("team") == b.head("mine") == git("rev-parse", "main", cwd=forge / "team.git").strip()
        assert a.cat("team", "a.md") == "one, from b\n" and b.cat("mine", "a2.md") == "from a\n"
        fsck(a.mount("team"), b.mount("mine"), forge / "team.git")
