"""What do ``gitmem push`` and ``gitmem pull`` of one changed file cost against plain git on a forge?

A team keeps its memory on a forge that runs no gitmem code. This run answers
one question against its baseline, measured in the same run: on a memory of
``--files`` files and ``--commits`` commits, what does sending one changed file
from one machine to another cost through gitmem, and what does the same change
cost through ``git push`` / ``git pull`` of a plain clone of the same forge?

Set-up (untimed): the history is made with ``git fast-import`` into a memory
gitmem created (commit i adds the next ``files / commits`` notes of
:mod:`bench.bulk`'s layout, or edits one when there are more commits than
files), packed, and pushed to a bare **forge** repository (plain ``git init
--bare``, no hooks), reached by file path, or with ``--daemon`` through ``git
daemon`` on 127.0.0.1 (``git://``, pushes enabled). Two gitmem roots ``gitmem clone`` it
(every commit checked by the memory's rules; the time of each clone is printed)
and two plain ``git clone`` s of it get a work tree.

Each round runs three sequences (and a ``gitmem --version`` process, the floor
under every CLI row), the order rotated every round so background
load hits all alike:

- **gitmem CLI** (once for each way of running it, see ``--baseline`` and
  ``--regular``): root A writes one note (library, untimed), then ``gitmem push
  NAME`` in A and ``gitmem pull NAME`` in B are timed, each a whole process;
- **gitmem library**: the same through :func:`gitmem.remotes.push` and
  :func:`gitmem.remotes.pull` in this process (no interpreter start-up);
- **git**: clone A writes the same kind of note, ``git add`` + ``git commit``
  (untimed), then ``git push`` in A and ``git pull --ff-only`` in B are timed.

Each pull must bring exactly the one new commit (checked). Reported: p50 and
p95 of each row and the ratio of medians gitmem / git (the target is at most 2x),
wall time and CPU time (user + system of the process and every child it waited
for; for the library rows, of this process and its children): on a loaded machine
the CPU ratio moves far less than the wall ratio.

Usage::

    .venv/bin/python bench/bench_forge.py                  # 1k files, 1k commits, 9 rounds (< 1 min)
    .venv/bin/python bench/bench_forge.py --files 10000 --commits 10000 --rounds 21
    .venv/bin/python bench/bench_forge.py --files 10000 --commits 10000 --rounds 21 --daemon
    .venv/bin/python bench/bench_forge.py --dir /mnt/ext4 --files 10000 --commits 10000 --rounds 21

``--baseline DIR`` times the CLI rows a second time with ``DIR`` (a ``gitmem/`` package,
e.g. main's from ``git archive``) first on ``PYTHONPATH``: before and after in the same
rounds. ``--regular SCRIPT`` times them once more through ``SCRIPT``, e.g. the console
script of a regular (non-editable) install, whose start-up has no editable finder.
``--new-session`` times the library rows once more with every git child gitmem waits
for started in a session of its own, as before :func:`gitmem.git.cli.own_group`: under
Linux's autogroup scheduling a new session is a new scheduling group, which does not
carry the priority of the session that runs the bench (git's row and the CLI processes
keep it). The off row of keeping git in the caller's session.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bulk
from bench.gitenv import isolated_git_env

ISOLATED = {
    **isolated_git_env(),
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
os.environ.update(ISOLATED)  # the library's git children (fetch, push) get it too
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
NAME = "team"
NEW_SESSION = "library, git in new session"

from gitmem import Root, remotes  # noqa: E402 (after the environment is isolated)


def git(*args: str, cwd: Path | str | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True, timeout=600
    ).stdout.strip()


def gitmem_cmd() -> list[str]:
    script = Path(sys.executable).with_name("gitmem")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gitmem.adapters.cli"]


class Cli:
    """One way to run the ``gitmem`` command: a console script, and a folder put first on ``PYTHONPATH``."""

    def __init__(
        self, label: str, script: list[str], path: str | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.label, self.script = label, script
        self.env = {**ENV, **(env or {}), **({"PYTHONPATH": path} if path else {})}


def process(cmd: list[str], cwd: Path | str | None = None, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, with every child it waited for) of one process."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env or ENV, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed: {err.read().decode(errors='replace').strip()}")
    return took, usage.ru_utime + usage.ru_stime


def gitmem(root: Path, *args: str, cli: Cli | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one ``gitmem`` process over ``root`` (run as ``cli`` says, else this install's)."""
    if cli is None:
        return process([*gitmem_cmd(), "--root", str(root), *args])
    return process([*cli.script, "--root", str(root), *args], env=cli.env)


def timed_git(*args: str, cwd: Path) -> tuple[float, float]:
    return process(["git", *args], cwd=cwd)


@contextlib.contextmanager
def git_in_new_session() -> Iterator[None]:
    """Every git child gitmem waits for in a session of its own, as before ``own_group`` (the off row)."""
    from gitmem.git import cli

    kept = cli.own_group
    users = [
        m
        for name, m in list(sys.modules.items())
        if name.startswith("gitmem.") and getattr(m, "own_group", None) is kept
    ]
    for module in users:
        module.own_group = lambda: (True, None)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module in users:
            module.own_group = kept  # type: ignore[attr-defined]


def own_cpu() -> float:
    """CPU seconds of this process and the children it waited for."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


# -- building the forge -----------------------------------------------------------------


def history(files: int, commits: int) -> Iterator[bytes]:
    """A ``git fast-import`` stream: ``commits`` commits that together add ``files`` notes."""
    corpus = bulk.Corpus()
    stamp = 1_700_000_000
    for i in range(commits):
        lo, hi = i * files // commits, (i + 1) * files // commits
        touched = range(lo, hi) if hi > lo else [i % files]
        msg = f"write {bulk.layout_path(touched[0])}\n".encode()
        yield b"commit refs/heads/main\n"
        yield b"committer bench <bench@example.com> %d +0000\n" % (stamp + i)
        yield b"data %d\n%s" % (len(msg), msg)
        if i == 0:
            yield b"from refs/heads/main^0\n"
        for k in touched:
            data = corpus.text(k, salt="" if hi > lo else f"@{i}").encode()
            yield b"M 100644 inline %s\ndata %d\n%s\n" % (bulk.layout_path(k).encode(), len(data), data)


def build_forge(tmp: Path, files: int, commits: int) -> Path:
    from gitmem import SyncGitFileStore

    seed = tmp / "seed.git"
    SyncGitFileStore.init(seed)
    proc = subprocess.Popen(
        ["git", "--git-dir", str(seed), "fast-import", "--quiet", "--force"], stdin=subprocess.PIPE, env=ENV
    )
    assert proc.stdin is not None
    for chunk in history(files, commits):
        proc.stdin.write(chunk)
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    git("--git-dir", str(seed), "repack", "-adq")
    forge = tmp / "forge.git"
    git("init", "-q", "--bare", "-b", "main", str(forge))
    git("--git-dir", str(seed), "push", "-q", str(forge), "main")
    return forge


# -- the rounds -------------------------------------------------------------------------


class Rows:
    """Samples of each row: (wall, CPU) seconds."""

    def __init__(self) -> None:
        self.samples: dict[str, list[tuple[float, float]]] = {}

    def add(self, row: str, sample: tuple[float, float]) -> None:
        self.samples.setdefault(row, []).append(sample)

    def p(self, row: str, q: float, which: int = 0) -> float:
        s = sorted(x[which] for x in self.samples[row])
        return s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))] * 1000

    def median(self, row: str, which: int = 0) -> float:
        return statistics.median(x[which] for x in self.samples[row])

    def show(self, op: str, sides: list[str]) -> None:
        base = f"{op}: git"
        print(
            f"{base:<34} p50 {self.p(base, 0.5):8.1f} ms  p95 {self.p(base, 0.95):8.1f} ms"
            f"   CPU p50 {self.p(base, 0.5, 1):7.1f} ms"
        )
        for side in sides:
            row = f"{op}: {side}"
            ratio = self.median(row) / self.median(base)
            cpu = self.median(row, 1) / self.median(base, 1)
            print(
                f"{row:<34} p50 {self.p(row, 0.5):8.1f} ms  p95 {self.p(row, 0.95):8.1f} ms   {ratio:5.2f}x git"
                f"   CPU p50 {self.p(row, 0.5, 1):7.1f} ms {cpu:5.2f}x"
            )


@contextlib.contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """``git daemon`` serving ``base`` on a free port of 127.0.0.1, pushes allowed; stopped on exit."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1",
         f"--port={port}", f"--base-path={base}", str(base)],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"git://127.0.0.1:{port}/forge.git"
        deadline = time.monotonic() + 30
        while subprocess.run(["git", "ls-remote", url], env=ENV, capture_output=True).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("git daemon did not start")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def measure(tmp: Path, forge: Path, url: str, rounds: int, clis: list[Cli], *, new_session: bool = False) -> None:
    """Clone the forge at ``url`` twice each way, then run ``rounds`` rounds and print the rows
    (the CLI rows once for each of ``clis``; with ``new_session`` the library rows once more,
    git started in a session of its own)."""
    root_a, root_b = tmp / "root-a", tmp / "root-b"
    took = [gitmem(root, "clone", url, NAME)[0] for root in (root_a, root_b)]
    plain_a, plain_b = tmp / "plain-a", tmp / "plain-b"
    git_took = [timed_git("clone", "-q", url, str(p), cwd=tmp)[0] for p in (plain_a, plain_b)]
    print(f"clone: gitmem clone {min(took):.2f} s, git clone {min(git_took):.2f} s (best of 2)", flush=True)

    store_a = Root(root_a).mount(NAME)
    store_b = Root(root_b).mount(NAME)
    rows = Rows()
    n = 0

    def note() -> tuple[str, str]:
        nonlocal n
        n += 1
        return (
            f"forge-bench/note-{n:05d}.md",
            f"---\ndescription: round note {n}\n---\nthe user prefers short answers ({n})\n",
        )

    def expect_head(path: Path | None, want: str) -> None:
        got = git("rev-parse", "main", cwd=path) if path else store_b.sync.head()
        assert got == want, f"pull brought {got}, forge has {want}"

    def via(cli: Cli) -> Callable[[], None]:
        def run() -> None:
            store_a.sync.write(*note(), expected=None)
            rows.add(f"push: {cli.label}", gitmem(root_a, "push", NAME, cli=cli))
            rows.add(f"pull: {cli.label}", gitmem(root_b, "pull", NAME, cli=cli))
            expect_head(None, git("rev-parse", "main", cwd=forge))

        return run

    def via_library(label: str = "gitmem library") -> None:
        store_a.sync.write(*note(), expected=None)
        t, c = time.perf_counter(), own_cpu()
        remotes.push(store_a)
        rows.add(f"push: {label}", (time.perf_counter() - t, own_cpu() - c))
        t, c = time.perf_counter(), own_cpu()
        remotes.pull(store_b)
        rows.add(f"pull: {label}", (time.perf_counter() - t, own_cpu() - c))
        expect_head(None, git("rev-parse", "main", cwd=forge))

    def via_library_new_session() -> None:
        with git_in_new_session():
            via_library(NEW_SESSION)

    def via_git() -> None:
        path, text = note()
        (plain_a / path).parent.mkdir(exist_ok=True)
        (plain_a / path).write_text(text)
        git("add", path, cwd=plain_a)
        git("commit", "-q", "-m", f"write {path}", cwd=plain_a)
        rows.add("push: git", timed_git("push", "-q", "origin", "main", cwd=plain_a))
        rows.add("pull: git", timed_git("pull", "-q", "--ff-only", "origin", "main", cwd=plain_b))
        expect_head(plain_b, git("rev-parse", "main", cwd=forge))

    # gitmem's pulls bring the git clones' commits too (and the other way round): keep
    # every side at the forge's head before its own round, untimed.
    def catch_up() -> None:
        remotes.pull(store_a)
        remotes.pull(store_b)
        git("pull", "-q", "--ff-only", "origin", "main", cwd=plain_a)
        git("pull", "-q", "--ff-only", "origin", "main", cwd=plain_b)

    def start_up() -> None:  # the floor under every CLI row: a process that imports the CLI and exits
        rows.add("gitmem --version", gitmem(root_a, "--version"))

    order: list[Callable[[], None]] = [*(via(cli) for cli in clis), via_library, via_git, start_up]
    if new_session:
        order.insert(-2, via_library_new_session)
    for r in range(rounds):
        at = r % len(order)
        for step in order[at:] + order[:at]:
            catch_up()
            step()
    print(f"one changed file, {rounds} rounds of each (p95: nearest rank):")
    sides = [*(cli.label for cli in clis), "gitmem library", *([NEW_SESSION] if new_session else [])]
    rows.show("push", sides)
    rows.show("pull", sides)
    version = "gitmem --version"
    print(
        f"{version:<34} p50 {rows.p(version, 0.5):8.1f} ms   CPU p50 {rows.p(version, 0.5, 1):7.1f} ms  (a CLI process, no work)"
    )
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--daemon", action="store_true", help="reach the forge through git daemon (git://127.0.0.1)")
    parser.add_argument("--dir", help="make the forge, roots and clones in a temporary folder under DIR")
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="also time the CLI with DIR first on PYTHONPATH (a gitmem/ package, e.g. main's from `git archive`)",
    )
    parser.add_argument(
        "--full-pull",
        action="store_true",
        help="also time the CLI with GITMEM_FULL_PULL=1 (every pull through the store: the quick path's off row)",
    )
    parser.add_argument(
        "--new-session",
        action="store_true",
        help="also time the library with every git child in a session of its own (as before own_group: the off row)",
    )
    parser.add_argument(
        "--regular", metavar="SCRIPT", help="also time the CLI through SCRIPT (e.g. a regular install's `gitmem`)"
    )
    args = parser.parse_args()
    if args.files < 1 or args.commits < 1 or args.rounds < 1:
        parser.error("--files, --commits and --rounds must be at least 1")
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-forge-", dir=args.dir) as name:
        tmp = Path(name)
        t = time.perf_counter()
        forge = build_forge(tmp, args.files, args.commits)
        print(
            f"forge: {args.files} files, {git('rev-list', '--count', 'main', cwd=forge)} commits, "
            f"built in {time.perf_counter() - t:.1f} s ({tmp})",
            flush=True,
        )
        with contextlib.ExitStack() as stack:
            url = stack.enter_context(git_daemon(tmp)) if args.daemon else str(forge)
            print(f"forge URL: {url}", flush=True)
            clis = [Cli("gitmem CLI", gitmem_cmd())]
            if args.baseline:
                clis.append(Cli("gitmem CLI, baseline", gitmem_cmd(), str(Path(args.baseline).resolve())))
            if args.full_pull:
                clis.append(Cli("gitmem CLI, full pull", gitmem_cmd(), env={"GITMEM_FULL_PULL": "1"}))
            if args.regular:
                clis.append(Cli("gitmem CLI, regular install", [args.regular]))
            measure(tmp, forge, url, args.rounds, clis, new_session=args.new_session)
        git("fsck", "--strict", "--no-progress", cwd=forge)


if __name__ == "__main__":
    main()
