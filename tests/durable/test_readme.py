"""The README's durable-memory example runs as printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_example_runs(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Durable memory") :]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert code is not None
    proc = subprocess.run(
        [sys.executable, "-c", code.group(1)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GITMEM_ROOT": str(tmp_path / "root")},  # Root() is the CLI's root
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["()", "go-tabs@2 0.6666666666666666"]
    assert (tmp_path / "root" / "rules.git").is_dir()
