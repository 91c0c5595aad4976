"""Record adds from several real processes: nothing lost, nothing repeated, history clean."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from contract.support import assert_fsck_clean

from gitmem import Root
from gitmem.records import RecordStore

WORKER = str(Path(__file__).with_name("record_worker.py"))
HANG_SECONDS = 180  # a liveness guard against a deadlock, not a performance bound

pytestmark = pytest.mark.slow


def _start(**args: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, WORKER, json.dumps(args)], stderr=subprocess.PIPE)


def _join(proc: subprocess.Popen[bytes]) -> None:
    try:
        _, err = proc.communicate(timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("a record worker hung") from None
    assert proc.returncode == 0, err.decode()


def _race(tmp_path: Path, *, follow: bool) -> None:
    root = Root(tmp_path / "root")
    mount = root.mount("facts", create=True, kind="record")
    RecordStore(mount.sync, "bob").add("bob's only record")
    stop = tmp_path / "stop"
    follower_out = tmp_path / "follow.txt"
    follower = None
    if follow:
        follower = _start(mode="follow", root=str(root.path), namespace="alice", out=str(follower_out), stop=str(stop))
    adders = []
    outs = []
    for n in range(4):
        out = tmp_path / f"add-{n}.txt"
        outs.append(out)
        adders.append(_start(mode="add", root=str(root.path), namespace="alice", out=str(out), count=25, tag=f"w{n}"))
    try:
        for proc in adders:
            _join(proc)
        stop.touch()
        if follower is not None:
            _join(follower)
    finally:
        for proc in (*adders, follower):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    acked = [line for out in outs for line in out.read_text().split()]
    assert len(acked) == 100 and len(set(acked)) == 100
    store = RecordStore(Root(root.path).mount("facts", kind="record").sync, "alice")
    assert store.ids() == sorted(acked)
    assert len(store.search("tea record", limit=100)) == 100
    if follow:  # it paged "after id X" the whole time: every record exactly once
        seen = follower_out.read_text().split()
        assert sorted(seen) == sorted(acked), (len(seen), len(set(seen)))
    assert [r.text for r in RecordStore(mount.sync, "bob").list().records] == ["bob's only record"]
    assert_fsck_clean(mount.path)


def test_four_processes_adding_lose_nothing(tmp_path: Path) -> None:
    _race(tmp_path, follow=False)


def test_a_follower_paging_after_id_x_sees_every_concurrent_add_exactly_once(tmp_path: Path) -> None:
    """Ids follow commit order (the last-id marker moves in each add's commit), so a cursor never skips."""
    _race(tmp_path, follow=True)


def test_adders_killed_mid_write_leave_a_clean_repository(tmp_path: Path) -> None:
    """SIGKILL adders at random moments: every acknowledged record is there, every file parses, fsck is clean."""
    import random
    import signal
    import time

    root = Root(tmp_path / "root")
    mount = root.mount("facts", create=True, kind="record")
    rng = random.Random(7)
    acked: list[str] = []
    for round_ in range(4):
        out = tmp_path / f"kill-{round_}.txt"
        procs = [
            _start(mode="add", root=str(root.path), namespace="alice", out=str(out), count=10_000, tag=f"k{round_}{n}")
            for n in range(2)
        ]
        deadline = time.monotonic() + HANG_SECONDS
        while (not out.exists() or len(out.read_text().split()) < 3) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.2))
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()  # reaps it and closes its stderr pipe
        text = out.read_text()
        acked += text[: text.rfind("\n") + 1].split()  # an unterminated last line is not an ack
    store = RecordStore(Root(root.path).mount("facts", kind="record").sync, "alice")
    ids = store.ids()
    assert set(acked) <= set(ids)
    cursor = None
    while True:  # every file parses (list raises on a broken one)
        page = store.list(limit=100, cursor=cursor)
        assert all(r.text.endswith("about tea") for r in page.records)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert store.store.read(f"{store.folder}/last-id").text.strip() == max(ids)  # the marker moved with each add
    assert_fsck_clean(mount.path)
    after = store.add("after the kills")  # writers are not blocked by anything a killed one left
    assert store.ids()[-1] == after.id
