"""Real processes for the forge tests: the installed ``gitmem`` command, plain git, a plain-git remote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

GITMEM = str(Path(sys.executable).parent / "gitmem")
PERSON = {
    "GIT_AUTHOR_NAME": "Ann Notes",
    "GIT_AUTHOR_EMAIL": "ann@example.com",
    "GIT_COMMITTER_NAME": "Ann Notes",
    "GIT_COMMITTER_EMAIL": "ann@example.com",
}


def git(*args: str, cwd: Path | str | None = None, check: bool = True, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **PERSON, **(env or {})}
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def gitmem(
    root: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``gitmem ARGS`` as a separate process, on memories under ``root``."""
    return subprocess.run(
        [GITMEM, *args],
        cwd=cwd,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env={**os.environ, "GITMEM_ROOT": str(root), **(env or {})},
        timeout=300,
    )


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout)


def commit(repo: Path, files: dict[str, str | bytes | None], message: str, date: str = "2024-03-01T09:00:00Z") -> str:
    """Write (text or bytes), or delete (``None``), each file in the work tree ``repo``; commit all; the new id."""
    for path, data in files.items():
        target = repo / path
        if data is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            target.write_bytes(data)
        else:
            target.write_text(data)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", message, "--allow-empty", cwd=repo, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return git("rev-parse", "HEAD", cwd=repo)


def fsck(repo: Path) -> None:
    done = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def has_object(repo: Path, oid: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "cat-file", "-e", oid], capture_output=True).returncode == 0
