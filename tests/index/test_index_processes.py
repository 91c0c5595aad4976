"""Searches from other processes and threads (one also rebuilding the index) while writes happen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from gitmem import GitFileStore

from .index_worker import commits_between, scanned

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
        # On a loaded machine 60 writes can end before the rebuilder's 7th search: keep
        # writing until one rebuild has run beside the writes.
        deadline = time.monotonic() + 600
        while not os.path.exists(os.path.join(workdir, "rebuilt-rebuilder")) and time.monotonic() < deadline:
            current = store.sync.read("notes/n00.md")
            store.sync.write("notes/n00.md", current.text + "amber again\n", expected=current.version)
            time.sleep(0.05)
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


def test_threads_share_one_index_while_another_thread_writes(tmp_path: os.PathLike[str]) -> None:
    store = GitFileStore.init(os.path.join(tmp_path, "shared.git"))
    for n in range(20):
        store.sync.write(f"n{n:02}.md", f"note {n}: amber\n", expected=None)
    done = threading.Event()
    failures: list[str] = []
    counts = [0, 0, 0]

    def search(k: int) -> None:
        try:
            while not done.is_set() or counts[k] < 3:
                before = store.sync.head()
                got = store.sync.search("amber", limit=1000)
                after = store.sync.head()
                options = commits_between(store.path, before, after)
                if all(got != scanned(store, c, "amber", False, False) for c in options):
                    failures.append(f"thread {k}: {got} between {before} and {after}")
                counts[k] += 1
                if k == 0 and counts[k] % 5 == 0:
                    store.sync.rebuild_index()
        except Exception as exc:  # reported below; a thread's exception would otherwise vanish
            failures.append(f"thread {k}: {exc!r}")

    threads = [threading.Thread(target=search, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    try:
        for n in range(40):
            path = f"n{n % 20:02}.md"
            current = store.sync.read(path)
            store.sync.write(path, current.text + f"amber {n}\n", expected=current.version)
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert failures == []
    assert min(counts) >= 3
