"""Writers in other processes while this one keeps recalling: the caught-up index always equals a scan."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.recall_scan import scan_coverage
from gitmem.recall import StoreRecall

from .support import git_store, item, to_doc

WRITER = os.path.join(os.path.dirname(__file__), "recall_writer.py")


@pytest.mark.slow
def test_recall_catches_up_with_writers_in_other_processes(tmp_path: Path) -> None:
    store = git_store(tmp_path)
    store.write("items/seed.json", item("seed note about canary deploys", 0.0), expected=None)
    snap = tmp_path / "snap.json"
    recall = StoreRecall(store, to_doc, prefix="items", snapshot=snap, snapshot_every=5)
    writers = [
        subprocess.Popen([sys.executable, WRITER, store.path, name, "40"], stderr=subprocess.PIPE, text=True)
        for name in ("a", "b")
    ]
    searches = 0
    while any(w.poll() is None for w in writers):
        hits = recall.search("canary deploys", limit=100)
        assert all(0 < h.score <= 1 for h in hits)
        searches += 1
    for w in writers:
        _, err = w.communicate()
        assert w.returncode == 0, err
    assert searches > 0
    recall.refresh()
    truth = [d for f in store.list() if (d := to_doc(store.read(f.path))) is not None]
    assert recall.search("canary deploys", limit=100) == scan_coverage(truth, "canary deploys", limit=100)
    assert recall.search("note", limit=100) == scan_coverage(truth, "note", limit=100)
    # A new process resuming from the snapshot written along the way agrees too.
    resumed = StoreRecall(store, to_doc, prefix="items", snapshot=snap)
    assert resumed.search("canary deploys", limit=100) == recall.search("canary deploys", limit=100)
    assert resumed.resumed_from_snapshot
    subprocess.run(["git", "-C", store.path, "fsck", "--strict"], check=True, capture_output=True)
