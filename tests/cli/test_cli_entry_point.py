"""A few real runs of the installed ``gitmem`` entry point, pipes and exit codes included."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GITMEM = shutil.which("gitmem", path=os.path.dirname(sys.executable)) or shutil.which("gitmem")
pytestmark = pytest.mark.skipif(GITMEM is None, reason="the gitmem entry point is not installed")


def run(root: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    assert GITMEM is not None
    env = {**os.environ, "GITMEM_ROOT": str(root)}
    return subprocess.run([GITMEM, *args], input=input, capture_output=True, text=True, env=env, timeout=120)


def test_write_cat_and_a_conflict_through_real_pipes(tmp_path: Path) -> None:
    assert run(tmp_path, "init", "user").returncode == 0
    created = run(tmp_path, "write", "user", "notes/a.md", "--create", "--json", input="first\n")
    assert created.returncode == 0, created.stderr
    version = json.loads(created.stdout)["version"]
    assert run(tmp_path, "cat", "user", "notes/a.md").stdout == "first\n"
    assert run(tmp_path, "write", "user", "notes/a.md", "--expect", version, input="second\n").returncode == 0
    stale = run(tmp_path, "write", "user", "notes/a.md", "--expect", version, input="third\n")
    assert stale.returncode == 1
    assert "error [version_mismatch]" in stale.stderr and "--expect" in stale.stderr
    assert stale.stdout == ""
    usage = run(tmp_path, "write", "user", "notes/a.md")
    assert usage.returncode == 2 and "--create" in usage.stderr
    fsck = subprocess.run(["git", "-C", str(tmp_path / "user.git"), "fsck", "--strict"], capture_output=True)
    assert fsck.returncode == 0


def test_demo_the_readme_command_runs(tmp_path: Path) -> None:
    result = run(tmp_path, "demo")
    assert result.returncode == 0, result.stderr
    assert "refused: version_mismatch" in result.stdout
    assert "both changes remain" in result.stdout
    again = run(tmp_path, "demo", "--json")  # a second run on the same memory works too
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["memory"] == "demo"


def test_help_lists_the_commands(tmp_path: Path) -> None:
    result = run(tmp_path, "--help")
    assert result.returncode == 0
    for name in ("init", "write", "grep", "purge"):
        assert name in result.stdout
