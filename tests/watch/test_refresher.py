"""The one background index-refresh queue that ``gitmem serve`` and the watcher share."""

from __future__ import annotations

import threading

import pytest

from gitmem.index import refresher
from gitmem.index.refresher import Refresher

LIVENESS = 60.0  # a guard against a hang, not a speed bound


def test_requests_for_a_waiting_mount_merge_and_a_failure_never_stops_the_queue(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    def catch_up(path: str, *, inline: bool = True) -> None:
        if path == "first":
            started.set()
            assert release.wait(LIVENESS)
        if path == "broken":
            raise RuntimeError("index is corrupt")
        done.append(path)

    monkeypatch.setattr(refresher, "catch_up", catch_up)
    queue = Refresher()
    try:
        queue.request("first")
        assert started.wait(LIVENESS)
        for path in ("broken", "a", "b", "a", "a"):  # "first" is running; these wait
            queue.request(path)
        release.set()
        assert queue.idle(LIVENESS)
    finally:
        queue.close(LIVENESS)
    assert done == ["first", "a", "b"], "each waiting mount is caught up once, in the order asked"
    assert "was not brought up to date" in caplog.text


def test_close_drops_what_waits_and_later_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    def catch_up(path: str, *, inline: bool = True) -> None:
        started.set()
        assert release.wait(LIVENESS)
        done.append(path)

    monkeypatch.setattr(refresher, "catch_up", catch_up)
    queue = Refresher()
    queue.request("running")
    assert started.wait(LIVENESS)
    queue.request("waiting")
    queue.close(0.0)  # does not wait for the running catch-up
    queue.request("after")
    release.set()
    queue.close(LIVENESS)
    assert done == ["running"], "the running catch-up finishes; what waited and what came later are dropped"
