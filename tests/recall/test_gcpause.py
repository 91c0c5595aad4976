"""Pausing the cyclic collector for a bulk load leaves it as it found it, however pauses nest."""

from __future__ import annotations

import gc

import pytest

from gitmem.recall.gcpause import paused_gc


def test_nested_pauses_enable_the_collector_again_only_when_the_last_ends() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_failing_load_still_enables_it_and_a_disabled_collector_stays_disabled() -> None:
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("load failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
