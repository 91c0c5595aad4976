"""A refusal's hint fits its situation, not only its code.

``version_mismatch`` is a file that moved on, or a remote ahead of this memory;
``not_found`` a path, a revision, a remote or a repository to import. A hint that
speaks of a file is only given when the refusal is about one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import Run, as_json


def test_a_push_refused_as_behind_says_pull_first_not_create_the_file(user: Run, tmp_path: Path) -> None:
    shared = tmp_path / "shared.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(shared)], check=True)
    assert user("remote", "add", "user", "origin", str(shared)).exit_code == 0
    assert user("push", "user").exit_code == 0
    assert user("clone", str(shared), "other").exit_code == 0
    assert user("write", "other", "b.md", "--create", input="from the other copy\n").exit_code == 0
    assert user("push", "other").exit_code == 0
    assert user("write", "user", "c.md", "--create", input="from this copy\n").exit_code == 0
    refused = user("push", "user", "--json")
    assert refused.exit_code == 1
    body = as_json(refused)
    assert body["error"] == "version_mismatch" and body["current"] is None
    assert body["hint"] == "nothing was pushed; run `gitmem pull user origin`, then push again"
    text = user("push", "user")
    assert "create it" not in text.stderr and "gitmem pull user origin" in text.stderr


def test_a_file_hint_needs_a_file(user: Run) -> None:
    # A missing file names the path to check; a missing memory names `gitmem mounts`.
    missing = as_json(user("cat", "user", "nope.md", "--json"))
    assert missing["error"] == "not_found" and "gitmem ls user" in missing["hint"]
    nobody = as_json(user("cat", "nobody", "a.md", "--json"))
    assert nobody["error"] == "unknown_memory" and "gitmem mounts" in nobody["hint"]
    # A version of a file that is gone is not_found, never "create it over a conflict".
    gone = as_json(user("rm", "user", "nope.md", "--expect", "1234567", "--json"))
    assert gone["error"] == "not_found" and "gitmem ls user" in gone["hint"]


def test_a_refused_grep_hint_speaks_of_the_pattern_given(user: Run) -> None:
    """Only a regex (-E) is told to fix its regular expression or drop -E; an empty literal, or one
    holding a newline, is told what a literal pattern must be (both through the quick path too)."""
    regex = as_json(user("grep", "user", "(", "-E", "--json"))
    assert regex["error"] == "invalid_pattern" and "drop -E" in regex["hint"]
    for literal in ("", "a\nb"):
        refused = as_json(user("grep", "user", literal, "--json"))
        assert refused["error"] == "invalid_pattern", literal
        assert "-E" not in refused["hint"] and "one line" in refused["hint"], refused["hint"]
