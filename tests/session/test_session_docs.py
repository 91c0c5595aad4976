"""The README's session example and examples/session_memory.py run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_session_example_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Session memory") :]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert code is not None
    done = subprocess.run([sys.executable, "-c", code.group(1)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["1.00 Success: release preflight", "0.67 Failure: provider verification"]
    assert (tmp_path / ".gitmem" / "memory" / "session.git").is_dir()


def test_the_session_example_runs_two_turns(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "session_memory.py"), str(tmp_path / "m")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Set PROVIDER_BASE_URL first (a lesson from the last turn), then release." in done.stdout
