"""purge, forget, fsck, gc: destructive commands need --yes; git agrees afterwards."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from .conftest import Run, as_json


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root / "user.git"), *args], capture_output=True, text=True)


def test_purge_needs_yes_then_erases_files_history_and_cursors(user: Run, root: Path) -> None:
    cursor = as_json(user("changes", "user", "--json"))["cursor"]
    version = as_json(user("cat", "user", "prefs/style.md", "--json"))["version"]
    refused = user("purge", "user")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert user("cat", "user", "prefs/style.md").exit_code == 0  # untouched
    done = user("purge", "user", "--yes", "--json")
    assert done.exit_code == 0 and as_json(done)["purged"] is True
    assert as_json(user("ls", "user", "--json"))["files"] == []
    assert as_json(user("changes", "user", "--since", cursor, "--json"))["kind"] == "full_resync"
    assert git(root, "cat-file", "-e", version).returncode != 0


def test_forget_erases_a_path_from_all_history(user: Run, root: Path) -> None:
    user("write", "user", "keep.md", "--create", input="keep\n")
    secret = as_json(user("write", "user", "pii.md", "--create", "--json", input="Jane Roe, 1 Main St\n"))["version"]
    user("write", "user", "pii.md", "--expect", secret, input="Jane Roe, 2 Main St\n")
    assert user("forget", "user", "pii.md").exit_code == 2
    result = user("forget", "user", "pii.md", "--yes", "--json")
    assert result.exit_code == 0, result.output
    report = as_json(result)
    assert report["names"] == ["pii.md"] and secret in report["erased_versions"]
    assert {"memory", "path", "head", "commits_rewritten", "refs_updated", "shared_versions"} <= set(report)
    assert git(root, "cat-file", "-e", secret).returncode != 0
    assert git(root, "log", "--all", "--format=%H", "--", "pii.md").stdout == ""
    assert user("cat", "user", "keep.md").stdout == "keep\n"
    assert git(root, "fsck", "--strict").returncode == 0
    again = user("forget", "user", "pii.md", "--yes")
    assert again.exit_code == 1 and "error [not_found]" in again.stderr


def test_fsck_reports_ok_and_a_broken_repo(user: Run, root: Path) -> None:
    ok = user("fsck", "user", "--json")
    assert ok.exit_code == 0 and as_json(ok) == {"memory": "user", "ok": True, "messages": []}
    version = as_json(user("cat", "user", "prefs/style.md", "--json"))["version"]
    loose = root / "user.git" / "objects" / version[:2] / version[2:]
    for lost in [loose] * loose.exists() + list((root / "user.git" / "objects" / "pack").glob("pack-*")):
        os.remove(lost)  # lose a blob git still needs, loose or in a pack
    broken = user("fsck", "user")
    assert broken.exit_code == 1 and "problems found" in broken.stdout


def test_gc_packs_and_is_silent_when_stderr_is_not_a_terminal(user: Run) -> None:
    result = user("gc", "user", "--json")
    assert result.exit_code == 0 and result.stderr == ""
    report = as_json(result)
    assert report["before"]["loose"] > 0 and report["after"]["loose"] == 0 and report["after"]["packs"] >= 1


def test_long_work_shows_progress_on_a_terminal(user: Run, root: Path) -> None:
    gitmem = Path(sys.executable).with_name("gitmem")
    primary, secondary = pty.openpty()
    done = subprocess.run([str(gitmem), "--root", str(root), "gc", "user"], stderr=secondary, capture_output=False,
                          stdout=subprocess.PIPE, timeout=120)  # fmt: skip
    os.close(secondary)
    shown = b""
    try:
        while chunk := os.read(primary, 4096):
            shown += chunk
    except OSError:  # the terminal closes once the child is gone
        pass
    os.close(primary)
    assert done.returncode == 0
    assert b"packing user" in shown
    assert b"packing" not in done.stdout  # the bar never lands in the output a script reads
