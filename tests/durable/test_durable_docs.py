"""docs/durable.md's LanceDB example runs as printed (the docs runner covers README.md and docs/cli.md only)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "durable.md"


def test_the_lancedb_example_runs(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### The LanceDB adapter") :]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert code is not None
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code.group(1)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["published 2 1", "['canary'] ready"]
    assert (tmp_path / "memories" / "team.git" / "gitmem" / "derived" / "semantic" / "lancedb").is_dir()
