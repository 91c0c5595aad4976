"""What do the review gate, the ref watcher and a checked pull cost over their baselines?

One run, every baseline measured in the same run, the two sides of each
pair alternated so background load hits both alike:

- **gate**: a one-file store write by a run with the review gate on (config read,
  proposal ref CAS through a libgit2 ref transaction) vs. the same write with the
  gate off (CAS on ``main``).
- **watch**: from the start of a store write to :class:`gitmem.adapters.watch.Watcher`
  delivering the change (debounce 0, refs re-read, commits and paths described),
  vs. a bare watchdog observer on the same ``refs/`` folder seeing its first event
  (both include the write itself, ~1 ms).
- **pull**: ``gitmem pull`` of one new commit from a local bare "hosting"
  repository (fetch into a scratch repo, pushcheck, fast-forward CAS) vs. the
  unchecked ``git fetch <url> main:main`` into a plain bare clone.

Usage::

    .venv/bin/python bench/bench_collab.py             # 40 rounds per pair
    .venv/bin/python bench/bench_collab.py --rounds 10 # quicker
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from bench.gitenv import isolated_git_env
from gitmem import Origin, Root, remotes, review
from gitmem.adapters.watch import RefChange, Watcher

ENV = {
    **os.environ,
    **isolated_git_env(),
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
WAIT = 30.0  # liveness bound for one event


def git(*args: str, cwd: Path | str | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True, timeout=120
    ).stdout.strip()


def ms(samples: list[float]) -> str:
    s = sorted(samples)
    return f"median {statistics.median(s) * 1000:7.2f} ms  p90 {s[int(len(s) * 0.9) - 1] * 1000:7.2f} ms"


def report(name: str, ours: list[float], base: list[float], base_name: str) -> None:
    ratio = statistics.median(ours) / statistics.median(base)
    print(f"{name:<34} {ms(ours)}")
    print(f"{'  baseline: ' + base_name:<34} {ms(base)}   ({ratio:.2f}x)")


def bench_gate(tmp: Path, rounds: int) -> None:
    root = Root(tmp / "gate")
    gated = root.mount("gated", create=True).sync
    plain = root.mount("plain", create=True).sync
    review.enable(gated)
    runner = gated.for_run("bench-run")
    ours: list[float] = []
    base: list[float] = []
    for i in range(rounds):
        t = time.perf_counter()
        runner.write(f"notes/{i}.md", f"note {i}\n", expected=None)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        plain.write(f"notes/{i}.md", f"note {i}\n", expected=None, origin=Origin(run_id="bench-run"))
        base.append(time.perf_counter() - t)
    assert review.proposal(gated, "bench-run").commits == rounds
    report("gate: write to a proposal", ours, base, "write to main")


def bench_watch(tmp: Path, rounds: int) -> None:
    root = Root(tmp / "watch")
    store = root.mount("user", create=True).sync
    refs = os.path.join(store.path, "refs")

    seen = threading.Event()
    at = [0.0]
    delivered: list[RefChange] = []

    def on_change(change: RefChange) -> None:
        delivered.append(change)
        at[0] = time.perf_counter()
        seen.set()

    class Raw(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if not seen.is_set():
                at[0] = time.perf_counter()
                seen.set()

    ours: list[float] = []
    base: list[float] = []
    with Watcher(root, ["user"], on_change, debounce=0.0, poll_interval=600, index=False) as watcher:
        for i in range(rounds):
            seen.clear()
            t = time.perf_counter()
            store.write(f"w/{i}.md", f"{i}\n", expected=None)
            assert seen.wait(WAIT), "the watcher missed a write"
            ours.append(at[0] - t)
            assert watcher.quiesce(WAIT)
    observer = Observer()
    observer.schedule(Raw(), refs, recursive=True)
    observer.start()
    try:
        for i in range(rounds):
            seen.clear()
            t = time.perf_counter()
            store.write(f"r/{i}.md", f"{i}\n", expected=None)
            assert seen.wait(WAIT), "watchdog missed a write"
            base.append(at[0] - t)
            time.sleep(0.005)  # let the rename's second event pass
    finally:
        observer.stop()
        observer.join(10)
    assert len(delivered) == rounds
    report("watch: write -> RefChange", ours, base, "first raw watchdog event")


def bench_pull(tmp: Path, rounds: int) -> None:
    root = Root(tmp / "pull")
    store = root.mount("user", create=True)
    store.sync.write("a.md", "a\n", expected=None)
    hosting = tmp / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    remotes.add(store, "origin", str(hosting))
    remotes.push(store, "origin")
    plain = tmp / "plain.git"
    git("clone", "-q", "--bare", str(hosting), str(plain))
    work = tmp / "work"
    git("clone", "-q", str(hosting), str(work))
    ours: list[float] = []
    base: list[float] = []
    for i in range(rounds):
        (work / f"pr-{i}.md").write_text(f"merged {i}\n")
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", f"pr {i}", cwd=work)
        git("push", "-q", "origin", "main", cwd=work)
        t = time.perf_counter()
        result = remotes.pull(store, "origin")
        ours.append(time.perf_counter() - t)
        assert result.kind == "fast_forward", result
        t = time.perf_counter()
        git("fetch", "-q", str(hosting), "main:main", cwd=plain)
        base.append(time.perf_counter() - t)
    report("pull: checked fast-forward", ours, base, "git fetch main:main")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-collab-") as tmp:
        bench_gate(Path(tmp), args.rounds)
        bench_watch(Path(tmp), args.rounds)
        bench_pull(Path(tmp), max(5, args.rounds // 2))


if __name__ == "__main__":
    main()
