"""Frontmatter that YAML reads into a value Python cannot build is refused as ``invalid_file``, never a traceback.

YAML turns ``2001-02-30`` into a date, ``2001-12-14 21:59:43 -99:00`` into a time with
an offset of days, a long run of digits into an int: each fails inside the YAML
constructor with a ``ValueError`` (or a ``RecursionError`` for deep nesting, where a
stored file is read under loose limits), not a YAML error. A write of such a file
crashed with a traceback, and one such file committed into the mount (by anyone who
can write in its folder) made every ``gitmem ls`` of the whole memory fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem import MemoryStoreError
from gitmem.fileformat import _LENIENT, describe_stored, parse_frontmatter

BAD_VALUES = [
    "t: 2001-02-30",  # no such day
    "t: 2001-13-01",  # no such month
    "t: 0000-01-01",  # no year 0
    "t: 2001-12-14 21:59:43.10 -99:00",  # an offset of four days
    "t: 2001-12-14T21:59:43+24:00",
    "t: !!bool maybe",  # a tag whose constructor fails otherwise: a KeyError for a word no bool spells
    't: !!int ""',  # an IndexError for an empty int or float
    "t: !!timestamp soon",  # an AttributeError for a timestamp that is none
]
LENIENT_ONLY = [
    "t: " + "1" * 5000,  # more digits than Python turns into an int
    "t: " + "[" * 5000 + "]" * 5000,  # nested deeper than the constructor recurses
]


def _text(line: str) -> str:
    return f"---\ndescription: a note\n{line}\n---\nbody\n"


@pytest.mark.parametrize("line", BAD_VALUES)
def test_a_frontmatter_value_no_date_holds_is_invalid_file(line: str) -> None:
    with pytest.raises(MemoryStoreError) as err:
        parse_frontmatter(_text(line))
    assert err.value.code == "invalid_file"


@pytest.mark.parametrize("line", BAD_VALUES + LENIENT_ONLY)
def test_a_stored_file_with_such_a_value_is_still_described(line: str) -> None:
    with pytest.raises(MemoryStoreError) as err:
        parse_frontmatter(_text(line), _LENIENT)
    assert err.value.code == "invalid_file"
    assert describe_stored(_text(line)) in ("body", "a note")


def _gitmem(root: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(root), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"}
    env["GIT_COMMITTER_EMAIL"] = "a@b"
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=env).stdout.strip()


@pytest.mark.parametrize("line", ["t: 2001-02-30", "t: !!bool maybe"])
def test_a_write_is_refused_and_a_planted_file_leaves_the_memory_listable(tmp_path: Path, line: str) -> None:
    root = tmp_path / "root"
    assert _gitmem(root, "init", "user").returncode == 0
    bad = _text(line)
    refused = _gitmem(root, "write", "user", "bad.md", "--create", "--json", stdin=bad)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert json.loads(refused.stdout)["error"] == "invalid_file"
    assert _gitmem(root, "write", "user", "ok.md", "--create", stdin="fine\n").returncode == 0
    # Someone who can write in the mount's folder commits the file with git itself, hooks bypassed.
    mount = root / "user.git"
    work = tmp_path / "work"
    _git("clone", "-q", str(mount), str(work), cwd=tmp_path)
    (work / "bad.md").write_text(bad)
    _git("add", "bad.md", cwd=work)
    _git("commit", "-qm", "planted", cwd=work)
    pushed = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=work, capture_output=True, text=True)
    assert pushed.returncode != 0 and "invalid_file" in pushed.stderr, pushed.stderr  # the hook names the rule
    objects = work / ".git" / "objects"
    subprocess.run(["cp", "-rn", *[str(p) for p in objects.iterdir()], str(mount / "objects")], check=True)
    _git("update-ref", "refs/heads/main", _git("rev-parse", "HEAD", cwd=work), cwd=mount)
    listed = _gitmem(root, "ls", "user", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(f["path"] for f in json.loads(listed.stdout)["files"]) == ["bad.md", "ok.md"]
