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
    store = root.mount("demo").sync
    # Both agents' edits landed, then the admin restored the first version as a new commit.
    edits = [e for e in store.log("prefs/style.md") if e.op == "edit"]
    assert {e.origin.principal_id for e in edits} == {"agent-alice", "agent-bob"}
    assert store.log("prefs/style.md", limit=1)[0].op == "restore"
    assert "likes tea" in store.read("prefs/style.md").text
    assert any("grep 'coffee'" in line and "likes coffee" in line for line in lines)
    fsck = subprocess.run(["git", "-C", str(tmp_path / "demo.git"), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert head == root.mount("demo").sync.head()
