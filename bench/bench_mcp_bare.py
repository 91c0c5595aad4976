"""Per MCP tool call over HTTP: ``gitmem serve`` against a bare MCP SDK server on plain files.

The baseline is the ``mcp`` SDK's own ``MCPServer`` over streamable HTTP (uvicorn,
JSON responses, sessions), with two tools on plain files in a folder: ``view``
(the file's text and size) and ``write`` (the file written in place). Against it,
``gitmem serve`` on one file memory: ``memory_file_view`` and ``memory_file_create``
(each write a commit). Both are separate processes on 127.0.0.1, driven by the
same client (the official ``mcp`` client, one session per simulated agent,
``bench/mcp_http_client.py``) with 1 and 8 clients at once, each writing and then
reading its own distinct files. Rounds alternate the servers (ABBA order), so
background load weighs on every side alike; each tool call is timed at the client.

Extra gitmem variants run in the same rounds to show what a mechanism buys: each is
``gitmem serve`` with that one mechanism put back the old way by the bench (nothing
in gitmem reads a switch): ``fold-inline`` folds packs inside the write's request,
``fold-no-pause`` lets a fold keep the interpreter between its packs, ``sdk-path``
sends every tool call through the SDK's transport, ``watch-details`` has the change
watcher diff trees and walk commits at every move, ``round-robin``
lets waitress wake the worker that has been idle longest, ``lock-poll`` lets every
writer thread poll the writer lock (no line in the process), ``watch-always`` runs
the change watcher from the first event stream, subscribed or not. ``--before SRC``
adds ``gitmem serve`` importing gitmem from another source tree (``git archive
main | tar -x -C SRC``): before and after in the same rounds. Ratios are against the
bare server (and each variant against plain gitmem); the server's CPU per call
(all its threads, from ``/proc``) is the steadier figure on a shared machine.

Usage::

    .venv/bin/python bench/bench_mcp_bare.py                               # root file system
    .venv/bin/python bench/bench_mcp_bare.py --dir /mnt/ext4/x             # journaling ext4
    .venv/bin/python bench/bench_mcp_bare.py --rounds 4 --calls 10         # quick
    .venv/bin/python bench/bench_mcp_bare.py --variant fold-inline         # with the fold A/B
    .venv/bin/python bench/bench_mcp_bare.py --before /tmp/main-src        # and gitmem as exported from main
    .venv/bin/python bench/bench_mcp_bare.py --variant sdk-path --variant watch-details --variant round-robin \
        --variant lock-poll
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitmem.git.packwrite import pack_count

NOTE = "A note an agent keeps: the build uses ruff and mypy strict; run tests under nice on two cores.\n" * 2
VARIANTS: dict[str, str] = {
    "fold-inline": "folds in the write's request (as before)",
    "fold-no-pause": "the fold keeps the interpreter between its packs (as before)",
    "sdk-path": "every tool call through the SDK's transport (as before)",
    "watch-details": "the change watcher diffs trees and walks commits per move (as before)",
    "round-robin": "waitress wakes the worker idle longest (as before)",
    "lock-poll": "every waiting writer thread polls the flock, then waits in a thread of its own (as before)",
    "watch-always": "the change watcher runs from the first event stream, subscribed or not (as before)",
}


# --- the servers ------------------------------------------------------------------------


def bare_server(folder: str, port: int, durable: bool = False) -> None:
    """The baseline: the SDK's MCPServer, ``view`` and ``write`` on plain files under ``folder``."""
    from mcp.server.mcpserver import MCPServer

    base = Path(folder)
    server = MCPServer("bare-files", log_level="WARNING")

    @server.tool()
    def view(path: str) -> dict[str, object]:
        """A file's text and size."""
        text = (base / path).read_text(encoding="utf-8")
        return {"path": path, "size": len(text.encode()), "content": text}

    @server.tool()
    def write(path: str, content: str) -> dict[str, object]:
        """Write a file (made with its folders when new)."""
        target = base / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8") as out:
            out.write(content)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        if durable:
            folder = os.open(target.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        return {"path": path, "status": "written"}

    server.run("streamable-http", host="127.0.0.1", port=port, json_response=True)


def variant_server(name: str, argv: list[str]) -> None:
    """``gitmem serve`` with one mechanism put back the old way, in this process."""
    if name == "fold-no-pause":
        from gitmem.git import packfold

        packfold.pause = lambda: None
    elif name == "fold-inline":
        from gitmem.git import engine

        engine.fold_elsewhere = lambda later: None  # serve's hand-over does nothing: folds stay in the write
    elif name == "sdk-path":
        from gitmem.adapters import mcp_fastcall

        mcp_fastcall.tool_call = lambda *args: None
    elif name == "watch-details":
        from gitmem.adapters import mcp_stream

        class Detailed(mcp_stream.Watcher):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **{**kwargs, "details": True})

        mcp_stream.Watcher = Detailed  # type: ignore[misc]
    elif name == "round-robin":
        from waitress.task import ThreadedTaskDispatcher

        from gitmem.adapters import http_front

        http_front._warm_first_dispatcher = ThreadedTaskDispatcher
    elif name == "watch-always":
        from gitmem.adapters import mcp_http

        mcp_http.McpHttpApp._watch_for = lambda self, session, catch_up=False: self._changes.start()  # type: ignore[method-assign]
    elif name == "lock-poll":
        from gitmem.git import locks

        locks._line = lambda path: locks._Line()  # a line of one per taking: no thread waits in one
    else:
        raise SystemExit(f"unknown variant {name!r}; the variants are {', '.join(VARIANTS)}")
    from gitmem.adapters.cli import main

    sys.argv = ["gitmem", *argv]
    main()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Side:
    name: str
    url: str
    tokens: list[str]
    view: Callable[[int, int, int], tuple[str, dict[str, object]]]
    write: Callable[[int, int, int], tuple[str, dict[str, object]]]
    reads: dict[int, list[float]] = field(default_factory=dict)  # by client count
    writes: dict[int, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    pid: int = 0
    cpu: dict[tuple[int, str], list[float]] = field(default_factory=dict)  # server CPU s per call, per block
    mount: str = ""  # gitmem's memory, whose live packs are counted after each write phase
    most_packs: int = 0


def _file_path(clients: int, client: int, n: int) -> str:
    return f"c{clients}/a{client}/n{n}.md"


def bare_side(url: str, clients: int) -> Side:
    def view(c: int, i: int, n: int) -> tuple[str, dict[str, object]]:
        return "view", {"path": _file_path(c, i, n)}

    def write(c: int, i: int, n: int) -> tuple[str, dict[str, object]]:
        return "write", {"path": _file_path(c, i, n), "content": NOTE}

    return Side("bare", url, ["none"] * clients, view, write)


def gitmem_side(name: str, url: str, tokens: list[str]) -> Side:
    def view(c: int, i: int, n: int) -> tuple[str, dict[str, object]]:
        return "memory_file_view", {"memory": "team", "path": _file_path(c, i, n)}

    def write(c: int, i: int, n: int) -> tuple[str, dict[str, object]]:
        return "memory_file_create", {"memory": "team", "path": _file_path(c, i, n), "content": NOTE}

    return Side(name, url, tokens, view, write)


def start(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def wait_port(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the bare server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the bare server did not start")


def gitmem_url(proc: subprocess.Popen[str]) -> str:
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready and proc.stdout is not None, "gitmem serve did not start"
    return str(json.loads(proc.stdout.readline())["url"]) + "/mcp"


# --- the load ---------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """CPU time process ``pid`` and its child processes have run so far, over all their threads (Linux ``schedstat``).

    ``gitmem serve`` forks its worker processes (``--workers``, default: the cores)
    under a supervisor that serves nothing: the workers' CPU is the server's.
    """
    total = 0
    pids = [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pids += [int(child) for child in f.read().split()]
    except OSError:
        pass
    for one in pids:
        try:
            tasks = os.listdir(f"/proc/{one}/task")
        except OSError:  # a worker that ended meanwhile
            continue
        for task in tasks:
            try:
                with open(f"/proc/{one}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
                pass
    return total / 1e9


def run_block(side: Side, clients: list[object], count: int, first: int, calls: int) -> None:
    """Each client writes ``calls`` distinct files; once all are done each reads its files back; every call timed.

    The server's CPU time over each phase, per call, goes into ``side.cpu``.
    """
    for kind in ("write", "view"):
        barrier = threading.Barrier(len(clients))
        spent = (side.writes if kind == "write" else side.reads).setdefault(count, [])

        def one(
            i: int, client: object, kind: str = kind, spent: list[float] = spent, barrier: threading.Barrier = barrier
        ) -> None:
            barrier.wait()
            for n in range(first, first + calls):
                tool, args = (side.write if kind == "write" else side.view)(count, i, n)
                began = time.perf_counter()
                try:
                    result = client.call(tool, **args)  # type: ignore[attr-defined]
                except Exception as exc:
                    side.failures.append(f"{tool}: {type(exc).__name__}: {exc}")
                    continue
                took = time.perf_counter() - began
                if result.is_error:
                    side.failures.append(f"{tool}: {result.content[0].text[:200]}")
                    continue
                spent.append(took)

        threads = [threading.Thread(target=one, args=(i, c)) for i, c in enumerate(clients)]
        cpu = cpu_seconds(side.pid)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        side.cpu.setdefault((count, kind), []).append((cpu_seconds(side.pid) - cpu) / (calls * len(clients)))
        if side.mount:
            side.most_packs = max(side.most_packs, pack_count(side.mount))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=None, help="where the memory and the bare folder go (default: a temp dir)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=8, help="blocks per server and client count (ABBA order)")
    parser.add_argument("--calls", type=int, default=25, help="writes (then reads) per client per block")
    parser.add_argument("--variant", action="append", default=[], choices=sorted(VARIANTS))
    parser.add_argument(
        "--before",
        metavar="SRC",
        help="also serve gitmem from another source tree (e.g. an export of main), side 'before'",
    )
    parser.add_argument(
        "--durable", action="store_true", help="fsync every write: gitmem.durable, fsync on the bare side"
    )
    parser.add_argument("--bare-server", nargs=3, metavar=("FOLDER", "PORT", "DURABLE"), help=argparse.SUPPRESS)
    parser.add_argument("--variant-server", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server:
        bare_server(args.bare_server[0], int(args.bare_server[1]), args.bare_server[2] == "1")
        return
    if args.variant_server:
        variant_server(args.variant_server[0], args.variant_server[1:])
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-bare-", dir=args.dir))
    procs: list[subprocess.Popen[str]] = []
    try:
        run(args, tmp, procs)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, tmp: Path, procs: list[subprocess.Popen[str]]) -> None:
    from bench.mcp_http_client import HttpMcpClient
    from gitmem import Root
    from gitmem.adapters.tokens import token_entry

    most = max(args.clients)
    port = free_port()
    (tmp / "bare").mkdir()
    bare = [sys.executable, __file__, "--bare-server", str(tmp / "bare"), str(port), "1" if args.durable else "0"]
    procs.append(start(bare))
    wait_port(port, procs[-1])
    sides = [bare_side(f"http://127.0.0.1:{port}/mcp", most)]
    sides[0].pid = procs[-1].pid
    for name in ["gitmem", *(["before"] if args.before else []), *args.variant]:
        root = Root(tmp / f"root-{name}")
        made = root.mount("team", create=True)
        if args.durable:
            made.sync.repo.set_durable(True)
        tokens = [f"tok-{name}-{i}-{os.urandom(12).hex()}" for i in range(most)]
        entries = [token_entry(t, f"agent{i}", ["team"], "write") for i, t in enumerate(tokens)]
        (tmp / f"tokens-{name}.toml").write_text("".join(entries))
        serve = ["serve", "--root", str(root.path), "--port", "0", "--token-file", str(tmp / f"tokens-{name}.toml"),
                 "--json"]  # fmt: skip
        cmd = [sys.executable, "-m", "gitmem.adapters.cli", *serve]
        env, cwd = None, None
        if name == "before":  # the same command, importing gitmem from the other tree (-m puts the cwd first)
            cwd = os.path.abspath(args.before)
            env = {**os.environ, "PYTHONPATH": cwd}
        elif name != "gitmem":
            cmd = [sys.executable, __file__, "--variant-server", name, *serve]
        procs.append(start(cmd, env, cwd))
        sides.append(gitmem_side(name, gitmem_url(procs[-1]), tokens))
        sides[-1].pid = procs[-1].pid
        sides[-1].mount = str(root.path / "team.git")
    load = [os.getloadavg()[0]]
    began = time.monotonic()
    for count in args.clients:
        opened = {s.name: [HttpMcpClient(s.url, s.tokens[i]).__enter__() for i in range(count)] for s in sides}
        try:
            for side in sides:  # one warm-up block each (not counted): sessions, first handles
                run_block(side, opened[side.name], -count, 10_000, 2)
                side.reads.pop(-count, None)
                side.writes.pop(-count, None)
                side.cpu.pop((-count, "write"), None)
                side.cpu.pop((-count, "view"), None)
            for r in range(args.rounds):
                order = sides if r % 2 == 0 else sides[::-1]
                for side in order:
                    run_block(side, opened[side.name], count, r * args.calls, args.calls)
                load.append(os.getloadavg()[0])
        finally:
            for clients in opened.values():
                for client in clients:
                    client.__exit__(None, None, None)
    report(args, sides, load, time.monotonic() - began, tmp)


def report(args: argparse.Namespace, sides: list[Side], load: list[float], seconds: float, tmp: Path) -> None:
    fs = subprocess.run(["df", "--output=fstype", str(tmp)], capture_output=True, text=True).stdout.split()[-1]
    print(f"MCP tool calls over HTTP, {tmp.parent} ({fs}{', durable' if args.durable else ''}), {args.rounds} rounds x {args.calls} writes and reads "
          f"per client, {seconds:.0f} s; load average {min(load):.1f}-{max(load):.1f}")  # fmt: skip
    print()
    bare = sides[0]
    print("| server | clients | op | calls | p50 ms | p95 ms | p50 / bare | p95 / bare | server CPU ms per call |")
    print("|---|---|---|---|---|---|---|---|---|")
    for count in args.clients:
        for op in ("view", "write"):
            for side in sides:
                values = (side.reads if op == "view" else side.writes).get(count, [])
                base = (bare.reads if op == "view" else bare.writes).get(count, [])
                r50 = pct(values, 0.5) / pct(base, 0.5)
                r95 = pct(values, 0.95) / pct(base, 0.95)
                ratios = "" if side is bare else f"**{r50:.2f}x** | **{r95:.2f}x**"
                cpu = pct(side.cpu.get((count, op), []), 0.5) * 1e3
                print(f"| {side.name} | {count} | {op} | {len(values)} | {pct(values, .5) * 1e3:.2f} | "
                      f"{pct(values, .95) * 1e3:.2f} | {ratios or ' | '} | {cpu:.2f} |")  # fmt: skip
    if len(sides) > 2:
        print()
        print("| variant (the old way) | clients | op | p50 / gitmem | p95 / gitmem | server CPU / gitmem |")
        print("|---|---|---|---|---|---|")
    for side in sides[2:]:
        for count in args.clients:
            for op in ("view", "write"):
                mine = (side.reads if op == "view" else side.writes).get(count, [])
                theirs = (sides[1].reads if op == "view" else sides[1].writes).get(count, [])
                cpu = pct(side.cpu.get((count, op), []), 0.5) / pct(sides[1].cpu.get((count, op), []), 0.5)
                what = VARIANTS.get(side.name, f"gitmem from {args.before}")
                print(f"| {side.name}: {what} | {count} | {op} | {pct(mine, .5) / pct(theirs, .5):.2f}x | "
                      f"{pct(mine, .95) / pct(theirs, .95):.2f}x | {cpu:.2f}x |")  # fmt: skip
    for side in sides:
        if side.failures:
            print(f"{side.name}: {len(side.failures)} failed calls, e.g. {side.failures[:3]}")
    for side in sides[1:]:
        fsck = subprocess.run(["git", "fsck", "--strict"], cwd=tmp / f"root-{side.name}" / "team.git",
                              capture_output=True, text=True)  # fmt: skip
        mount = tmp / f"root-{side.name}" / "team.git"
        packs = len(list((mount / "objects" / "pack").glob("*.idx")))
        print(f"{side.name}: fsck --strict {'clean' if fsck.returncode == 0 else 'FAILED: ' + fsck.stderr[:300]}; "
              f"live packs at the end {pack_count(str(mount))} (index files {packs}), "
              f"most live packs seen {side.most_packs}")  # fmt: skip


if __name__ == "__main__":
    main()
