"""Where one Anthropic memory-tool command goes: per-phase timers and cProfile, per command kind.

```sh
.venv/bin/python bench/profile_anthropic.py phases [--files 200] [--fsync]    # wall/CPU per phase, per kind
.venv/bin/python bench/profile_anthropic.py profile KIND [--files 200] [--fsync] [--top 30]   # cProfile of one kind
.venv/bin/python bench/profile_anthropic.py tool-only [--files 300]   # the tool over the in-memory store: no git
```

The command sequence is ``bench/bench_anthropic.py``'s (create, view, str_replace,
insert for each file, a listing every 25 files, then a rename and a delete of each),
run through :class:`gitmem.adapters.anthropic_memory.GitMemoryTool` on a fresh mount.

``phases`` wraps the functions a command passes through with timers that keep
*exclusive* time (a phase's time minus the phases inside it), so the rows of a
command kind add up to its total:

- ``sdk parse``: the SDK turning the input dict into its command model;
- ``tool``: what is left of the command (the adapter, the tools layer, the result text);
- ``store read``: reads, listings and link checks through the store seam;
- ``batch``: checking the change before any I/O (paths, text rules, secrets);
- ``commit: other``: the transaction minus the steps below (writer lock, fresh
  handle, snapshot, the decision, commit message);
- ``commit: pack``: trees, commit object and the pack/index files (``_pack_commit``);
- ``commit: ref``: moving ``main`` (``_cas``);
- ``commit: pack count`` and ``commit: compact``: the fold check after each write and
  the folds it starts.

Everything named ``commit:`` is the store's write path (``gitmem/git/``); the rest
is the command around it. The last rows count the store reads and commits per command.
``tool-only`` runs the sequence over
:class:`gitmem.memstore.InMemoryFileStore`, so it times the adapter and tools layers
(and the twin store) without git or the disk.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_anthropic import KINDS, ours, sequence, settle
from gitmem.git.repo import set_durable

PHASES = (
    "sdk parse",
    "tool",
    "store read",
    "batch",
    "commit: other",
    "commit: pack",
    "commit: ref",
    "commit: pack count",
    "commit: compact",
)


class Timers:
    """Exclusive wall and CPU time per phase, for the command kind being run."""

    def __init__(self) -> None:
        self.kind = ""
        self.wall: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.cpu: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.count: dict[str, int] = defaultdict(int)
        self.calls: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._stack: list[list[Any]] = []  # [phase, wall0, cpu0, child wall, child cpu]

    def enter(self, phase: str) -> None:
        self.calls[self.kind][phase] += 1
        self._stack.append([phase, time.perf_counter(), time.process_time(), 0.0, 0.0])

    def leave(self) -> None:
        phase, w0, c0, cw, cc = self._stack.pop()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        self.wall[self.kind][phase] += w - cw
        self.cpu[self.kind][phase] += c - cc
        if self._stack:
            self._stack[-1][3] += w
            self._stack[-1][4] += c

    def wrap(self, owner: Any, name: str, phase: str) -> None:
        """Time ``owner.name`` as ``phase``; a name this version of the store does not have is skipped."""
        original = getattr(owner, name, None)
        if original is None:
            return

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(phase)
            try:
                return original(*args, **kwargs)
            finally:
                self.leave()

        setattr(owner, name, timed)


def instrument(timers: Timers) -> None:
    from anthropic.lib.tools import _beta_builtin_memory_tool as sdk

    from gitmem import gitstore, store
    from gitmem.git import packwrite, repo

    timers.wrap(sdk, "construct_type_unchecked", "sdk parse")
    for name in ("read", "list", "link_at"):
        timers.wrap(gitstore.SyncGitFileStore, name, "store read")
    for name in ("write_batch", "move_batch", "delete_batch"):
        timers.wrap(store, name, "batch")
        timers.wrap(gitstore, name, "batch")
    # The write path's steps under their names in either version of gitmem/git/repo.py
    # (one commit per transaction, or group commit with its pack written per round).
    timers.wrap(repo.GitRepo, "transact", "commit: other")
    for name in ("_pack_commit", "_pack_trees"):
        timers.wrap(repo.GitRepo, name, "commit: pack")
    timers.wrap(packwrite, "write_pack", "commit: pack")
    timers.wrap(repo.GitRepo, "_cas", "commit: ref")
    timers.wrap(repo.GitRepo, "_fold_once", "commit: compact")
    timers.wrap(packwrite, "pack_count", "commit: pack count")
    timers.wrap(repo.GitRepo, "_count_pack", "commit: pack count")


def run_phases(files: int) -> None:
    timers = Timers()
    instrument(timers)
    steps = sequence(files)
    with tempfile.TemporaryDirectory(prefix="gitmem-profile-anthropic-") as tmp:
        call = ours(Path(tmp))
        for n, (kind, payload) in enumerate(steps):
            timers.kind = kind
            timers.count[kind] += 1
            timers.enter("tool")
            try:
                call(f"toolu_{n:06d}", payload)
            finally:
                timers.leave()
        settle()
    print(f"# {files} files, {len(steps)} commands, load {os.getloadavg()[0]:.1f}; µs per command, wall (CPU)")
    kinds = [k for k in KINDS if timers.count[k]]
    print(f"{'phase':<20}" + "".join(f"{k:>20}" for k in kinds))
    for phase in (*PHASES, "total"):
        cells = []
        for kind in kinds:
            n = timers.count[kind]
            if phase == "total":
                w, c = sum(timers.wall[kind].values()), sum(timers.cpu[kind].values())
            else:
                w, c = timers.wall[kind][phase], timers.cpu[kind][phase]
            cells.append(f"{w / n * 1e6:>9.0f} ({c / n * 1e6:>6.0f})  ")
        print(f"{phase:<20}" + "".join(cells))
    for phase, label in (("store read", "reads / command"), ("commit: other", "commits / command")):
        cells = [f"{timers.calls[k][phase] / timers.count[k]:>18.2f}  " for k in kinds]
        print(f"{label:<20}" + "".join(cells))


def run_tool_only(files: int) -> None:
    """The same sequence over the in-memory store: what the tool and tools layers cost without git."""
    from gitmem.adapters.anthropic_memory import GitMemoryTool
    from gitmem.memstore import InMemoryFileStore
    from gitmem.model import Origin

    tool = GitMemoryTool(InMemoryFileStore(), origin=Origin(run_id="bench", principal_id="bench"))
    cpu: dict[str, list[float]] = defaultdict(list)
    for n, (kind, payload) in enumerate(sequence(files)):
        start = time.process_time()
        with tool.tool_use(f"toolu_{n:06d}"):
            tool.call(payload)
        cpu[kind].append(time.process_time() - start)
    print(f"# {files} files over InMemoryFileStore, load {os.getloadavg()[0]:.1f}; CPU µs per command (mean)")
    print("  ".join(f"{k} {sum(cpu[k]) / len(cpu[k]) * 1e6:.0f}" for k in KINDS if cpu[k]))


def run_profile(kind: str, files: int, top: int) -> None:
    steps = sequence(files)
    prof = cProfile.Profile()
    wall = cpu = 0.0
    count = 0
    with tempfile.TemporaryDirectory(prefix="gitmem-profile-anthropic-") as tmp:
        call: Callable[[str, dict[str, Any]], object] = ours(Path(tmp))
        for n, (k, payload) in enumerate(steps):
            if k != kind:
                call(f"toolu_{n:06d}", payload)
                continue
            w0, c0 = time.perf_counter(), time.process_time()
            prof.enable()
            call(f"toolu_{n:06d}", payload)
            prof.disable()
            wall += time.perf_counter() - w0
            cpu += time.process_time() - c0
            count += 1
        settle()
    print(f"# {kind}: {count} commands, {wall / count * 1e3:.3f} ms wall, {cpu / count * 1e3:.3f} ms CPU each")
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("phases", "profile", "tool-only"))
    parser.add_argument("kind", nargs="?", choices=KINDS, default="create")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--fsync", action="store_true")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    set_durable(args.fsync)
    if args.mode == "phases":
        run_phases(args.files)
    elif args.mode == "tool-only":
        run_tool_only(args.files)
    else:
        run_profile(args.kind, args.files, args.top)


if __name__ == "__main__":
    main()
