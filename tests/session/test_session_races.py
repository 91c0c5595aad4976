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


@pytest.mark.slow
def test_killed_writers_leave_a_consistent_memory(tmp_path: Path) -> None:
    import signal
    import time

    directory = tmp_path / "mem"
    open_session_memory(directory)
    go = tmp_path / "go"
    go.touch()
    procs = []
    acks = []
    for w in range(3):
        out = tmp_path / f"acks-{w}.txt"
        out.touch()
        acks.append(out)
        args = {
            "dir": str(directory),
            "go": str(go),
            "out": str(out),
            "loop": True,
            "importance": 0.5,
            "tag": f"w{w % 2}",
        }
        procs.append(subprocess.Popen([sys.executable, WORKER, json.dumps(args)], stderr=subprocess.PIPE))
    deadline = time.monotonic() + 120
    while any(len(a.read_text().splitlines()) < 8 for a in acks):  # each has written all seven texts
        assert time.monotonic() < deadline, [
            p.stderr.read() if p.poll() is not None and p.stderr else "" for p in procs
        ]
        time.sleep(0.01)
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stderr:
            proc.stderr.close()
    repo = str(directory / "session.git")
    subprocess.run(["git", "-C", repo, "fsck", "--strict"], check=True, capture_output=True)
    memory = open_session_memory(directory)
    items = memory.items()
    assert memory.skipped == {}
    assert len(items) == 14  # two tags x seven texts, each one canonical item
    acked = {line for a in acks for line in a.read_text().splitlines()}
    assert acked <= {i.id for i in items}  # every acknowledged remember is there
    after = memory.remember("w0 loop lesson 0: keep the release checklist current")  # writers are not blocked
    assert after.id in {i.id for i in items}
    assert memory.recall_similar("release checklist", 3)
