"""Benchmark the Anthropic memory-tool backend against the SDK's own local-filesystem tool.

The same command sequence runs through both tools in one process, as the SDK's
runner would call them (``tool.call(input)`` with the tool-use block's input):

    for each of N files:  create, view (the file), str_replace, insert
    every 25 files:       view /memories (the listing)
    for each file:        rename (into another folder)
    for each file:        delete

- **ours**: :class:`gitmem.adapters.anthropic_memory.GitMemoryTool` over a fresh
  git mount. Every change is a compare-and-swap commit with the tool-use id,
  run and principal as trailers, so each command also versions and attributes.
- **baseline**: ``anthropic.lib.tools.BetaLocalFilesystemMemoryTool`` over a fresh
  directory (plain files, ``fsync`` on each write, no history).

Equal durability: the SDK tool fsyncs every file it writes, so by default ours
runs on a durable mount (``gitmem.durable``: each commit's pack, index, ref and
their folders fsynced before the command returns); ``--no-fsync`` makes ours a
plain mount (the old, unequal comparison), ``--no-fsync-both`` turns fsync off on
both sides (the SDK module's ``os.fsync`` is replaced by a no-op for the run).

Rounds rotate which tool goes first, so all see the same machine load. The
script prints, per command kind, the p50 and mean wall time and the p50 CPU time of
each with their ratios, and the mean time per command over the whole sequence (targets: ours ≤ 1.5x the baseline per
command, no single command kind above 2x).

Usage::

    .venv/bin/python bench/bench_anthropic.py              # 300 files, 5 rounds
    .venv/bin/python bench/bench_anthropic.py --quick      # 60 files, 2 rounds
    .venv/bin/python bench/bench_anthropic.py --no-fsync-both   # fsync on neither side
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from anthropic.lib.tools import _beta_builtin_memory_tool as sdk_module
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

from gitmem import Root
from gitmem.adapters.anthropic_memory import GitMemoryTool
from gitmem.model import Origin

KINDS = ("create", "view", "str_replace", "insert", "view_dir", "rename", "delete")


def note(i: int) -> str:
    words = "user prefers short answers project deadline review tests meeting budget plan travel".split()
    lines = [" ".join(words[(i * 7 + k + j) % len(words)] for k in range(9)) for j in range(12)]
    return f"# Note {i}\nstatus: open\n" + "\n".join(lines) + "\n"


def sequence(count: int) -> list[tuple[str, dict[str, Any]]]:
    steps: list[tuple[str, dict[str, Any]]] = []
    for i in range(count):
        path = f"/memories/topic-{i % 10}/note-{i:04d}.md"
        steps.append(("create", {"command": "create", "path": path, "file_text": note(i)}))
        steps.append(("view", {"command": "view", "path": path}))
        steps.append(("str_replace", {"command": "str_replace", "path": path, "old_str": "open", "new_str": "done"}))
        steps.append(("insert", {"command": "insert", "path": path, "insert_line": 1, "insert_text": f"seen {i}"}))
        if i % 25 == 24:
            steps.append(("view_dir", {"command": "view", "path": "/memories"}))
    for i in range(count):
        old = f"/memories/topic-{i % 10}/note-{i:04d}.md"
        steps.append(
            ("rename", {"command": "rename", "old_path": old, "new_path": f"/memories/archive/note-{i:04d}.md"})
        )
    for i in range(count):
        steps.append(("delete", {"command": "delete", "path": f"/memories/archive/note-{i:04d}.md"}))
    return steps


def run(
    call: Callable[[str, dict[str, Any]], object], steps: list[tuple[str, dict[str, Any]]]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each command, by kind."""
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    cpus: dict[str, list[float]] = {k: [] for k in KINDS}
    clock, cpu = time.perf_counter, time.process_time
    for n, (kind, payload) in enumerate(steps):
        start, start_cpu = clock(), cpu()
        call(f"toolu_{n:06d}", payload)
        times[kind].append(clock() - start)
        cpus[kind].append(cpu() - start_cpu)
    return times, cpus


def ours(workdir: Path, durable: bool) -> Callable[[str, dict[str, Any]], object]:
    store = Root(workdir / "root").mount("claude", create=True)
    if durable:
        store.sync.set_durable(True)
    tool = GitMemoryTool(store, origin=Origin(run_id="bench", principal_id="bench"))

    def call(tool_use_id: str, payload: dict[str, Any]) -> object:
        with tool.tool_use(tool_use_id):
            return tool.call(payload)

    return call


class _NoFsync:
    """The ``os`` module as the SDK tool sees it with ``--no-fsync-both``: ``fsync`` does nothing."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def fsync(fd: int) -> None:
        del fd


def baseline(workdir: Path) -> Callable[[str, dict[str, Any]], object]:
    tool = BetaLocalFilesystemMemoryTool(base_path=str(workdir / "local"))

    def call(tool_use_id: str, payload: dict[str, Any]) -> object:
        return tool.call(payload)

    return call


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else float("nan")


def mean(values: list[float]) -> float:
    return statistics.fmean(values) * 1000 if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="60 files, 2 rounds")
    parser.add_argument("--no-fsync", action="store_true", help="ours without fsync (the SDK tool always fsyncs)")
    parser.add_argument(
        "--no-fsync-both", action="store_true", help="neither fsyncs (the SDK tool's os.fsync made a no-op)"
    )
    args = parser.parse_args()
    files, rounds = (60, 2) if args.quick else (args.files, args.rounds)
    steps = sequence(files)
    durable = not (args.no_fsync or args.no_fsync_both)
    if args.no_fsync_both:
        setattr(sdk_module, "os", _NoFsync())  # noqa: B010 (the module does not export os)
    who_all = ("ours", "sdk")

    totals: dict[str, dict[str, list[float]]] = {w: {k: [] for k in KINDS} for w in who_all}
    cpu_totals: dict[str, dict[str, list[float]]] = {w: {k: [] for k in KINDS} for w in who_all}
    walls: dict[str, list[float]] = {w: [] for w in who_all}
    cpus: dict[str, list[float]] = {w: [] for w in who_all}
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-anthropic-") as tmp:
        for r in range(rounds):
            order = who_all[r % len(who_all) :] + who_all[: r % len(who_all)]
            for who in order:
                workdir = Path(tmp) / f"{who}-{r}"
                workdir.mkdir()
                call = baseline(workdir) if who == "sdk" else ours(workdir, durable)
                gc.collect()
                cpu0, wall0 = time.process_time(), time.perf_counter()
                times, cpu_times = run(call, steps)
                walls[who].append(time.perf_counter() - wall0)
                cpus[who].append(time.process_time() - cpu0)
                for kind, values in times.items():
                    totals[who][kind].extend(values)
                    cpu_totals[who][kind].extend(cpu_times[kind])

    print(
        f"# {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    fsync = (
        "fsync on neither"
        if args.no_fsync_both
        else "ours without fsync, the SDK with"
        if args.no_fsync
        else "fsync on both"
    )
    print(f"# {files} files, {len(steps)} commands per round, {rounds} rounds (order rotating), {fsync}")
    print("# wall p50 and mean per command kind (ms), CPU p50 (ms); ratios ours / sdk")
    print(
        f"{'command':<12} {'n/round':>7} {'ours p50':>9} {'sdk p50':>8} {'ratio':>6}"
        f" {'ours mean':>10} {'sdk mean':>9} {'ratio':>6} {'ours CPU':>9} {'sdk CPU':>8} {'ratio':>6}"
    )
    worst = 0.0
    for kind in KINDS:
        a, b = p50(totals["ours"][kind]), p50(totals["sdk"][kind])
        ma, mb = mean(totals["ours"][kind]), mean(totals["sdk"][kind])
        ca, cb = p50(cpu_totals["ours"][kind]), p50(cpu_totals["sdk"][kind])
        worst = max(worst, a / b)
        print(
            f"{kind:<12} {len(totals['ours'][kind]) // rounds:>7} {a:>9.3f} {b:>8.3f} {a / b:>6.2f}"
            f" {ma:>10.3f} {mb:>9.3f} {ma / mb:>6.2f} {ca:>9.3f} {cb:>8.3f} {ca / cb:>6.2f}"
        )
    per_ours = statistics.median(walls["ours"]) / len(steps) * 1000
    per_sdk = statistics.median(walls["sdk"]) / len(steps) * 1000
    cpu_ours = statistics.median(cpus["ours"]) / len(steps) * 1000
    cpu_sdk = statistics.median(cpus["sdk"]) / len(steps) * 1000
    print(
        f"{'per command':<12} {'':>7} {per_ours:>12.3f} {per_sdk:>11.3f} {per_ours / per_sdk:>6.2f}  (wall, median round)"
    )
    print(
        f"{'per command':<12} {'':>7} {cpu_ours:>12.3f} {cpu_sdk:>11.3f} {cpu_ours / cpu_sdk:>6.2f}  (CPU, median round)"
    )
    verdict = "met" if per_ours <= 1.5 * per_sdk else "NOT met"
    print(f"target ours <= 1.5x sdk per command: {verdict} ({per_ours / per_sdk:.2f}x)")
    verdict = "met" if worst <= 2 else "NOT met"
    print(f"target no command kind above 2x: {verdict} (worst {worst:.2f}x)")


if __name__ == "__main__":
    main()
