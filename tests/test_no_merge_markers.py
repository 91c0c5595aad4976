"""No file in the repository keeps the markers of an unresolved merge."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARKERS = ("<<<<<<< ", ">>>>>>> ")


def test_no_tracked_file_holds_conflict_markers() -> None:
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    found = []
    for name in listed.stdout.splitlines():
        path = ROOT / name
        if path.suffix not in (".py", ".md", ".toml", ".json", ".txt", ".cfg", ".yaml", ".yml") or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            if line.startswith(MARKERS):
                found.append(f"{name}:{number}")
    assert found == []
