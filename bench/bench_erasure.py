"""Benchmark erasure: forget against git filter-repo, and what refusing erased content costs a push.

Questions, each with its baseline measured in the same run:

- **forget of one path over a 10k-commit history** (target: at most 2x the
  baseline): ``store.sync.forget(path)`` on a copy of a packed memory whose file
  is edited every ``--every``-th commit and moved once half-way, against
  ``git filter-repo --invert-paths --path <both names>`` on an identical copy
  (filter-repo then expires the reflogs and runs ``git gc --prune=now`` itself;
  gitmem's forget also writes its ledger entry and scrubs commit messages).
  Rounds alternate the two on fresh copies; medians are compared.
- **a refused push against an accepted one of the same size** (target: at most
  1.2x): a clone pushes one commit of ``--files`` new files over a file path
  into a mount with gitmem's hooks installed; the refused commit is the same
  size but one of its files holds a version the mount's ``forget`` erased, so
  the pre-receive check refuses it (rule ``erased``). Each round pushes both,
  alternately, to fresh branch names.

- **what forget's delta writer buys** (``--variant delta``): forget with each
  rewritten tree stored as a delta against the one rewritten before it at the
  same path (:mod:`gitmem.git.rewritepack`) against every tree stored whole
  (``rewritepack.delta`` answering "no delta"), alternated on fresh copies: the
  forget's time (its prune included) and the size of the packs it leaves.

Usage::

    .venv/bin/python bench/bench_erasure.py                 # 10k commits
    .venv/bin/python bench/bench_erasure.py --commits 2000  # quicker
    .venv/bin/python bench/bench_erasure.py --variant delta --commits 1000 --work /mnt/ext4/x/e1k
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_history import MOVED, TARGET, build, git, measured
from gitmem import GitFileStore
from gitmem.hooks import install_hooks


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def filter_repo() -> list[str]:
    found = shutil.which("git-filter-repo") or os.path.join(os.path.dirname(sys.executable), "git-filter-repo")
    if not os.path.exists(found):
        raise SystemExit("git-filter-repo is missing: .venv/bin/pip install git-filter-repo")
    return [sys.executable, found] if found.endswith(".py") else [found]


def compare_forget(packed: str, work: str, rounds: int) -> dict[str, Any]:
    tool = filter_repo()
    ours_w: list[float] = []
    theirs_w: list[float] = []
    rewritten = 0
    for i in range(rounds):
        ours = os.path.join(work, f"forget-gitmem-{i}.git")
        theirs = os.path.join(work, f"forget-filter-repo-{i}.git")
        for path in (ours, theirs):
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(packed, path)

        def run_filter_repo(where: str = theirs) -> None:
            subprocess.run(
                [*tool, "--force", "--quiet", "--invert-paths", "--path", TARGET, "--path", MOVED],
                cwd=where, capture_output=True, check=True, env=_env(),
            )  # fmt: skip

        pair = [("gitmem", lambda where=ours: GitFileStore.open(where).sync.forget(MOVED)), ("filter-repo", run_filter_repo)]
        if i % 2:
            pair.reverse()
        for who, call in pair:
            wall, _, result = measured(call)
            (ours_w if who == "gitmem" else theirs_w).append(wall)
            if who == "gitmem":
                rewritten = result.commits_rewritten  # type: ignore[attr-defined]
        for name in (MOVED, TARGET):  # both erased the same thing
            for path in (ours, theirs):
                assert git(path, "log", "--all", "--format=%H", "--", name) == "", (path, name)
        shutil.rmtree(ours, ignore_errors=True)
        shutil.rmtree(theirs, ignore_errors=True)
    med = {"gitmem": statistics.median(ours_w), "filter_repo": statistics.median(theirs_w)}
    ratio = med["gitmem"] / med["filter_repo"]
    print(
        f"forget one path ({rewritten} commits rewritten): gitmem {med['gitmem']:.2f} s, "
        f"git filter-repo --invert-paths {med['filter_repo']:.2f} s  -> ratio {ratio:.2f}"
    )
    return {"wall_median_s": med, "ratio": ratio, "commits_rewritten": rewritten, "rounds": rounds}


def pack_bytes(path: str) -> int:
    folder = os.path.join(path, "objects", "pack")
    return sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder) if n.endswith(".pack"))


def variant_delta(packed: str, work: str, rounds: int) -> dict[str, Any]:
    """forget with the delta writer on and off (every tree whole), alternated on fresh copies."""
    from gitmem.git import rewritepack

    kept = rewritepack.delta
    got: dict[bool, list[tuple[float, float, int]]] = {True: [], False: []}
    for i in range(rounds):
        for on in (True, False) if i % 2 == 0 else (False, True):
            where = os.path.join(work, f"forget-delta-{on}.git")
            shutil.rmtree(where, ignore_errors=True)
            shutil.copytree(packed, where)
            rewritepack.delta = kept if on else (lambda base, target: None)  # type: ignore[assignment]
            try:
                wall, cpu, _ = measured(lambda where=where: GitFileStore.open(where).sync.forget(MOVED))
            finally:
                rewritepack.delta = kept  # type: ignore[assignment]
            got[on].append((wall, cpu, pack_bytes(where)))
            assert git(where, "log", "--all", "--format=%H", "--", MOVED) == ""
            shutil.rmtree(where, ignore_errors=True)
    med = {on: [statistics.median(s[k] for s in got[on]) for k in range(3)] for on in got}
    print(
        f"| delta writer | forget (prune included) | on {med[True][1]:.2f} s CPU ({med[True][0]:.2f} wall), "
        f"{med[True][2] / 1e6:.2f} MB | off {med[False][1]:.2f} s CPU ({med[False][0]:.2f} wall), {med[False][2] / 1e6:.2f} MB "
        f"| CPU **{med[True][1] / med[False][1]:.2f}x** (wall {med[True][0] / med[False][0]:.2f}x), "
        f"pack **{med[True][2] / med[False][2]:.2f}x** | load {os.getloadavg()[0]:.1f} |",
        flush=True,
    )
    return {"on": med[True], "off": med[False], "rounds": rounds}


def compare_push(work: str, files: int, rounds: int) -> dict[str, Any]:
    mount = os.path.join(work, "push-mount.git")
    shutil.rmtree(mount, ignore_errors=True)
    store = GitFileStore.init(mount).sync
    erased_text = "Dana's phone is 555 0142\n"
    store.write("seed.md", "seed\n", expected=None)
    store.write("people/dana.md", erased_text, expected=None)
    store.forget("people/dana.md")
    install_hooks(mount)
    clone = os.path.join(work, "push-clone")
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", mount, clone], check=True, capture_output=True, env=_env())

    def commit(tag: str, refused: bool) -> str:
        subprocess.run(["git", "checkout", "-q", "--detach", "origin/main"], cwd=clone, check=True, env=_env())
        folder = Path(clone, f"batch-{tag}")
        folder.mkdir()
        for n in range(files):
            text = erased_text if refused and n == files // 2 else f"note {tag} {n}: {'x' * (len(erased_text) - 20)}\n"
            (folder / f"n{n:04d}.md").write_text(text)
        subprocess.run(["git", "add", "-A"], cwd=clone, check=True, env=_env())
        subprocess.run(["git", "commit", "-q", "-m", f"batch {tag}"], cwd=clone, check=True, env=_env())
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True).stdout.strip()

    walls: dict[str, list[float]] = {"accepted": [], "refused": []}
    for i in range(rounds):
        order = [("accepted", False), ("refused", True)]
        if i % 2:
            order.reverse()
        for kind, refused in order:
            head = commit(f"{kind}-{i}", refused)
            start = time.perf_counter()
            done = subprocess.run(
                ["git", "push", "-q", "origin", f"{head}:refs/heads/{kind}-{i}"], cwd=clone, capture_output=True, text=True, env=_env()
            )
            walls[kind].append(time.perf_counter() - start)
            if refused != (done.returncode != 0) or (refused and "erased" not in done.stderr):
                raise SystemExit(f"{kind} push did not behave: {done.returncode} {done.stderr[-300:]}")
    med = {k: statistics.median(v) for k, v in walls.items()}
    ratio = med["refused"] / med["accepted"]
    print(
        f"push of {files} files: accepted {med['accepted'] * 1000:.0f} ms, refused (erased) "
        f"{med['refused'] * 1000:.0f} ms  -> ratio {ratio:.2f}"
    )
    return {"files": files, "wall_median_s": med, "ratio": ratio, "rounds": rounds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=10, help="the erased file changes every N-th commit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=200, help="files per pushed commit")
    parser.add_argument("--push-rounds", type=int, default=7)
    parser.add_argument("--work", default=None, help="folder for the repos (default: a temp dir)")
    parser.add_argument("--reuse", action="store_true", help="keep the history already built in --work")
    parser.add_argument("--json", default=None, help="also write the summary here")
    parser.add_argument("--variant", choices=["delta"], help="time a mechanism on and off instead of the baselines")
    parser.add_argument("--build-only", action="store_true", help="build the history in --work and stop")
    args = parser.parse_args(argv)

    work = args.work or tempfile.mkdtemp(prefix="gitmem-bench-erasure-")
    packed = os.path.join(work, "history-packed.git")
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, work in {work}")
    summary: dict[str, Any] = {"commits": args.commits, "every": args.every}
    if not (args.reuse and os.path.isdir(packed)):
        shutil.rmtree(packed, ignore_errors=True)
        print(f"building {args.commits} commits through the store ...", flush=True)
        start = time.perf_counter()
        build(packed, args.commits, args.every)
        GitFileStore.open(packed).sync.gc()
        print(f"built and packed in {time.perf_counter() - start:.1f} s")
    if args.build_only:
        return 0
    print(f"load average before measuring: {os.getloadavg()[0]:.1f}")
    if args.variant == "delta":
        variant_delta(packed, work, args.rounds)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    summary["forget"] = compare_forget(packed, work, args.rounds)
    summary["push"] = compare_push(work, args.files, args.push_rounds)
    summary["load_average_after"] = os.getloadavg()[0]
    verdicts = [
        ("forget of one path <= 2x git filter-repo --invert-paths (median wall)", summary["forget"]["ratio"] <= 2.0),
        ("a refused push <= 1.2x an accepted one of the same size (median wall)", summary["push"]["ratio"] <= 1.2),
    ]
    for text, ok in verdicts:
        print(f"- [{'met' if ok else 'MISSED'}] {text}")
    summary["_verdicts"] = [{"target": t, "met": ok} for t, ok in verdicts]
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
