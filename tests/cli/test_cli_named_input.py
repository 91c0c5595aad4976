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
