"""Benchmark the cost of one ``gitmem`` CLI call against ``git cat-file`` and a bare Python.

An agent or a script that calls the CLI in a loop pays its start-up on every call,
so this times whole processes, as such a caller sees them:

- ``gitmem --help``, ``gitmem ls user``, ``gitmem cat user notes/a.md`` (target <= 100 ms);
- ``gitmem log``, ``blame`` and ``grep``: read commands that open the store, for what
  they load beyond the quick path (same target);
- the baselines, measured in the same run and interleaved with them so background
  load hits all alike: ``git cat-file -p main:notes/a.md`` (what the same read costs
  with git's own CLI) and ``python -c pass`` (the floor any Python CLI pays);
- ``python -c 'import pygit2'``, for scale: what a call that opens the store pays
  before any gitmem code runs (``ls`` and ``cat`` of ``main`` no longer do).

It prints the median, minimum and p90 of each, and each gitmem call as a ratio of
both baselines. The memory is made in a temporary root with 200 small files.

The children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` is dropped
from their environment) and the first, untimed round writes the ``.pyc`` files:
an installed gitmem has them (pip compiles at install), so a shell that sets the
variable must not make every timed call compile gitmem from source.

Usage::

    .venv/bin/python bench/bench_startup.py              # 21 rounds
    .venv/bin/python bench/bench_startup.py --rounds 51
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 100.0


def gitmem_cmd() -> list[str]:
    """The installed entry point next to this Python, else ``python -m`` the package."""
    script = Path(sys.executable).with_name("gitmem")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gitmem.adapters.cli"]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, from the child's rusage) of one call, in ms.

    CPU time is what the call costs whatever else the machine runs; wall time is
    what a caller waits, and swings with load.
    """
    start = time.perf_counter()
    # Run from the temp root: `python -m` puts the working folder first on sys.path, which
    # would shadow the code chosen with --code when the bench is started from a checkout.
    proc = subprocess.Popen(argv, env=env, cwd=env["GITMEM_ROOT"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited with {proc.returncode}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument(
        "--code", type=Path, help="Also time another checkout's gitmem (e.g. main before a change), same run"
    )
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="gitmem-bench-startup-"))
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["GITMEM_ROOT"] = str(tmp)
        gm = gitmem_cmd()
        subprocess.run([*gm, "init", "user"], env=env, check=True, capture_output=True)
        notes = tmp / "notes-src" / "notes"
        notes.mkdir(parents=True)
        for i in range(args.files):
            (notes / ("a.md" if i == 0 else f"n{i:04d}.md")).write_text(
                f"---\ndescription: note {i}\n---\nline {i}\n"
            )
        subprocess.run([*gm, "import", "user", str(notes.parent)], env=env, check=True, capture_output=True)
        repo = tmp / "user.git"
        cases: dict[str, list[str]] = {
            "python -c pass": [sys.executable, "-c", "pass"],
            # What opening a store costs before any gitmem code runs (ls and cat of main skip it).
            "python -c 'import pygit2'": [sys.executable, "-c", "import pygit2"],
            "git cat-file -p": ["git", "-C", str(repo), "cat-file", "-p", "main:notes/a.md"],
            "gitmem --help": [*gm, "--help"],
            "gitmem ls user": [*gm, "ls", "user"],
            "gitmem cat user notes/a.md": [*gm, "cat", "user", "notes/a.md"],
            # Read commands that open the store (pygit2): what they load beyond the quick path.
            "gitmem log user": [*gm, "log", "user"],
            "gitmem blame user notes/a.md": [*gm, "blame", "user", "notes/a.md"],
            "gitmem grep user line": [*gm, "grep", "user", "line"],
        }
        if args.code is not None:
            # PYTHONPATH is searched before the editable install's finder, so the same entry
            # point runs that code (same interpreter, same script: only the code differs).
            env["PYTHONPATH"] = str(args.code.resolve())
            other = gm
            for name, argv in list(cases.items()):
                if name.startswith("gitmem "):
                    cases[f"other: {name}"] = [*other, *argv[len(gm) :]]
            for name in list(cases):
                if not name.startswith("other"):
                    cases[name] = ["env", "-u", "PYTHONPATH", *cases[name]]
        for argv in cases.values():  # warm the page cache and .pyc files
            timed(argv, env)
        samples: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, argv in cases.items():
                wall, used = timed(argv, env)
                samples[name].append(wall)
                cpu[name].append(used)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    med = {name: statistics.median(v) for name, v in samples.items()}
    low = {name: min(v) for name, v in samples.items()}
    low_cpu = {name: min(v) for name, v in cpu.items()}
    med_cpu = {name: statistics.median(v) for name, v in cpu.items()}
    if args.code is not None:
        print(f"# other: {args.code.resolve()} (PYTHONPATH), run with this Python")
    print(f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpus, "
          f"{args.rounds} rounds, {args.files} files; loadavg {os.getloadavg()[0]:.2f}")
    print(
        f"{'command':42} {'wall ms':>8} {'min':>7} {'p90':>7} {'x git':>6} {'x py':>5} | "
        f"{'cpu ms':>7} {'min':>7} {'x git':>6} {'x py':>5}  target"
    )
    for name, values in samples.items():
        p90 = statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]
        target = ""
        if "gitmem" in name:
            target = "met" if med[name] <= TARGET_MS else f"missed (<= {TARGET_MS:.0f} ms wall)"
        print(
            f"{name:42} {med[name]:8.1f} {low[name]:7.1f} {p90:7.1f} {med[name] / med['git cat-file -p']:6.1f} "
            f"{med[name] / med['python -c pass']:5.1f} | {med_cpu[name]:7.1f} {low_cpu[name]:7.1f} "
            f"{med_cpu[name] / max(med_cpu['git cat-file -p'], 0.1):6.1f} {med_cpu[name] / med_cpu['python -c pass']:5.1f}  {target}"
        )


if __name__ == "__main__":
    main()
