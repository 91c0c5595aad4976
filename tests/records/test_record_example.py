"""examples/record_memory.py runs as shipped and shows what the README says it shows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "record_memory.py"


def test_the_record_memory_example_runs(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--root", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == '<memory-recall memory="facts" trust="untrusted">' and lines[3] == "</memory-recall>"
    assert [r["text"] for r in json.loads(lines[2])["records"]] == ["prefers green tea"]
    assert "prefers oolong tea" in proc.stdout
    assert lines[-1] == "alice: () bob: ['prefers black coffee']"
    assert (tmp_path / "facts.git").is_dir()


def test_the_readme_record_example_runs(tmp_path: Path) -> None:
    readme = (EXAMPLE.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Record memory") : readme.index("## Documentation")]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "prefers green tea" in proc.stdout and "<memory-recall" in proc.stdout
