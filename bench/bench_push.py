"""What do gitmem's push checks cost over a push that nobody checks?

One run, every baseline measured in the same run, the two sides of each
pair pushed alternately so background load hits both alike:

- **file path**: ``git push /path/mount.git`` of a one-file commit into a mount with
  gitmem's hooks installed (pre-receive check; post-receive starts the index
  catch-up in a detached process) vs. the same push into a plain bare repository.
- **HTTP**: the same push through ``gitmem serve`` (token, quarantine, pushcheck,
  ref CAS under the writer lock) vs. dulwich's own smart-HTTP app with none of
  that, both behind the same waitress loop on 127.0.0.1.
- **HTTP fetch**: an incremental ``git fetch`` of one new commit from ``gitmem
  serve`` vs. from dulwich's own app (same waitress loop).
- **pushcheck alone**: :func:`gitmem.git.pushcheck.check_updates` on one commit that
  adds ``--files`` notes of ~500 B (the cost per pushed file).

``--code DIR`` measures the gitmem package found in ``DIR`` instead of this
checkout's (the hooks' processes get it through ``PYTHONPATH`` too), so two
versions can be compared on one machine in one sitting: export the other version
with ``git archive <rev> gitmem | tar -x -C DIR`` and alternate the runs.

Usage::

    .venv/bin/python bench/bench_push.py            # 15 rounds per pair, 1000 files
    .venv/bin/python bench/bench_push.py --rounds 5 --files 200   # quicker
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _code_dir() -> str:
    """``--code DIR`` if given (read before gitmem is imported), else this checkout."""
    if "--code" in sys.argv:
        return os.path.abspath(sys.argv[sys.argv.index("--code") + 1])
    return str(Path(__file__).resolve().parent.parent)


from gitenv import isolated_git_env  # noqa: E402 (this folder, before --code puts another checkout first)

CODE = _code_dir()
sys.path.insert(0, CODE)
os.environ["PYTHONPATH"] = CODE + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")

from dulwich.repo import Repo  # noqa: E402
from dulwich.server import DictBackend  # noqa: E402
from dulwich.web import make_wsgi_chain  # noqa: E402

from gitmem import Root  # noqa: E402
from gitmem.adapters.http_front import GitHttpServer  # noqa: E402
from gitmem.adapters.http_server import GitHttpApp  # noqa: E402
from gitmem.git.pushcheck import MAIN, RefUpdate, check_updates  # noqa: E402
from gitmem.hooks import install_hooks  # noqa: E402

TOKEN = "bench-token"
ENV = {
    **os.environ,
    **isolated_git_env(),
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(*args: str, cwd: Path | str | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True, timeout=120
    ).stdout.strip()


class Pusher:
    """A clone that commits one new file per round and pushes it to ``url``."""

    def __init__(self, url: str, work: Path) -> None:
        git("clone", "-q", url, str(work))
        self.work = work
        self.n = 0

    def push(self) -> float:
        self.n += 1
        (self.work / f"note-{self.n:04d}.md").write_text(f"note {self.n}: the user prefers short answers\n")
        git("add", "-A", cwd=self.work)
        git("commit", "-q", "-m", f"note {self.n}", cwd=self.work)
        start = time.perf_counter()
        git("push", "-q", "origin", "main", cwd=self.work)
        return time.perf_counter() - start


def alternate(rounds: int, a: Callable[[], float], b: Callable[[], float]) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for i in range(rounds):
        if i % 2:
            ys.append(b())
            xs.append(a())
        else:
            xs.append(a())
            ys.append(b())
    return xs, ys


def show(label: str, checked: list[float], plain: list[float]) -> None:
    c, p = statistics.median(checked) * 1000, statistics.median(plain) * 1000
    print(f"{label:<10} gitmem {c:7.1f} ms   unchecked {p:7.1f} ms   ratio {c / p:4.2f}x   (p50 of {len(checked)})")


def bench_file_path(tmp: Path, rounds: int) -> None:
    root = Root(tmp / "fp")
    store = root.mount("hooked", create=True)
    install_hooks(store.path)
    plain = tmp / "fp" / "plain.git"
    git("init", "-q", "--bare", "-b", "main", str(plain))
    seed = tmp / "seed"
    git("clone", "-q", store.path, str(seed))
    git("push", "-q", str(plain), "main", cwd=seed)
    a = Pusher(store.path, tmp / "w-hooked")
    b = Pusher(str(plain), tmp / "w-plain")
    show("file path", *alternate(rounds, a.push, b.push))


def bench_http(tmp: Path, rounds: int) -> None:
    root = Root(tmp / "http")
    store = root.mount("guarded", create=True)
    store.sync.write("seed.md", "seed\n", expected=None)
    plain_path = tmp / "http-plain.git"
    git("clone", "-q", "--bare", store.path, str(plain_path))
    plain_repo = Repo(str(plain_path))
    guarded = GitHttpServer(GitHttpApp(root, tokens=frozenset({TOKEN})), "127.0.0.1", 0).start()
    unchecked = GitHttpServer(make_wsgi_chain(DictBackend({"/plain.git": plain_repo})), "127.0.0.1", 0).start()
    try:
        a = Pusher(f"http://me:{TOKEN}@127.0.0.1:{guarded.port}/guarded.git", tmp / "w-guarded")
        b = Pusher(f"http://127.0.0.1:{unchecked.port}/plain.git", tmp / "w-unchecked")
        show("HTTP", *alternate(rounds, a.push, b.push))
    finally:
        guarded.stop()
        unchecked.stop()
        plain_repo.close()


def bench_fetch(tmp: Path, rounds: int) -> None:
    root = Root(tmp / "fetch")
    store = root.mount("served", create=True)
    store.sync.write("seed.md", "seed\n", expected=None)
    plain_path = tmp / "fetch-plain.git"
    git("clone", "-q", "--bare", store.path, str(plain_path))
    plain_repo = Repo(str(plain_path))
    guarded = GitHttpServer(GitHttpApp(root, tokens=frozenset({TOKEN})), "127.0.0.1", 0).start()
    unchecked = GitHttpServer(make_wsgi_chain(DictBackend({"/plain.git": plain_repo})), "127.0.0.1", 0).start()
    try:
        readers = {
            "gitmem": tmp / "r-gitmem",
            "plain": tmp / "r-plain",
        }
        git("clone", "-q", f"http://me:{TOKEN}@127.0.0.1:{guarded.port}/served.git", str(readers["gitmem"]))
        git("clone", "-q", f"http://127.0.0.1:{unchecked.port}/plain.git", str(readers["plain"]))
        n = 0

        def fetch(which: str) -> float:
            nonlocal n
            n += 1
            text = f"note {n}: the user prefers short answers\n"
            if which == "gitmem":
                store.sync.write(f"note-{n:04d}.md", text, expected=None)
            else:
                store_plain_commit(plain_path, n, text)
            start = time.perf_counter()
            git("fetch", "-q", "origin", cwd=readers[which])
            return time.perf_counter() - start

        show("HTTP fetch", *alternate(rounds, lambda: fetch("gitmem"), lambda: fetch("plain")))
    finally:
        guarded.stop()
        unchecked.stop()
        plain_repo.close()


def store_plain_commit(repo: Path, n: int, text: str) -> None:
    """One new commit on ``main`` of a bare repo, made with git plumbing (what the plain server serves)."""
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo,
        env=ENV,
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    head = git("rev-parse", "main", cwd=repo)
    base = git("ls-tree", "main", cwd=repo)
    listing = base + f"\n100644 blob {blob}\tnote-{n:04d}.md\n"
    tree = subprocess.run(
        ["git", "mktree"], cwd=repo, env=ENV, input=listing.lstrip("\n"), capture_output=True, text=True, check=True
    ).stdout.strip()
    commit = git("commit-tree", tree, "-p", head, "-m", f"note {n}", cwd=repo)
    git("update-ref", "refs/heads/main", commit, head, cwd=repo)


def bench_pushcheck(tmp: Path, files: int) -> None:
    root = Root(tmp / "pc")
    store = root.mount("m", create=True)
    work = tmp / "w-pc"
    git("clone", "-q", store.path, str(work))
    for i in range(files):
        folder = work / f"topic-{i % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"note-{i:05d}.md").write_text(
            f"---\ndescription: note {i}\n---\n" + f"line {i}: the user likes concise answers and tea.\n" * 9
        )
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "bulk", cwd=work)
    new = git("rev-parse", "HEAD", cwd=work)
    update = RefUpdate(MAIN, store.sync.head(), new)
    objects = str(work / ".git" / "objects")
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        verdict = check_updates(store.path, [update], store.format, object_dirs=[objects])
        samples.append(time.perf_counter() - start)
        assert verdict[MAIN] == [], verdict
    best = statistics.median(samples)
    print(f"pushcheck  {files} new files: {best * 1000:.1f} ms (p50 of 5), {best / files * 1e6:.0f} us per file")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--code", metavar="DIR", help="measure the gitmem package in DIR (default: this checkout)")
    args = parser.parse_args()
    print(f"code: {CODE}")
    with tempfile.TemporaryDirectory(prefix="gitmem-bench-push-") as tmp:
        bench_file_path(Path(tmp), args.rounds)
        bench_http(Path(tmp), args.rounds)
        bench_fetch(Path(tmp), args.rounds)
        bench_pushcheck(Path(tmp), args.files)


if __name__ == "__main__":
    main()
