"""What a newcomer runs into: review visible from the CLI, who did what, dates, folders, JSON on usage errors."""

from __future__ import annotations

import getpass
import json
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gitmem.adapters.cli.history import relative_date

from .conftest import Run, as_json


def git(root: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    base = ["git"] if cwd else ["git", "-C", str(root / "user.git")]
    return subprocess.run([*base, *args], capture_output=True, text=True, cwd=cwd, check=True)


def test_a_write_under_review_says_where_it_went_and_reads_take_run(user: Run) -> None:
    assert user("review", "enable", "user").exit_code == 0
    text = user("write", "user", "draft.md", "--create", "--run", "r1", input="draft\n")
    assert text.exit_code == 0 and "under review on refs/heads/proposals/r1" in text.stdout
    assert "gitmem review show user r1" in text.stdout
    done = as_json(user("write", "user", "d2.md", "--create", "--run", "r1", "--json", input="two\n"))
    assert done["proposal"] == {"run": "r1", "ref": "refs/heads/proposals/r1"}
    # main does not have it; the run reads its proposal with --run on every read command
    assert user("cat", "user", "draft.md").exit_code == 1
    assert user("cat", "user", "draft.md", "--run", "r1").stdout == "draft\n"
    assert "draft.md" in user("ls", "user", "--run", "r1").stdout
    assert "draft.md" not in user("ls", "user").stdout
    assert as_json(user("grep", "user", "draft", "--run", "r1", "--json"))["matches"]
    assert user("show", "user", "HEAD", "draft.md", "--run", "r1").exit_code in (0, 1)
    assert "draft.md" in user("diff", "user", "main", "--run", "r1").stdout
    assert user("blame", "user", "draft.md", "--run", "r1").exit_code == 0
    logged = as_json(user("log", "user", "--run", "r1", "--json"))["entries"]
    assert {e["summary"] for e in logged} == {"create draft.md", "create d2.md"}
    # a write without a run id still goes to main, and says nothing about review
    plain = as_json(user("write", "user", "m.md", "--create", "--json", input="m\n"))
    assert plain["proposal"] is None


def test_cli_writes_default_to_the_login_name_like_approve(user: Run, root: Path) -> None:
    user("write", "user", "who.md", "--create", input="x\n", env={"GITMEM_PRINCIPAL": ""})
    body = git(root, "log", "-1", "--format=%an%n%B").stdout
    assert body.startswith(getpass.getuser() + "\n") and f"Gitmem-Principal: {getpass.getuser()}" in body


def test_log_and_blame_name_the_git_author_of_plain_git_commits(user: Run, root: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(root / "user.git"), str(clone)], check=True)
    (clone / "prefs" / "style.md").write_text("by hand\n")
    git(root, "commit", "-qam", "fix by hand", "--author", "Jo Human <jo@example.com>", cwd=clone)
    git(root, "push", "-q", "origin", "HEAD:main", cwd=clone)
    assert "author Jo Human" in user("log", "user").stdout
    assert "Jo Human" in user("blame", "user", "prefs/style.md").stdout
    lines = as_json(user("blame", "user", "prefs/style.md", "--json"))["lines"]
    assert lines[0]["author"] == "Jo Human"


def test_log_says_when_it_stopped_at_the_limit(user: Run) -> None:
    for i in range(3):
        user("write", "user", f"n{i}.md", "--create", input=f"{i}\n")
    cut = as_json(user("log", "user", "--limit", "2", "--json"))
    assert len(cut["entries"]) == 2 and cut["truncated"] is True
    whole = as_json(user("log", "user", "--limit", "50", "--json"))
    assert whole["truncated"] is False
    assert "--limit 20" in user("log", "user", "--limit", "2").stderr


def test_restore_of_unchanged_content_says_so(user: Run) -> None:
    first = as_json(user("log", "user", "prefs/style.md", "--json"))["entries"][-1]["commit"]
    same = as_json(user("restore", "user", "prefs/style.md", "--rev", first, "--json"))
    assert same["changed"] is False and same["proposal"] is None


def test_since_takes_relative_dates() -> None:
    now = datetime(2026, 3, 10, 12, 0).astimezone()
    assert relative_date("yesterday", now) == now - timedelta(days=1)
    assert relative_date("2.weeks", now) == now - timedelta(weeks=2)
    assert relative_date("3 days ago", now) == now - timedelta(days=3)
    assert relative_date("1.hour.ago", now) == now - timedelta(hours=1)
    assert relative_date("main~2", now) is None


def test_log_since_relative(user: Run) -> None:
    assert len(as_json(user("log", "user", "--since", "yesterday", "--json"))["entries"]) == 2
    assert as_json(user("log", "user", "--until", "2.weeks.ago", "--json"))["entries"] == []


def test_forget_takes_a_folder_with_a_trailing_slash(user: Run) -> None:
    done = user("forget", "user", "prefs/", "--yes", "--json")
    assert done.exit_code == 0, done.output
    assert as_json(done)["names"] == ["prefs"]


@pytest.mark.parametrize(
    "args",
    [("ls",), ("cat", "user"), ("write", "user", "a.md"), ("nosuchcommand",), ("ls", "user", "--bogus")],
)
def test_usage_errors_under_json_print_one_json_document(user: Run, args: tuple[str, ...]) -> None:
    result = user(*args, "--json")
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["error"] == "usage" and doc["message"] and doc["current"] is None


def test_the_memory_key_is_memory(user: Run) -> None:
    assert as_json(user("init", "user", "--json"))["memory"] == "user"
    assert as_json(user("cat", "user", "prefs/style.md", "--json"))["memory"] == "user"
    assert as_json(user("show", "user", "main", "prefs/style.md", "--json"))["memory"] == "user"


def test_not_found_hints_follow_the_cause(user: Run) -> None:
    since = user("log", "user", "--since", "nosuch").stderr
    rev = user("cat", "user", "prefs/style.md", "--rev", "nosuch").stderr
    memory = user("ls", "nobody").stderr
    user("review", "enable", "user")
    user("write", "user", "b.md", "--create", "--run", "r1", input="b\n")
    assert user("review", "approve", "user", "r1", "--principal", "alice").exit_code == 0
    again = user("review", "approve", "user", "r1", "--principal", "alice").stderr
    hints = [s.split("what to do:")[1] for s in (since, rev, memory, again)]
    assert len(set(hints)) == 4, hints
    assert "relative" in hints[0] and "gitmem log user" in hints[1]
    assert "gitmem mounts" in hints[2] and "already" in hints[3]


def test_edit_errors_name_the_option_the_user_typed(user: Run) -> None:
    missing = user("edit", "user", "prefs/style.md", "--old", "coffee", "--new", "tea")
    assert missing.exit_code == 1 and "--old" in missing.stderr and "old_string" not in missing.stderr
