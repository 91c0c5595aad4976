"""What a user hands the CLI by name or on stdin (a change set, a merged text): crafted input is a refusal.

Deep JSON, bytes that are not UTF-8, a path the system cannot open: each ends in a clear
error with its code (``usage`` for a change set that is not JSON, a store code otherwise),
never a traceback, and nothing is written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize(
    "data",
    [b"[" * 100_000 + b"]" * 100_000, b'{"a": ' * 100_000 + b"1" + b"}" * 100_000, b"\xff\xfe{}", b"{" * 1000],
    ids=["deep-array", "deep-object", "not-utf8", "unbalanced"],
)
@pytest.mark.parametrize("where", ["file", "stdin"])
def test_a_crafted_change_set_is_refused_as_one_not_a_traceback(tmp_path: Path, data: bytes, where: str) -> None:
    # The change set was parsed by a plain json.load: 100,000 brackets ended in a RecursionError,
    # bytes that are not UTF-8 in a UnicodeDecodeError, each a traceback instead of a refusal.
    from gitmem.durable.repository import DurableRepository

    root = tmp_path / "root"
    DurableRepository.open(root, "rules", create=True)
    before = git(root / "rules.git", "rev-parse", "main")
    code = "from gitmem.adapters.cli import main; main()"
    args = [sys.executable, "-c", code, "--root", str(root), "durable", "apply", "rules", "--json"]
    if where == "file":
        (tmp_path / "change.json").write_bytes(data)
        done = subprocess.run([*args, str(tmp_path / "change.json")], capture_output=True, timeout=120)
    else:
        done = subprocess.run([*args, "-"], input=data, capture_output=True, timeout=120)
    assert b"Traceback" not in done.stderr, done.stderr[-2000:]
    refused = json.loads(done.stdout)
    assert done.returncode in (1, 2) and refused["error"] in ("usage", "invalid_file"), refused
    assert git(root / "rules.git", "rev-parse", "main") == before


@pytest.mark.parametrize("name", ["not-a-folder/x", "n" * 5000], ids=["through-a-file", "name-too-long"])
def test_a_merged_text_path_the_system_cannot_open_is_a_refusal(tmp_path: Path, name: str) -> None:
    # `review resolve --file PATH` read PATH through the strict local opener, which leaves errors
    # other than a planted file as OSError: ENOTDIR or ENAMETOOLONG reached the user as a traceback.
    root = tmp_path / "root"
    code = "from gitmem.adapters.cli import main; main()"
    cli = [sys.executable, "-c", code, "--root", str(root)]
    subprocess.run([*cli, "init", "team"], check=True, capture_output=True)
    (tmp_path / "not-a-folder").write_text("a file\n")
    before = git(root / "team.git", "rev-parse", "main")
    path = str(tmp_path / name) if name.startswith("not-") else name
    done = subprocess.run(
        [*cli, "review", "resolve", "team", "p1", "a.md", "--file", path, "--json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 1 and json.loads(done.stdout)["error"] == "unavailable", done.stdout
    assert git(root / "team.git", "rev-parse", "main") == before
