"""Processes remembering the same texts at once end with one canonical item per text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.session.hygiene import normalize_text
from gitmem.session.location import open_session_memory

WORKER = str(Path(__file__).with_name("session_worker.py"))
WORKERS = 4
TEXTS = [f"Shared lesson number {n}: run the release checklist before tagging" for n in range(12)]


@pytest.mark.slow
def test_processes_remembering_the_same_text_keep_one_item(tmp_path: Path) -> None:
    directory = tmp_path / "mem"
    open_session_memory(directory)  # created once up front; creation races are Root's own test
    go = tmp_path / "go"
    procs = []
    for w in range(WORKERS):
        args = {
            "dir": str(directory),
            "go": str(go),
            "out": str(tmp_path / f"out-{w}.json"),
            # Same texts, varied case/whitespace per worker: still exact duplicates.
            "texts": [t.upper() if w % 2 else "  ".join(t.split()) for t in TEXTS],
            "importance": 0.5 + w / 10,
            "tag": f"worker-{w}",
        }
        procs.append(subprocess.Popen([sys.executable, WORKER, json.dumps(args)], stderr=subprocess.PIPE))
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode()
    answers = [json.loads((tmp_path / f"out-{w}.json").read_text()) for w in range(WORKERS)]
    # Every worker got the same canonical id back for each text.
    for n in range(len(TEXTS)):
        assert len({answer[n] for answer in answers}) == 1
    memory = open_session_memory(directory)
    items = memory.items()
    assert len(items) == len(TEXTS)
    assert {normalize_text(i.content) for i in items} == {normalize_text(t) for t in TEXTS}
    for item in items:
        assert item.metadata["duplicate_count"] == WORKERS - 1
        assert len(item.metadata["duplicate_ids"]) == WORKERS - 1
        assert set(item.tags) == {f"worker-{w}" for w in range(WORKERS)}
        assert item.importance == pytest.approx(0.5 + (WORKERS - 1) / 10)
    repo = str(directory / "session.git")
    subprocess.run(["git", "-C", repo, "fsck", "--strict"], check=True, capture_output=True)
