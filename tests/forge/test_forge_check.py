"""`gitmem check`: a plain git repository's commits held to the memory rules, as a forge's CI runs it.

Real processes throughout: the installed `gitmem` command on a clone of a bare
"forge" repository (over a file path, and over `git daemon`), and the command
lines of the shipped GitHub Actions and GitLab CI definitions run as a runner would.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from .support import as_json, commit, fsck, git, gitmem

REPO = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
ZEROS = "0" * 40


class Forge:
    """A bare repository playing the forge, and a person's clone that pushes to it."""

    def __init__(self, tmp_path: Path) -> None:
        self.bare = tmp_path / "forge" / "team.git"
        git("init", "-q", "--bare", "-b", "main", str(self.bare))
        self.work = tmp_path / "work"
        git("clone", "-q", str(self.bare), str(self.work))
        git("checkout", "-q", "-b", "main", cwd=self.work)
        self.root = tmp_path / "mem"
        self.good = [commit(self.work, {"notes/a.md": "alpha\n"}, "first note")]
        self.good.append(commit(self.work, {"notes/b.md": "beta\n"}, "second note"))
        git("push", "-q", "origin", "main", cwd=self.work)

    def check(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return gitmem(self.root, "check", *args, cwd=cwd)


@pytest.fixture
def forge(tmp_path: Path) -> Forge:
    return Forge(tmp_path)


def test_a_good_history_passes_in_a_checkout_and_in_the_bare_repository(forge: Forge) -> None:
    for target in (forge.work, forge.bare):
        done = forge.check(str(target))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ok: 2 commit(s)" in done.stdout
    out = as_json(forge.check(str(forge.bare), "main", "--json"))
    assert out["ok"] is True and out["commits"] == 2 and out["refused"] == [] and out["tip"] == forge.good[-1]
    # The default is the current folder's HEAD.
    assert forge.check(cwd=forge.work).returncode == 0


def test_a_bad_commit_is_one_line_with_file_and_rule_and_exit_code_1(forge: Forge) -> None:
    bad = commit(forge.work, {"logo.png": PNG, "notes/keys.md": "password: hunter2hunter2\n"}, "logo and keys")
    git("push", "-q", "origin", "main", cwd=forge.work)
    done = forge.check(str(forge.bare), f"{forge.good[-1]}..main")
    assert done.returncode == 1
    lines = [line for line in done.stdout.splitlines() if line.startswith("refused ")]
    assert len(lines) == 1 and lines[0].startswith(f"refused {bad}: ")  # one line per refused commit
    assert "logo.png [invalid_file]" in lines[0] and "notes/keys.md [secret:password_assignment]" in lines[0]
    assert "1 of 1 commit(s)" in done.stderr
    out = as_json(forge.check(str(forge.bare), f"{forge.good[-1]}..main", "--json"))
    assert out["ok"] is False and out["refused_commits"] == [bad]
    assert {(r["commit"], r["path"], r["rule"]) for r in out["refused"]} == {
        (bad, "logo.png", "invalid_file"),
        (bad, "notes/keys.md", "secret:password_assignment"),
    }
    # The range before the bad commit still passes: only the range asked about is judged.
    assert forge.check(str(forge.bare), forge.good[-1]).returncode == 0


def test_bad_then_fixed_the_history_stays_refused_and_the_fix_alone_passes(forge: Forge) -> None:
    bad = commit(forge.work, {"logo.png": PNG}, "add logo")
    fix = commit(forge.work, {"logo.png": None}, "remove logo")
    git("push", "-q", "origin", "main", cwd=forge.work)
    whole = as_json(forge.check(str(forge.bare), "--json"))
    assert whole["commits"] == 4 and whole["refused_commits"] == [bad]  # the tip passes, its history does not
    assert forge.check(str(forge.bare), f"{ZEROS}..main").returncode == 1  # a new branch's "before": all of it
    assert forge.check(str(forge.bare), f"{bad}..{fix}").returncode == 0
    # A "before" the checkout does not have (a force push left it behind): the whole history, never less.
    unknown = as_json(forge.check(str(forge.bare), f"{'ab' * 20}..main", "--json"))
    assert unknown["base"] is None and unknown["refused_commits"] == [bad]
    fsck(forge.bare)


def test_a_link_an_executable_and_a_bad_path_are_each_named(forge: Forge) -> None:
    (forge.work / "link.md").symlink_to("notes/a.md")
    (forge.work / "run.md").write_text("echo\n")
    (forge.work / "run.md").chmod(0o755)
    bad = commit(forge.work, {}, "link and script")
    out = as_json(forge.check(str(forge.work), "HEAD~1..HEAD", "--json"))
    assert {(r["path"], r["rule"]) for r in out["refused"]} == {("link.md", "file_mode"), ("run.md", "file_mode")}
    assert out["refused_commits"] == [bad]


def test_limits_come_from_the_repository_config(forge: Forge) -> None:
    commit(forge.work, {"notes/big.md": "x" * 2000 + "\n"}, "a long note")
    assert forge.check(str(forge.work)).returncode == 0
    git("config", "gitmem.maxFileBytes", "1k", cwd=forge.work)
    out = as_json(forge.check(str(forge.work), "--json"))
    assert [(r["path"], r["rule"]) for r in out["refused"]] == [("notes/big.md", "too_large")]


def test_what_is_not_a_repository_or_a_revision_is_an_error_not_a_pass(forge: Forge, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    done = forge.check(str(tmp_path / "plain"))
    assert done.returncode == 1 and "not_found" in done.stderr
    done = forge.check(str(forge.bare), "nosuchbranch..main")
    assert done.returncode == 1 and "not_found" in done.stderr
    assert forge.check(str(forge.bare), "main...main").returncode == 1


def test_check_reads_only(forge: Forge) -> None:
    commit(forge.work, {"logo.png": PNG}, "logo")
    git("push", "-q", "origin", "main", cwd=forge.work)
    before = sorted(str(p.relative_to(forge.bare)) for p in forge.bare.rglob("*"))
    forge.bare.chmod(0o500)  # a bare repository the CI user may only read
    try:
        assert forge.check(str(forge.bare)).returncode == 1
    finally:
        forge.bare.chmod(0o700)
    assert sorted(str(p.relative_to(forge.bare)) for p in forge.bare.rglob("*")) == before


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_clone_over_git_daemon_is_checked_like_any_checkout(forge: Forge, tmp_path: Path) -> None:
    commit(forge.work, {"logo.png": PNG}, "logo")
    git("push", "-q", "origin", "main", cwd=forge.work)
    port = _free_port()
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            f"--base-path={forge.bare.parent}",
            f"--port={port}",
            "--listen=127.0.0.1",
            str(forge.bare.parent),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        ci = tmp_path / "ci"
        for _ in range(100):
            done = subprocess.run(
                ["git", "clone", "-q", f"git://127.0.0.1:{port}/team.git", str(ci)], capture_output=True
            )
            if done.returncode == 0:
                break
            time.sleep(0.1)
        assert done.returncode == 0, done.stderr
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
    out = as_json(forge.check(str(ci), "origin/main", "--json"))
    assert [(r["path"], r["rule"]) for r in out["refused"]] == [("logo.png", "invalid_file")]


# --- the shipped CI definitions, run as a runner would ---------------------------------


def _runner_env(**extra: str) -> dict[str, str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, **extra}


def _github_checks() -> list[str]:
    workflow = yaml.safe_load((REPO / "examples" / "ci" / "github-actions.yml").read_text())
    steps = workflow["jobs"]["check"]["steps"]
    assert any(s.get("with", {}).get("fetch-depth") == 0 for s in steps)  # the whole history is checked out
    # A step that runs no check prepares the checkout (fetches the erasure ledger): each check runs after it.
    setup = [s["run"] for s in steps if "run" in s and "gitmem check" not in s["run"] and "pip " not in s["run"]]
    return ["\n".join([*setup, s["run"]]) for s in steps if "gitmem check" in s.get("run", "")]


def test_the_github_actions_commands_pass_a_good_pull_request_and_fail_a_bad_one(forge: Forge, tmp_path: Path) -> None:
    pull_request, push = _github_checks()
    checkout = tmp_path / "checkout"
    git("clone", "-q", str(forge.bare), str(checkout))
    before = git("rev-parse", "HEAD", cwd=checkout)
    commit(checkout, {"notes/c.md": "gamma\n"}, "a good change")
    run = lambda script, **env: subprocess.run(  # noqa: E731
        ["bash", "-ec", script], cwd=checkout, capture_output=True, text=True, env=_runner_env(**env)
    )
    assert run(pull_request, GITHUB_BASE_REF="main").returncode == 0
    assert run(push, BEFORE=before).returncode == 0
    assert run(push, BEFORE=ZEROS).returncode == 0  # a new branch: its whole history
    commit(checkout, {"logo.png": PNG}, "a bad change")
    done = run(pull_request, GITHUB_BASE_REF="main")
    assert done.returncode == 1 and "logo.png [invalid_file]" in done.stdout
    assert run(push, BEFORE=before).returncode == 1


def test_the_gitlab_ci_commands_pass_a_good_merge_request_and_fail_a_bad_one(forge: Forge, tmp_path: Path) -> None:
    job = yaml.safe_load((REPO / "examples" / "ci" / "gitlab-ci.yml").read_text())["gitmem-check"]
    assert job["variables"]["GIT_DEPTH"] == "0"
    script = "\n".join(job["script"])
    checkout = tmp_path / "checkout"
    git("clone", "-q", str(forge.bare), str(checkout))
    base = git("rev-parse", "HEAD", cwd=checkout)
    commit(checkout, {"notes/c.md": "gamma\n"}, "a good change")
    run = lambda **env: subprocess.run(  # noqa: E731
        ["bash", "-ec", script], cwd=checkout, capture_output=True, text=True, env=_runner_env(**env)
    )
    assert run(CI_MERGE_REQUEST_DIFF_BASE_SHA=base).returncode == 0
    assert run(CI_COMMIT_BEFORE_SHA=ZEROS).returncode == 0
    commit(checkout, {"notes/keys.md": "api_key = abcdef123456\n"}, "a key")
    done = run(CI_MERGE_REQUEST_DIFF_BASE_SHA=base)
    assert done.returncode == 1 and "notes/keys.md [secret:password_assignment]" in done.stdout
    assert run(CI_COMMIT_BEFORE_SHA=base).returncode == 1


def test_the_shipped_ci_commands_refuse_text_the_forges_erasure_ledger_names(tmp_path: Path) -> None:
    # A runner's checkout fetches branches and tags only; the ledger (refs/gitmem/erasures) must be
    # fetched by the job, or a pull request that adds erased text back passes the check.
    root, bare = tmp_path / "mem", tmp_path / "forge" / "team.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    assert gitmem(root, "init", "team").returncode == 0
    assert gitmem(root, "write", "team", "people/dana.md", "--create", stdin="Dana's home address\n").returncode == 0
    assert gitmem(root, "remote", "add", "team", "origin", str(bare)).returncode == 0
    assert gitmem(root, "forget", "team", "people/dana.md", "--yes").returncode == 0
    assert gitmem(root, "forget", "team", "--remotes", "--yes").returncode == 0  # history and ledger to the forge
    checkout = tmp_path / "checkout"
    git("clone", "-q", str(bare), str(checkout))  # what actions/checkout and a GitLab runner fetch
    base = git("rev-parse", "HEAD", cwd=checkout)
    commit(checkout, {"notes/dana.md": "Dana's home address\n"}, "the address, back again")
    run = lambda script, **env: subprocess.run(  # noqa: E731
        ["bash", "-ec", script], cwd=checkout, capture_output=True, text=True, env=_runner_env(**env)
    )
    pull_request, push = _github_checks()
    gitlab = "\n".join(yaml.safe_load((REPO / "examples" / "ci" / "gitlab-ci.yml").read_text())["gitmem-check"]["script"])
    for done in (
        run(pull_request, GITHUB_BASE_REF="main"),
        run(push, BEFORE=base),
        run(gitlab, CI_MERGE_REQUEST_DIFF_BASE_SHA=base),
        run(gitlab, CI_COMMIT_BEFORE_SHA=base),
    ):
        assert done.returncode == 1 and "notes/dana.md [erased]" in done.stdout, done.stdout + done.stderr
