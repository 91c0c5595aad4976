from __future__ import annotations

import subprocess
from pathlib import Path

from gitmem import Root
from gitmem.demo import run_demo


def test_demo_runs_and_leaves_a_clean_repo(tmp_path: Path) -> None:
    lines: list[str] = []
    root = Root(tmp_path)
    head = run_demo(root, "demo", emit=lines.append)
    assert any("refused: version_mismatch" in line for line in lines)
    text = root.mount("demo").sync.read("prefs/style.md").text
    assert "likes coffee" in text and "reply in Chinese" in text
    fsck = subprocess.run(["git", "-C", str(tmp_path / "demo.git"), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert head == root.mount("demo").sync.head()
