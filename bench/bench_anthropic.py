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

Rounds alternate which tool goes first, so both see the same machine load. The
script prints, per command kind, the p50 wall time of each, the ratio, and the mean
time per command over the whole sequence (target: ours ≤ 3x the baseline).

Usage::

    .venv/bin/python bench/bench_anthropic.py              # 300 files, 5 rounds
    .venv/bin/python bench/bench_anthropic.py --quick      # 60 files, 2 rounds
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
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    clock = time.perf_counter
    for n, (kind, payload) in enumerate(steps):
        start = clock()
        call(f"toolu_{n:06d}", payload)
        times[kind].append(clock() - start)
    return times


def ours(workdir: Path) -> Callable[[str, dict[str, Any]], object]:
    store = Root(workdir / "root").mount("claude", create=True)
    tool = GitMemoryTool(store, origin=Origin(run_id="bench", principal_id="bench"))

    def call(tool_use_id: str, payload: dict[str, Any]) -> object:
        with tool.tool_use(tool_use_id):
            return tool.call(payload)

    return call


def baseline(workdir: Path) -> Callable[[str, dict[str, Any]], object]:
    tool = BetaLocalFilesystemMemoryTool(base_path=str(workdir / "local"))

    def call(tool_use_id: str, payload: dict[str, Any]) -> object:
        return tool.call(payload)

    return call


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="60 files, 2 rounds")
    args = parser.parse_args()
    files, rounds = (60, 2) if args.quick else (args.files, args.rounds)
    steps = sequence(files)

    totals: dict[str, dict[str, list[float]]] = {"ours": {k: [] for k in KINDS}, "sdk": {k: [] for k in KINDS}}
    walls: dict[str, list[float]] = {"ours": [], "sdk": []}
    cpus: dict[str, list[float]] = {"ours": [], "sdk": []}
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-anthropic-") as tmp:
        for r in range(rounds):
            order = ("ours", "sdk") if r % 2 == 0 else ("sdk", "ours")
            for who in order:
                workdir = Path(tmp) / f"{who}-{r}"
                workdir.mkdir()
                call = ours(workdir) if who == "ours" else baseline(workdir)
                gc.collect()
                cpu0, wall0 = time.process_time(), time.perf_counter()
                times = run(call, steps)
                walls[who].append(time.perf_counter() - wall0)
                cpus[who].append(time.process_time() - cpu0)
                for kind, values in times.items():
                    totals[who][kind].extend(values)

    print(
        f"# {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    print(f"# {files} files, {len(steps)} commands per round, {rounds} rounds (order alternating)")
    print(f"{'command':<12} {'n/round':>7} {'ours p50 ms':>12} {'sdk p50 ms':>11} {'ratio':>6}")
    for kind in KINDS:
        a, b = p50(totals["ours"][kind]), p50(totals["sdk"][kind])
        print(f"{kind:<12} {len(totals['ours'][kind]) // rounds:>7} {a:>12.3f} {b:>11.3f} {a / b:>6.2f}")
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
    verdict = "met" if per_ours <= 3 * per_sdk else "NOT met"
    print(f"target ours <= 3x sdk per command: {verdict}")


if __name__ == "__main__":
    main()
