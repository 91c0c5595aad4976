"""Benchmark gitmem's history calls against the git CLI on a 10k-commit memory.

Questions, each with its git CLI baseline measured in the same run:

- **log of one path across 10k commits** (target <= 100 ms): ``store.sync.log(path)``
  returning every change of a file that is edited every ``--every``-th commit and
  moved once half-way, against ``git log --follow --format=... -- path`` (the
  same commits, checked equal). Measured twice: on the memory as gitmem wrote
  it (one small pack per commit, folded as it goes), and after ``store.gc()``
  packed it into one.
- **log filtered by run**: ``log(run=...)`` against ``git log --grep`` on the
  ``Gitmem-Run`` trailer (the same commits, checked equal).
- **forget on that history** (reported, no target): ``store.sync.forget(path)`` on a
  copy of the packed repo, against ``git reflog expire`` + ``git gc --prune=now``
  on an identical copy - the pruning floor any history erase has to pay. With
  ``--filter-branch`` the classic ``git filter-branch --index-filter`` rewrite is
  timed too (slow: it runs a shell per commit).

The history is written through the store itself (one commit per write, trailers,
the packs the writes leave), so it is what a real memory looks like; building it takes
~20-40 s. gitmem and git are called alternately in each round so background
load hits both alike.

Usage::

    .venv/bin/python bench/bench_history.py                 # 10k commits, 7 rounds
    .venv/bin/python bench/bench_history.py --commits 2000  # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitmem import GitFileStore, Origin

TARGET = "notes/target.md"
MOVED = "archive/target.md"
LOG_FORMAT = "%H%x00%ct%x00%an%x00%s%x00%(trailers:key=Gitmem-Run,valueonly)"


def git(repo: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(["git", f"--git-dir={repo}", *args], capture_output=True, text=True, check=True, env=env)
    return done.stdout


def build(path: str, commits: int, every: int) -> None:
    """``commits`` store writes: the target every ``every``-th, moved once half-way."""
    store = GitFileStore.init(path).sync
    versions: dict[str, str] = {}
    start = time.perf_counter()
    for i in range(1, commits):
        origin = Origin(f"run-{i % 50}", f"agent-{i % 3}", f"call-{i}")
        if i % every == 0:
            name = TARGET if i < commits // 2 else MOVED
            if name == MOVED and MOVED not in versions:
                versions[MOVED] = store.move(TARGET, MOVED, expected=versions.pop(TARGET), origin=origin)
                continue
        else:
            name = f"topic-{i % 37}/note-{i % 500}.md"
        versions[name] = store.write(name, f"note {i}\nline {i % 7}\n", expected=versions.get(name), origin=origin)
        if i % 1000 == 0:
            print(f"  built {i} commits in {time.perf_counter() - start:.1f} s", flush=True)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def measured(fn: Callable[[], object]) -> tuple[float, float, object]:
    """Wall time and CPU time (this process plus the git children it waited for)."""
    own, kids = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - own + (after.ru_utime - kids.ru_utime) + (after.ru_stime - kids.ru_stime)
    return wall, cpu, result


def same(mine: object, theirs: object, kind: str) -> None:
    ours = [e.commit for e in mine]  # type: ignore[attr-defined]
    cli = [line.split("\0")[0] for line in str(theirs).splitlines() if line.strip()]
    if ours != cli:
        extra, missing = sorted(set(ours) - set(cli)), sorted(set(cli) - set(ours))
        raise SystemExit(
            f"{kind} log differs from git: {len(ours)} vs {len(cli)}; only gitmem {extra[:3]}, only git {missing[:3]}"
        )


def compare_log(label: str, repo: str, rounds: int) -> dict[str, Any]:
    """Path log and run-filtered log, gitmem and git alternately, answers checked equal."""
    store = GitFileStore.open(repo).sync
    calls: dict[str, dict[str, Callable[[], object]]] = {
        "path": {
            "gitmem": lambda: store.log(MOVED, limit=1_000_000),
            "git": lambda: git(repo, "log", "--follow", f"--format={LOG_FORMAT}", "--", MOVED),
        },
        "run": {
            "gitmem": lambda: store.log(run="run-7", limit=1_000_000),
            "git": lambda: git(repo, "log", f"--format={LOG_FORMAT}", "--grep=^Gitmem-Run: run-7$"),
        },
    }
    out: dict[str, Any] = {}
    for kind, pair in calls.items():
        wall: dict[str, list[float]] = {"gitmem": [], "git": []}
        cpu: dict[str, list[float]] = {"gitmem": [], "git": []}
        entries = 0
        for _ in range(rounds):
            answers = {}
            for who, call in pair.items():
                w, c, answers[who] = measured(call)
                wall[who].append(w)
                cpu[who].append(c)
            same(answers["gitmem"], answers["git"], kind)
            entries = len(answers["gitmem"])  # type: ignore[arg-type]
        med = {who: statistics.median(v) for who, v in wall.items()}
        med_cpu = {who: statistics.median(v) for who, v in cpu.items()}
        out[kind] = {"entries": entries, "wall_median_s": med, "cpu_median_s": med_cpu}
        print(
            f"{label:10} log {kind:4} ({entries:4} entries)  gitmem {med['gitmem'] * 1000:6.1f} ms wall "
            f"{med_cpu['gitmem'] * 1000:6.1f} ms CPU   git CLI {med['git'] * 1000:6.1f} ms wall "
            f"{med_cpu['git'] * 1000:6.1f} ms CPU"
        )
    return out


def compare_forget(repo: str, work: str, filter_branch: bool) -> dict[str, Any]:
    ours = os.path.join(work, "forget-gitmem.git")
    floor = os.path.join(work, "forget-prune.git")
    for old in (ours, floor, os.path.join(work, "forget-fb.git")):
        shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(repo, ours)
    shutil.copytree(repo, floor)
    w_forget, c_forget, report = measured(lambda: GitFileStore.open(ours).sync.forget(MOVED))

    def prune() -> None:
        git(floor, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
        git(floor, "gc", "--prune=now", "--quiet")

    w_prune, c_prune, _ = measured(prune)
    out: dict[str, Any] = {
        "gitmem_forget_wall_s": w_forget,
        "gitmem_forget_cpu_s": c_forget,
        "git_prune_only_wall_s": w_prune,
        "git_prune_only_cpu_s": c_prune,
        "commits_rewritten": report.commits_rewritten,  # type: ignore[attr-defined]
    }
    print(
        f"forget {MOVED}: gitmem {w_forget:.2f} s wall {c_forget:.2f} s CPU ({out['commits_rewritten']} commits "
        f"rewritten, pruned, packed)   git reflog expire + gc --prune=now alone {w_prune:.2f} s wall {c_prune:.2f} s CPU"
    )
    if filter_branch:
        fb = os.path.join(work, "forget-fb.git")
        shutil.copytree(repo, fb)

        def rewrite() -> None:
            env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
            env["FILTER_BRANCH_SQUELCH_WARNING"] = "1"
            subprocess.run(
                ["git", f"--git-dir={fb}", "filter-branch", "-f", "--index-filter",
                 f"git rm -q --cached --ignore-unmatch {TARGET} {MOVED}", "--", "--all"],
                capture_output=True, check=True, env=env,
            )  # fmt: skip
            git(fb, "update-ref", "-d", "refs/original/refs/heads/main")
            git(fb, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
            git(fb, "gc", "--prune=now", "--quiet")

        w_fb, c_fb, _ = measured(rewrite)
        out.update(git_filter_branch_wall_s=w_fb, git_filter_branch_cpu_s=c_fb)
        print(f"  git filter-branch --index-filter + prune: {w_fb:.2f} s wall {c_fb:.2f} s CPU")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=10, help="the target file changes every N-th commit")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--filter-branch", action="store_true", help="also time git filter-branch (minutes)")
    parser.add_argument("--work", default=None, help="folder for the repos (default: a temp dir)")
    parser.add_argument("--reuse", action="store_true", help="keep repos already built in --work")
    parser.add_argument("--json", default=None, help="also write the summary here")
    args = parser.parse_args(argv)

    work = args.work or tempfile.mkdtemp(prefix="gitmem-bench-history-")
    written = os.path.join(work, "history.git")
    packed = os.path.join(work, "history-packed.git")
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, work in {work}")
    summary: dict[str, Any] = {"commits": args.commits, "every": args.every}
    if not (args.reuse and os.path.isdir(written) and os.path.isdir(packed)):
        for old in (written, packed):
            shutil.rmtree(old, ignore_errors=True)
        print(f"building {args.commits} commits (target edited every {args.every}th, moved half-way) ...", flush=True)
        t_build, _ = timed(lambda: build(written, args.commits, args.every))
        print(f"built in {t_build:.1f} s")
        shutil.copytree(written, packed)
        gc_time, gc_report = timed(lambda: GitFileStore.open(packed).sync.gc())
        print(f"store.gc() on a copy: {gc_time:.2f} s, {gc_report}")
        summary.update(build_s=t_build, gc_s=gc_time)
    print(f"load average before measuring: {os.getloadavg()[0]:.1f}")
    summary["written"] = compare_log("as written", written, args.rounds)
    summary["packed"] = compare_log("packed", packed, args.rounds)
    summary["forget"] = compare_forget(packed, work, args.filter_branch)
    summary["load_average_after"] = os.getloadavg()[0]

    verdicts = [
        (f"log of one path across the history <= 100 ms ({kind}, {measure} median)",
         summary[kind]["path"][f"{measure}_median_s"]["gitmem"] <= 0.100)
        for kind in ("packed", "written") for measure in ("wall", "cpu")
    ]  # fmt: skip
    for text, ok in verdicts:
        print(f"- [{'met' if ok else 'MISSED'}] {text}")
    summary["_verdicts"] = [{"target": t, "met": ok} for t, ok in verdicts]
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2, default=str))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
