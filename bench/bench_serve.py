"""Does a team's ``gitmem serve`` hold up: agents over MCP HTTP and people over git, at once?

One ``gitmem serve`` process on 127.0.0.1 (a free port), one memory, for
``--seconds`` (60 by default), then everything stops by itself:

- ``--mcp-clients`` agents (8), each its own MCP session with its own token, create
  distinct files flat out and every 5th call append one line to a shared file;
- ``--git-clients`` people (4) commit a distinct file and push it: half straight to
  ``main`` (fetch, rebase and retry when it moved, up to ``--tries``), half to
  ``refs/for/main`` (the server merges it);
- a ``git clone`` every ``--clone-every`` seconds (and the rest of the time the
  writes above move ``main`` under every fetch);
- in the 2nd and 4th quarters of the run, ``--stalled`` clients (4) each open a
  connection, send half a request and stop: those quarters' tool calls are
  compared with the 1st and 3rd quarters' as a ratio (the same-run baseline,
  alternated so the memory's growth weighs on both sides).

At the end every acknowledged write is looked up in ``main`` (a missing or
changed file, or a shared line missing or twice, is a lost write), the mount is
checked with ``git fsck --strict``, and HTTP 5xx answers are counted. Traffic goes
to 127.0.0.1 only.

Usage::

    .venv/bin/python bench/bench_serve.py                  # 60 s, 8 MCP + 4 git clients
    .venv/bin/python bench/bench_serve.py --seconds 20     # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.mcp_http_client import HttpMcpClient
from gitmem import Root
from gitmem.adapters.tokens import token_entry

GIT_ENV = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C"}
QUEUE = "HEAD:refs/for/main"


@dataclass
class Tally:
    calls: list[tuple[float, float]] = field(default_factory=list)  # (when, seconds)
    acked: dict[str, str] = field(default_factory=dict)  # path -> content
    shared: list[str] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


@dataclass
class Pushes:
    mode: str
    landed: int = 0
    gave_up: int = 0
    tries: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # per landed push, all its tries
    acked: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env={**GIT_ENV, **(env or {})}, capture_output=True, text=True, timeout=120
    )


def is_5xx(text: str) -> bool:
    return any(f"error: {code}" in text or f" {code} " in text for code in range(500, 512))


def agent(url: str, token: str, i: int, stop: threading.Event, tally: Tally) -> None:
    n = 0
    with HttpMcpClient(url, token) as client:
        assert client.session is not None
        while not stop.is_set():
            n += 1
            if n % 5 == 0:
                line = f"agent{i}-{n}"
                args = {"memory": "team", "path": "shared.md", "content": line}
                tool, path, content = "memory_file_append", None, line
            else:
                path, content = f"agents/a{i}/{n}.md", f"agent {i} note {n}\n"
                args = {"memory": "team", "path": path, "content": content}
                tool = "memory_file_create"
            start = time.perf_counter()
            try:
                result = client.run(client.session.call_tool(tool, args))
            except Exception as exc:  # a transport failure: what the bench is here to find
                tally.errors.append(f"{tool}: {type(exc).__name__}: {exc}")
                continue
            tally.calls.append((time.monotonic(), time.perf_counter() - start))
            if result.is_error:
                code = json.loads(result.content[0].text).get("error", "?")  # type: ignore[union-attr]
                tally.refused[code] = tally.refused.get(code, 0) + 1
            elif path is None:
                tally.shared.append(content)
            else:
                tally.acked[path] = content


def person(
    base: str, token: str, who: str, mode: str, tries: int, work: Path, stop: threading.Event, out: Pushes
) -> None:
    url = f"{base.replace('://', f'://{who}:{token}@', 1)}/team.git"
    done = git("clone", "-q", url, str(work))
    if done.returncode:
        out.errors.append(f"clone: {done.stderr.strip()}")
        return
    env = {
        "GIT_AUTHOR_NAME": who,
        "GIT_COMMITTER_NAME": who,
        "GIT_AUTHOR_EMAIL": f"{who}@x",
        "GIT_COMMITTER_EMAIL": f"{who}@x",
    }
    n = 0
    while not stop.is_set():
        n += 1
        path, content = f"people/{who}/{n}.md", f"{who}'s note {n}\n"
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(content)
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", f"{who} {n}", cwd=work, env=env)
        start = time.perf_counter()
        for attempt in range(1, tries + 1):
            pushed = git("push", "origin", "main" if mode == "direct" else QUEUE, cwd=work)
            if is_5xx(pushed.stderr):
                out.errors.append(f"push: {pushed.stderr.strip()[-300:]}")
            if pushed.returncode == 0:
                out.landed += 1
                out.tries.append(attempt)
                out.seconds.append(time.perf_counter() - start)
                out.acked[path] = content
                break
            git("pull", "-q", "--rebase", "origin", "main", cwd=work, env=env)
        else:
            out.gave_up += 1
            git("fetch", "-q", "origin", cwd=work)
            git("reset", "-q", "--hard", "origin/main", cwd=work)
        if mode == "queue":  # the merge is on the server: start the next commit from it
            git("pull", "-q", "--rebase", "origin", "main", cwd=work, env=env)


def cloner(base: str, token: str, every: float, tmp: Path, stop: threading.Event, result: dict[str, object]) -> None:
    url = f"{base.replace('://', f'://reader:{token}@', 1)}/team.git"
    n, failed, seconds = 0, [], []
    while not stop.wait(every):
        n += 1
        start = time.perf_counter()
        done = git("clone", "-q", url, str(tmp / f"clone{n}"))
        seconds.append(time.perf_counter() - start)
        if done.returncode:
            failed.append(done.stderr.strip()[-300:])
    result.update(clones=n, failed=failed, seconds=seconds)


def stall(port: int, count: int) -> list[socket.socket]:
    """Connections that send half a request and then nothing (closed when the bench ends)."""
    held = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        target = "/mcp" if i % 2 == 0 else "/team.git/git-upload-pack"
        s.sendall(f'POST {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{{"jsonrpc"'.encode())
        held.append(s)
    return held


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--mcp-clients", type=int, default=8)
    parser.add_argument("--git-clients", type=int, default=4)
    parser.add_argument("--clone-every", type=float, default=5.0)
    parser.add_argument("--stalled", type=int, default=4)
    parser.add_argument("--tries", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    root = Root(tmp / "root")
    store = root.mount("team", create=True).sync
    store.write("shared.md", "# shared\n", expected=None)
    tokens = {f"agent{i}": f"tok-agent{i}-{os.urandom(12).hex()}" for i in range(args.mcp_clients)}
    tokens |= {f"person{j}": f"tok-person{j}-{os.urandom(12).hex()}" for j in range(args.git_clients)}
    tokens["reader"] = f"tok-reader-{os.urandom(12).hex()}"
    entries = [token_entry(t, who, ["team"], "read" if who == "reader" else "write") for who, t in tokens.items()]
    (tmp / "tokens.toml").write_text("".join(entries))
    server = subprocess.Popen(
        [sys.executable, "-m", "gitmem.adapters.cli", "serve", "--root", str(root.path), "--port", "0",
         "--token-file", str(tmp / "tokens.toml"), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        ready, _, _ = select.select([server.stdout], [], [], 60)
        assert ready and server.stdout is not None, "gitmem serve did not start"
        info = json.loads(server.stdout.readline())
        base, port = info["url"], int(info["url"].rsplit(":", 1)[1])
        run(args, tmp, root, base, port, tokens)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()


def run(args: argparse.Namespace, tmp: Path, root: Root, base: str, port: int, tokens: dict[str, str]) -> None:
    stop = threading.Event()
    tally = Tally()
    pushes = [Pushes("direct" if j % 2 == 0 else "queue") for j in range(args.git_clients)]
    clones: dict[str, object] = {}
    threads = [
        threading.Thread(target=agent, args=(f"{base}/mcp", tokens[f"agent{i}"], i, stop, tally))
        for i in range(args.mcp_clients)
    ]
    threads += [
        threading.Thread(
            target=person,
            args=(base, tokens[f"person{j}"], f"person{j}", pushes[j].mode, args.tries, tmp / f"p{j}", stop, pushes[j]),
        )
        for j in range(args.git_clients)
    ]
    threads.append(threading.Thread(target=cloner, args=(base, tokens["reader"], args.clone_every, tmp, stop, clones)))
    start = time.monotonic()
    for t in threads:
        t.start()
    windows: list[tuple[float, float, bool]] = []  # quarters: plain, stalled, plain, stalled
    for quarter in range(4):
        stalled = quarter % 2 == 1
        held = stall(port, args.stalled) if stalled else []
        began = time.monotonic()
        time.sleep(args.seconds / 4)
        windows.append((began, time.monotonic(), stalled))
        for sock in held:
            sock.close()
    stop.set()
    for t in threads:
        t.join(timeout=180)
    elapsed = time.monotonic() - start
    report(args, root, tally, pushes, clones, windows, elapsed)


def report(
    args: argparse.Namespace, root: Root, tally: Tally, pushes: list[Pushes], clones: dict[str, object],
    windows: list[tuple[float, float, bool]], elapsed: float,
) -> None:  # fmt: skip
    store = root.mount("team").sync
    lost = [p for p, c in tally.acked.items() if _read(store, p) != c]
    for out in pushes:
        lost += [p for p, c in out.acked.items() if _read(store, p) != c]
    shared = (_read(store, "shared.md") or "").splitlines()
    lost += [line for line in tally.shared if shared.count(line) != 1]
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=root.mount_path("team"), capture_output=True, text=True)

    def during(stalled: bool) -> list[float]:
        return [s for when, s in tally.calls for a, b, w in windows if w == stalled and a <= when < b]

    before, after = during(False), during(True)
    print(f"gitmem serve under load: {elapsed:.0f} s, {args.mcp_clients} MCP HTTP clients, "
          f"{args.git_clients} git clients, a clone every {args.clone_every:g} s, "
          f"{args.stalled} stalled connections in the 2nd and 4th quarters; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print()
    print("| what | count | p50 ms | p95 ms |")
    print("|---|---|---|---|")
    every = [s for _, s in tally.calls]
    print(f"| MCP tool calls | {len(every)} | {pct(every, 0.5) * 1e3:.1f} | {pct(every, 0.95) * 1e3:.1f} |")
    print(
        f"| ... 1st and 3rd quarters (no stalled clients) | {len(before)} | {pct(before, 0.5) * 1e3:.1f} | {pct(before, 0.95) * 1e3:.1f} |"
    )
    print(
        f"| ... 2nd and 4th quarters (stalled clients) | {len(after)} | {pct(after, 0.5) * 1e3:.1f} | {pct(after, 0.95) * 1e3:.1f} |"
    )
    for mode in ("direct", "queue"):
        group = [p for p in pushes if p.mode == mode]
        secs = [s for p in group for s in p.seconds]
        tries = [t for p in group for t in p.tries]
        landed, gave_up = sum(p.landed for p in group), sum(p.gave_up for p in group)
        first = sum(1 for t in tries if t == 1)
        print(f"| pushes to {'main' if mode == 'direct' else 'refs/for/main'}: landed (first try) / gave up after "
              f"{args.tries} | {landed} ({first}) / {gave_up} | {pct(secs, .5) * 1e3:.0f} | {pct(secs, .95) * 1e3:.0f} |")  # fmt: skip
    seconds = clones.get("seconds", [])
    assert isinstance(seconds, list)
    failed = clones.get("failed", [])
    assert isinstance(failed, list)
    print(f"| clones (failed) | {clones.get('clones', 0)} ({len(failed)}) | {pct(seconds, .5) * 1e3:.0f} | "
          f"{pct(seconds, .95) * 1e3:.0f} |")  # fmt: skip
    print()
    ratio50 = pct(after, 0.5) / pct(before, 0.5) if before and after else float("nan")
    ratio95 = pct(after, 0.95) / pct(before, 0.95) if before and after else float("nan")
    print(f"stalled / baseline tool-call latency: p50 {ratio50:.2f}x, p95 {ratio95:.2f}x")
    errors = tally.errors + [e for p in pushes for e in p.errors] + [str(f) for f in failed]
    fivexx = [e for e in errors if is_5xx(e) or "500" in e]
    print(f"acknowledged writes: {len(tally.acked) + len(tally.shared)} MCP, {sum(len(p.acked) for p in pushes)} pushed; "
          f"lost or overwritten: {len(lost)}; HTTP 5xx: {len(fivexx)}; other errors: {len(errors) - len(fivexx)}; "
          f"refusals by code: {tally.refused or 'none'}; fsck --strict: {'clean' if fsck.returncode == 0 else 'FAILED'}")  # fmt: skip
    for line in lost[:5] + errors[:5]:
        print(f"  {line}")


def _read(store: object, path: str) -> str | None:
    try:
        return store.read(path).text  # type: ignore[attr-defined, no-any-return]
    except Exception:
        return None


if __name__ == "__main__":
    main()
