"""Access statistics off main: exact counts across processes, compaction, torn lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.session.stats import FileAccessStats, MemoryAccessStats

APPENDER = """
import sys
from gitmem.session.stats import FileAccessStats
stats = FileAccessStats(sys.argv[1], compact_bytes=int(sys.argv[2]))
for n in range(int(sys.argv[3])):
    stats.record(["shared", f"own-{sys.argv[4]}"], at=float(n))
"""


@pytest.mark.slow
def test_processes_appending_and_compacting_lose_no_access(tmp_path: Path) -> None:
    log = tmp_path / "session-stats"
    rounds, workers = 300, 4
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(log), "2000", str(rounds), str(w)])
        for w in range(workers)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    counts = FileAccessStats(log).snapshot()
    assert counts["shared"] == (rounds * workers, float(rounds - 1))
    for w in range(workers):
        assert counts[f"own-{w}"][0] == rounds
    assert log.stat().st_size < 2000 + 200  # it was folded along the way


def test_record_lookup_forget_and_a_torn_tail(tmp_path: Path) -> None:
    stats = FileAccessStats(tmp_path / "s")
    assert stats.lookup(["a"]) == {}
    stats.record(["a", "b"], 10.0)
    stats.record(["a"], 5.0)
    assert stats.lookup(["a", "zzz"]) == {"a": (2, 10.0)}
    other = FileAccessStats(tmp_path / "s")  # another handle reads the same log
    assert other.snapshot() == {"a": (2, 10.0), "b": (1, 10.0)}
    with open(tmp_path / "s", "a") as f:
        f.write("\na 11.0 a")  # a writer killed mid-line
    assert other.lookup(["a"]) == {"a": (2, 10.0)}
    stats.forget(["b"])
    assert other.snapshot() == {"a": (2, 10.0)}
    stats.compact()
    assert FileAccessStats(tmp_path / "s").snapshot() == {"a": (2, 10.0)}


@pytest.mark.parametrize(
    "planted",
    ["a nan a $", "a inf a $", "a -inf b $", "s a -7 10.0 $", "s a 3 nan $", "s b 2 1e999 $", "s a 1.5 10.0 $"],
)
def test_a_planted_line_out_of_range_is_skipped_like_a_torn_one(tmp_path: Path, planted: str) -> None:
    """The log is local state anyone on the machine can append to: a count below zero or a time that is
    no time (NaN, infinite) is not read (it showed as ``access_count: -6`` and ``last_accessed: nan``)."""
    stats = FileAccessStats(tmp_path / "s")
    stats.record(["a"], 10.0)
    with open(tmp_path / "s", "a") as f:
        f.write(f"\n{planted}\n")
    assert FileAccessStats(tmp_path / "s").snapshot() == {"a": (1, 10.0)}
    stats.record(["a", "b"], 12.0)
    assert FileAccessStats(tmp_path / "s").snapshot() == {"a": (2, 12.0), "b": (1, 12.0)}
    stats.compact()
    assert FileAccessStats(tmp_path / "s").snapshot() == {"a": (2, 12.0), "b": (1, 12.0)}


def test_the_in_memory_twin() -> None:
    stats = MemoryAccessStats()
    stats.record(["x", "x"], 3.0)
    assert stats.lookup(["x"]) == {"x": (2, 3.0)}
    stats.forget(["x"])
    assert stats.snapshot() == {}
