"""Stdin longer than the commands' bound is refused as too long, whatever bytes it holds.

The readers took the bound's bytes plus one and decoded them: a multi-byte character cut at
the bound made the refusal "not UTF-8" for text that was UTF-8 and only too long.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.adapters.cli.durable import CHANGE_SET_LIMIT
from gitmem.adapters.cli.output import STDIN_LIMIT


def _gitmem(root: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(root), *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=600,
    )


def _over(limit: int) -> bytes:
    """Two-byte characters running past ``limit``, one of them cut by ``limit + 1``."""
    text = ("\u00e9" * (limit // 2 + 1)).encode()
    assert len(text) > limit and (limit + 1) % 2 == 1
    return text


@pytest.mark.parametrize(
    ("init", "command", "limit"),
    [
        (("init", "user"), ("write", "user", "a.md", "--create"), STDIN_LIMIT),
        (("records", "init", "rec"), ("records", "add", "rec", "-"), STDIN_LIMIT),
        (None, ("durable", "apply", "dm", "--create"), CHANGE_SET_LIMIT),
    ],
)
def test_multi_byte_stdin_past_the_bound_is_refused_as_too_long(
    tmp_path: Path, init: tuple[str, ...] | None, command: tuple[str, ...], limit: int
) -> None:
    root = tmp_path / "root"
    if init is not None:
        assert _gitmem(root, *init).returncode == 0
    done = _gitmem(root, *command, "--json", stdin=_over(limit))
    assert b"Traceback" not in done.stderr, done.stderr
    refusal = json.loads(done.stdout)
    assert "UTF-8" not in refusal["message"], refusal
    assert "longer than" in refusal["message"], refusal
    assert refusal["error"] in ("too_large", "usage"), refusal

