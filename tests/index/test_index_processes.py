"""Two processes search (one also rebuilds the index) while this one writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from gitmem import GitFileStore

WORKER = os.path.join(os.path.dirname(__file__), "index_worker.py")


@pytest.mark.slow
def test_concurrent_searches_and_rebuilds_while_writes_happen(tmp_path: os.PathLike[str]) -> None:
    workdir = os.fspath(tmp_path)
    store = GitFileStore.init(os.path.join(workdir, "shared.git"))
    for n in range(30):
        store.sync.write(f"notes/n{n:02}.md", f"note {n}\nthe colour is {'teal' if n % 3 else 'amber'}\n", expected=None)
    workers = [
        subprocess.Popen(
            [sys.executable, WORKER, store.path, workdir, name, every],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, every in (("reader", "0"), ("rebuilder", "7"))
    ]
    try:
        while not all(os.path.exists(os.path.join(workdir, f"ready-{n}")) for n in ("reader", "rebuilder")):
            assert all(w.poll() is None for w in workers), [w.communicate() for w in workers]
            time.sleep(0.01)
        for n in range(60):
            path = f"notes/n{n % 30:02}.md"
            if n % 10 == 9 and n < 30:
                store.sync.delete(path, expected=store.sync.read(path).version)
            elif n % 10 == 4:
                store.sync.write(f"new/{n}.md", f"Teal note {n}: the colour is amber\n", expected=None)
            elif n % 10 == 9:
                store.sync.write(path, f"note {n}, back: amber\n", expected=None)
            else:
                current = store.sync.read(path)
                store.sync.write(path, current.text + f"amber {n}\n", expected=current.version)
    finally:
        open(os.path.join(workdir, "stop"), "w").close()
        outputs = [w.communicate(timeout=600) for w in workers]
    reports = []
    for worker, (out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
        reports.append(json.loads(out))
    assert [r["mismatches"] for r in reports] == [0, 0]
    assert all(r["searches"] >= 4 for r in reports)
    assert reports[1]["rebuilds"] >= 1
    # Afterwards the index catches up to the final head and still answers like a scan.
    found = store.sync.search("amber", limit=1000)
    assert store.sync.index_status().commit == store.sync.head()
    assert len(found.matches) > 60
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=store.path, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
