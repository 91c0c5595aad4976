"""Cold starts and growth: each size against the anchor a user would compare with, in one run.

For every size (``--sizes``, default 1k and 10k; ``--big`` adds 100k, built once
under ``--cache`` and reused by later runs) it builds one memory of each kind and
times, as a user or an agent calling the CLI in a loop sees it (whole processes):

- **first grep, no index** (a fresh clone, a new machine, after forget):
  ``gitmem grep`` with the index folder deleted, against ``git grep -i -F`` of the
  same word in the same repository, alternated; the same for **first find, no
  index** (two words, ranked), whose detached indexer is waited for, and its time
  reported (``index built after``);
- **quick ls of one folder** (50 files) against ``git ls-tree -l`` of that folder;
- **index rebuild**: ``gitmem index rebuild``, wall and peak RSS of the process;
- **first recall in a new process** for durable, session and record memory:
  a child process opens the mount and recalls once (from the snapshot the last
  process saved, caught up by tree diff), then again (warm); the anchor is the warm call;
- **read commands that open a mount** (``grep`` with a current index, ``find``,
  ``log``, ``blame``, ``show``, ``diff``, ``changes``, ``records search``,
  ``session recall``, ``durable recall``) against the quick ``ls`` path. A ``grep``
  with an index under ``gitmem.quickread.GREP_INDEX_BYTES`` (1k and 10k here) is
  answered by ``git grep`` over the peek, a larger one (100k) by the index through
  the store; ``find`` of a current index reads it without the store;
- **blame of a recently edited file** against ``git blame``, **log** against ``git log``;
- **session prune** of N stale items against unlinking N files.

- **forget one path**: ``gitmem forget files hot.md --yes`` (``hot.md`` is edited
  every 10th commit, and since it sits in the root tree every commit is rewritten)
  against ``git filter-repo --invert-paths --path hot.md`` (which expires the
  reflogs and runs ``git gc --prune=now`` as forget does), each sample on fresh
  copies of ``files.git`` made outside the timed region, the order alternated; and
  **the pack each leaves** (bytes of ``objects/pack``). ``git-filter-repo`` is
  installed into this Python's environment when missing.

Ratios are of medians in this run; growth factors compare a row at one size with
the row at the size before (a row that does work proportional to the size should
grow about as much as the size; a start-up cost should not grow at all). Wall
times on a shared machine swing with its load; each row also prints CPU time
(user + system of the child).

The file memory is made with ``git fast-import``: N commits, commit i adding one
~500-byte note (every 97th mentions a zeppelin) and every 10th also editing
``hot.md``, so ``log`` and ``blame`` have a real history of N commits.

Usage::

    .venv/bin/python bench/bench_scale.py                      # 1k and 10k, 5 samples
    .venv/bin/python bench/bench_scale.py --sizes 1000 --samples 3
    .venv/bin/python bench/bench_scale.py --big                # also 100k (built once, cached)
    .venv/bin/python bench/bench_scale.py --big --only forget --samples 3   # only forget and its pack
    .venv/bin/python bench/bench_scale.py --sizes 10000 --only read --code ../main   # read commands: this code vs main's
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bulk

Row = dict[str, float]


def gitmem_cmd() -> list[str]:
    script = Path(sys.executable).with_name("gitmem")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gitmem.adapters.cli"]


def env_for(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["GITMEM_ROOT"] = str(root)
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Wall ms, CPU ms (user + system) and peak RSS (MB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, usage.ru_maxrss / 1024


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# -- building the memories --------------------------------------------------------------


def fast_import_stream(n: int) -> Iterator[bytes]:
    corpus = bulk.Corpus()
    stamp = 1_700_000_000
    hot = [f"hot line {i}\n" for i in range(40)]
    for i in range(n):
        text = corpus.text(i)
        if i % 97 == 0:
            text += f"Zeppelin sighting logged as ticket KX-{i}\n"
        data = text.encode()
        msg = f"write {bulk.layout_path(i)}\n".encode()
        yield b"commit refs/heads/main\n"
        yield b"committer bench <bench@example.com> %d +0000\n" % (stamp + i)
        yield b"data %d\n%s" % (len(msg), msg)
        if i == 0:  # on top of the mount's first commit; later ones follow on their own
            yield b"from refs/heads/main^0\n"
        yield b"M 100644 inline %s\ndata %d\n%s\n" % (bulk.layout_path(i).encode(), len(data), data)
        if i % 10 == 0:
            hot[(i // 10) % len(hot)] = f"hot line edited at commit {i}\n"
            body = "".join(hot).encode()
            yield b"M 100644 inline hot.md\ndata %d\n%s\n" % (len(body), body)


def build_files(root: Path, n: int) -> None:
    from gitmem import SyncGitFileStore

    path = root / "files.git"
    SyncGitFileStore.init(path)
    proc = subprocess.Popen(["git", "--git-dir", str(path), "fast-import", "--quiet", "--force"], stdin=subprocess.PIPE)
    assert proc.stdin is not None
    for chunk in fast_import_stream(n):
        proc.stdin.write(chunk)
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "--git-dir", str(path), "repack", "-adq"], check=True)


def build_records(root: Path, n: int) -> None:
    from bench.bench_records import Corpus, seed_git
    from gitmem.root import Root

    seed_git(Root(root), "records", "u1", n, Corpus(random.Random(3)))


def build_session(root: Path, n: int, stale: int) -> None:
    from bench.bench_session import files_of, make_items
    from gitmem.session.location import open_session_memory

    now = time.time()
    rng = random.Random(5)
    items = make_items(n, rng, now=now, age_days=1, importance=0.9)
    memory = open_session_memory(root / "session")
    bulk.import_files(memory.store.path, files_of(items))  # type: ignore[attr-defined]
    prune_items = make_items(stale, rng, now=now, age_days=400, importance=0.1)
    prune = open_session_memory(root / "prune")
    bulk.import_files(prune.store.path, files_of(prune_items))  # type: ignore[attr-defined]


def build_durable(root: Path, n: int) -> None:
    from bench.bench_durable import creates
    from gitmem.durable.repository import DurableRepository

    repo = DurableRepository.open(root, "durable", create=True)
    rng = random.Random(9)
    for start in range(0, n, 128):  # the most operations one change set may hold
        repo.apply(creates(f"n{start}", min(128, n - start), rng, active=True))


def build(root: Path, n: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    build_files(root, n)
    build_records(root, n)
    build_session(root, n, n)
    build_durable(root, n)
    (root / ".built").write_text(str(n))


# -- the child programs -----------------------------------------------------------------

RECALL_CHILD = r"""
import sys, time
kind, root = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if kind == "durable":
    from gitmem.durable.repository import DurableRepository
    from bench.bench_durable import NS
    repo = DurableRepository.open(root, "durable")
    ask = lambda q: repo.recall(NS, q)
elif kind == "session":
    from gitmem.session.location import open_session_memory
    memory = open_session_memory(root + "/session", create=False)
    ask = lambda q: memory.recall_similar(q)
else:
    from gitmem.root import Root
    from gitmem.records import RecordStore
    records = RecordStore(Root(root).mount("records", kind="record").sync, "u1")
    ask = lambda q: records.search(q)
t1 = time.perf_counter(); ask("where is the office of my team"); t2 = time.perf_counter()
ask("what does she like to eat"); t3 = time.perf_counter()
print(f"{(t2 - t1) * 1000:.3f} {(t3 - t2) * 1000:.3f} {(t1 - t0) * 1000:.3f}")
"""


def recall_once(kind: str, root: Path, env: dict[str, str]) -> tuple[float, float]:
    repo_dir = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", RECALL_CHILD, kind, str(root)],
        env={**env, "PYTHONPATH": str(repo_dir)},
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    first, warm, _open = (float(x) for x in done.stdout.split())
    return first, warm


# -- the measurements -------------------------------------------------------------------


def wait_for_index(root: Path, env: dict[str, str], timeout: float = 1800) -> float:
    """Seconds until the files mount's index is current (the detached indexer's work)."""
    from gitmem import SyncGitFileStore

    store = SyncGitFileStore.open(root / "files.git")
    start = time.perf_counter()
    while store.index_status().state != "current":
        if time.perf_counter() - start > timeout:
            raise SystemExit("the index was not built in the background")
        time.sleep(0.05)
    return time.perf_counter() - start


ROWS = ("grep", "rebuild", "recall", "read", "history", "prune", "forget")
"""Groups of rows ``--only`` picks from, in the order they run."""


def measure(root: Path, n: int, samples: int, groups: set[str], scratch: Path, code: Path | None = None) -> dict[str, Row]:
    env = env_for(root)
    if code is not None:  # the same entry point running another checkout's code: PYTHONPATH comes first
        other_env = {**env, "PYTHONPATH": str(code.resolve())}
        env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    gm = gitmem_cmd()
    files = root / "files.git"
    index = files / "gitmem" / "index"
    rows: dict[str, Row] = {}

    def row(name: str, fn: Callable[[], tuple[float, float, float]], anchor: Callable[[], tuple[float, float, float]] | None, after: Callable[[], float] | None = None) -> None:
        walls, cpus, rss, aw, ac, extra = [], [], [], [], [], []
        for _ in range(samples):
            w, c, r = fn()
            walls.append(w), cpus.append(c), rss.append(r)
            if after is not None:
                extra.append(after())
            if anchor is not None:
                w2, c2, _ = anchor()
                aw.append(w2), ac.append(c2)
        rows[name] = {"wall": med(walls), "cpu": med(cpus), "rss": max(rss), "anchor": med(aw), "anchor_cpu": med(ac)}
        if extra:
            rows[name]["after"] = med(extra)

    word = ["zeppelin"]
    git_grep = ["git", "--git-dir", str(files), "grep", "-i", "-F", "-e", "zeppelin", "main"]

    def first_grep() -> tuple[float, float, float]:
        shutil.rmtree(index, ignore_errors=True)
        return run([*gm, "grep", "files", *word, "--limit", "10000"], env, root)

    def first_find() -> tuple[float, float, float]:
        shutil.rmtree(index, ignore_errors=True)
        return run([*gm, "find", "files", "zeppelin ticket"], env, root)

    if "grep" in groups:
        row("first grep, no index", first_grep, lambda: run(git_grep, env, root))  # starts no indexer
        row("first find, no index", first_find, lambda: run(git_grep, env, root), after=lambda: wait_for_index(root, env))
    if "rebuild" in groups:
        row("index rebuild", lambda: run([*gm, "index", "rebuild", "files"], env, root), None)
    for kind in ("durable", "session", "records") if "recall" in groups else ():
        recall_once(kind, root, env)  # the first process ever builds and saves the snapshot
        firsts, warms = [], []
        for _ in range(samples):
            f, w = recall_once(kind, root, env)
            firsts.append(f), warms.append(w)
        rows[f"{kind} first recall, new process"] = {"wall": med(firsts), "anchor": med(warms)}
    hot = "hot.md"
    reads = {
        "grep (index current)": ["grep", "files", "zeppelin", "--limit", "5"],
        "find": ["find", "files", "zeppelin ticket"],
        "log": ["log", "files", "--limit", "10"],
        "blame hot.md": ["blame", "files", hot],
        "show": ["show", "files", "main~1", hot],
        "diff": ["diff", "files", "main~1", "main"],
        "changes": ["changes", "files"],
        "records search": ["records", "search", "records", "office", "-n", "u1"],
        "session recall": ["session", "recall", "office", "--memory-dir", str(root / "session")],
        "durable recall": ["durable", "recall", "durable", "office", "-n", "bench", "agent", "repo"],
    }
    quick_ls = lambda: run([*gm, "ls", "files", "topic-000/sub-00"], env, root)  # noqa: E731
    if "read" in groups:  # one folder of 50 files: what the folder costs, against git listing it
        row("quick ls of one folder", quick_ls,
            lambda: run(["git", "--git-dir", str(files), "ls-tree", "-l", "main", "topic-000/sub-00/"], env, root))  # fmt: skip
    for name, args in reads.items() if "read" in groups else ():
        try:
            run([*gm, *args], env, root)
        except SystemExit:
            rows[f"cli {name}"] = {"wall": float("nan"), "anchor": float("nan")}
            continue
        if code is None:
            row(f"cli {name}", lambda a=args: run([*gm, *a], env, root), quick_ls)  # type: ignore[misc]
        else:  # against the same command of the other code, alternated
            row(f"cli {name} vs --code", lambda a=args: run([*gm, *a], env, root), lambda a=args: run([*gm, *a], other_env, root))  # type: ignore[misc]
    if "history" in groups:
        row("cli log vs git log", lambda: run([*gm, "log", "files", "--limit", "10"], env, root),
            lambda: run(["git", "--git-dir", str(files), "log", "-10", "--name-status", "main"], env, root))
        row("cli blame vs git blame", lambda: run([*gm, "blame", "files", hot], env, root),
            lambda: run(["git", "--git-dir", str(files), "blame", "main", "--", hot], env, root))
    if "prune" in groups:
        rows["session prune of N stale items"] = prune_row(root, n)
    if "forget" in groups:
        rows.update(forget_rows(files, samples, scratch))
    return rows


def filter_repo() -> list[str]:
    """The ``git-filter-repo`` command of this Python's environment, installed from PyPI when missing."""
    found = Path(sys.executable).with_name("git-filter-repo")
    if not found.exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "git-filter-repo"], check=True)
    return [str(found)]


def pack_bytes(repo: Path) -> int:
    """Bytes on disk of ``objects/pack`` (packs, indexes, bitmaps), and of loose objects if any."""
    return sum(f.stat().st_size for f in (repo / "objects").rglob("*") if f.is_file() and f.parent.name != "info")


def forget_rows(files: Path, samples: int, scratch: Path) -> dict[str, Row]:
    """``gitmem forget`` of ``hot.md`` against ``git filter-repo``, each on its own fresh copy per sample."""
    tool = filter_repo()
    gm = gitmem_cmd()
    plain_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    walls: dict[str, list[float]] = {"gitmem": [], "filter-repo": []}
    sizes: dict[str, list[float]] = {"gitmem": [], "filter-repo": []}
    rewritten = 0
    for i in range(samples):
        work = Path(tempfile.mkdtemp(prefix="forget-", dir=scratch))
        copies = {who: work / who / "files.git" for who in walls}
        for copy in copies.values():  # outside the timed region
            shutil.copytree(files, copy, symlinks=True)
        order = list(walls) if i % 2 == 0 else list(reversed(walls))
        for who in order:
            repo = copies[who]
            if who == "gitmem":
                argv, env, cwd = [*gm, "forget", "files", "hot.md", "--yes", "--json"], env_for(repo.parent), repo.parent
            else:
                argv, env, cwd = [*tool, "--force", "--quiet", "--invert-paths", "--path", "hot.md"], plain_env, repo
            start = time.perf_counter()
            done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
            walls[who].append((time.perf_counter() - start) * 1000)
            if done.returncode != 0:
                raise SystemExit(f"{who} failed: {done.stderr[-500:]}")
            if who == "gitmem":
                rewritten = json.loads(done.stdout)["commits_rewritten"]
            left = subprocess.run(["git", "--git-dir", str(repo), "log", "--all", "--format=%H", "--", "hot.md"],
                                  capture_output=True, text=True, check=True).stdout  # fmt: skip
            assert left == "", f"{who} left hot.md in history"
            sizes[who].append(pack_bytes(repo) / 1e6)
        shutil.rmtree(work)
    return {
        "forget hot.md vs git filter-repo": {"wall": med(walls["gitmem"]), "anchor": med(walls["filter-repo"]), "rewritten": rewritten},
        "pack after forget (MB) vs filter-repo's": {"wall": med(sizes["gitmem"]), "anchor": med(sizes["filter-repo"])},
    }


def prune_row(root: Path, n: int) -> Row:
    """Prune N stale items (one commit) against unlinking N files; one sample (prune is destructive)."""
    from gitmem.session.location import open_session_memory

    scratch = Path(tempfile.mkdtemp(prefix="prune-", dir=root))
    shutil.copytree(root / "prune", scratch / "prune")
    memory = open_session_memory(scratch / "prune", create=False)
    len(memory)  # the catalogue is read first, as a long-lived agent has it
    start = time.perf_counter()
    removed = len(memory.prune().removed)
    took = (time.perf_counter() - start) * 1000
    assert removed == n, (removed, n)
    plain = scratch / "plain"
    plain.mkdir()
    for i in range(n):
        (plain / f"{i}.json").write_text("{}")
    start = time.perf_counter()
    for i in range(n):
        os.unlink(plain / f"{i}.json")
    unlink = (time.perf_counter() - start) * 1000
    shutil.rmtree(scratch)
    return {"wall": took, "anchor": unlink}


def report(results: dict[int, dict[str, Row]]) -> None:
    sizes = sorted(results)
    names = list(results[sizes[0]])
    head = " | ".join(f"{s:,}: ms (anchor, ratio)" for s in sizes)
    print(f"| row | {head} | growth |")
    print("|---|" + "---|" * (len(sizes) + 1))
    for name in names:
        cells = []
        for s in sizes:
            r = results[s][name]
            digits = 1 if name.startswith("pack") else 0
            cell = f"{r['wall']:.{digits}f}"
            if r.get("anchor") == r.get("anchor"):  # not NaN
                cell += f" ({r['anchor']:.{digits}f}, {r['wall'] / r['anchor']:.2f}x)"
            if "rewritten" in r:
                cell += f"; {r['rewritten']:,.0f} commits rewritten"
            if "cpu" in r:
                cell += f" cpu {r['cpu']:.0f}"
            if "after" in r:
                cell += f"; index built after {r['after']:.1f} s"
            if name == "index rebuild":
                cell += f"; {r['rss']:.0f} MB RSS"
            cells.append(cell)
        growth = [f"{results[b][name]['wall'] / results[a][name]['wall']:.1f}x for {b // a}x" for a, b in itertools.pairwise(sizes)]
        print(f"| {name} | " + " | ".join(cells) + f" | {', '.join(growth)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--big", action="store_true", help="also 100k (built once under --cache, then reused)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "gitmem-bench-scale")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=ROWS, default=list(ROWS), help="which groups of rows to run (default: all)")
    parser.add_argument("--code", type=Path, help="read rows: against the same command run by another checkout's code (e.g. main), alternated")
    parser.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()),
                        help="where forget's copies are made (the file system it is measured on)")  # fmt: skip
    args = parser.parse_args()
    sizes = sorted(set(args.sizes + ([100_000] if args.big else [])))
    results: dict[int, dict[str, Row]] = {}
    for n in sizes:
        root = args.cache / f"n{n}"
        if not (root / ".built").exists():
            shutil.rmtree(root, ignore_errors=True)
            start = time.perf_counter()
            # In a child: a bench process grown by the build would pass its size on to every
            # child it starts (a forked child's peak RSS counts the pages it shares until exec).
            child = multiprocessing.get_context("spawn").Process(target=build, args=(root, n))
            child.start()
            child.join()
            if child.exitcode != 0:
                raise SystemExit(f"building {n:,} failed")
            print(f"built {n:,} in {time.perf_counter() - start:.0f} s at {root}", file=sys.stderr)
        results[n] = measure(root, n, args.samples, set(args.only), args.scratch, args.code)
        print(f"measured {n:,}", file=sys.stderr)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}")
    report(results)


if __name__ == "__main__":
    main()
