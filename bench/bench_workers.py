"""Does ``gitmem serve`` scale with worker processes? 8 writing MCP clients, 1 worker against 2.

For each file system (``--dirs``: a temporary folder on the root file system and
``/mnt/ext4/workers`` by default) and each of ``--rounds`` rounds, a ``gitmem
serve --workers 1`` and a ``--workers 2`` run in turn (alternated, so the
machine's other load weighs on both), each on a fresh memory for ``--seconds``:
``--clients`` agents (8) each open an MCP session (``initialize``,
``notifications/initialized``) on a keep-alive connection and call
``memory_file_create`` on distinct files flat out. With ``--memories N`` the
clients write to N memories (client i to the (i mod N)th) instead of one: the
writes of one memory take its writer lock in turn, so one memory measures the
commit's critical section, several measure the server; ``--memories 1 8`` runs
both in each round, alternated, so their rates are compared under the same load.

The clients speak MCP's streamable HTTP (JSON responses) with ``http.client``,
one thread each, not the ``mcp`` SDK client: on two cores the SDK client's own
CPU per call is close to the server's, so it would measure the clients. Their
CPU is measured anyway (``client ms/call``), as is the server's (all its
processes' user+system time from ``/proc``, per acknowledged write), so the
table says where the cores went.

Afterwards every acknowledged write is looked up in ``main`` (a missing or
changed file is lost), HTTP 5xx answers are counted, and ``git fsck --strict``
runs on the memory. Traffic goes to 127.0.0.1 only.

Usage::

    .venv/bin/python bench/bench_workers.py                       # 20 s runs, 2 rounds, root and ext4
    .venv/bin/python bench/bench_workers.py --seconds 10 --rounds 1 --dirs /tmp
    .venv/bin/python bench/bench_workers.py --memories 8          # each agent its own memory
    .venv/bin/python bench/bench_workers.py --memories 1 8        # one memory and eight, alternated
    .venv/bin/python bench/bench_workers.py --variant group alone # group commit on and off, alternated

``--variant alone`` runs the server with ``GITMEM_GROUP_COMMIT=0``: each write
commits alone instead of in a group with the writes waiting behind it in the
same process (see :mod:`gitmem.git.engine`). ``--before SRC`` adds the variant
``before``: the server importing gitmem from another source tree (``git archive REV |
tar -x -C SRC``), so two builds run in the same rounds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitmem import Root
from gitmem.adapters.tokens import token_entry

CLK = os.sysconf("SC_CLK_TCK")
VARIANTS = {
    "group": {},  # the server as it ships
    "alone": {"GITMEM_GROUP_COMMIT": "0"},  # each write commits alone, not in its process's group
}


@dataclass
class Run:
    workers: int
    place: str
    variant: str = "group"
    memories: int = 1
    calls: int = 0
    measured: int = 0  # writes acknowledged within the measured seconds
    acked: dict[tuple[str, str], str] = field(default_factory=dict)  # (memory, path) -> content
    fivexx: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    server_cpu: float = 0.0
    client_cpu: float = 0.0
    lost: int = 0
    fsck: bool = False
    spread: list[int] = field(default_factory=list)  # connections held by each worker


class Client:
    """One MCP session over one keep-alive connection (JSON responses)."""

    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream"}  # fmt: skip
        self.next_id = 0
        status, headers, _ = self.post({"method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})  # fmt: skip
        assert status == 200, status
        self.headers["Mcp-Session-Id"] = headers["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = "2025-06-18"
        status, _, _ = self.post({"method": "notifications/initialized"}, notify=True)
        assert status == 202, status

    def post(self, message: dict[str, object], notify: bool = False) -> tuple[int, dict[str, str], bytes]:
        if not notify:
            self.next_id += 1
            message = {**message, "id": self.next_id}
        self.conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", **message}), self.headers)
        answer = self.conn.getresponse()
        body = answer.read()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body

    def create(self, memory: str, path: str, content: str) -> tuple[int, bytes]:
        args = {"memory": memory, "path": path, "content": content}
        status, _, body = self.post(
            {"method": "tools/call", "params": {"name": "memory_file_create", "arguments": args}}
        )
        return status, body


def agent(port: int, token: str, memory: str, i: int, stop: threading.Event, run: Run, lock: threading.Lock) -> None:
    client = Client(port, token)
    n = 0
    while not stop.is_set():
        n += 1
        path, content = f"agents/a{i}/{n}.md", f"agent {i} note {n}\n"
        try:
            status, body = client.create(memory, path, content)
        except (OSError, http.client.HTTPException) as exc:
            run.errors.append(f"{type(exc).__name__}: {exc}")
            return
        with lock:
            run.calls += 1
            if status >= 500:
                run.fivexx += 1
            elif status == 200 and b'"isError":true' not in body.replace(b" ", b""):
                run.acked[(memory, path)] = content
            else:
                run.errors.append(f"{status}: {body[:200]!r}")


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLK


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def connections_per_worker(port: int, workers: list[int]) -> list[int]:
    """How many of the clients' connections each worker holds (from ``ss``)."""
    done = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return [done.stdout.count(f"pid={pid},") for pid in workers]


def one_run(
    root: Root, tokens: Path, memory: str, workers: int, args: argparse.Namespace, place: str, variant: str = "group",
    count: int = 1,
) -> Run:
    run = Run(workers, place, variant, count)
    memories = [memory] if count == 1 else [f"{memory}m{j}" for j in range(count)]
    for name in memories:
        root.mount(name, create=True).sync.write("seed.md", "seed\n", expected=None)
    server = subprocess.Popen(
        [sys.executable, "-m", "gitmem.adapters.cli", "serve", "--root", str(root.path), "--port", "0",
         "--token-file", str(tokens), "--workers", str(workers), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **VARIANTS[variant]},
        cwd=VARIANTS[variant].get("PYTHONPATH"),  # -m puts the working folder first on the path
    )  # fmt: skip
    try:
        ready, _, _ = select.select([server.stdout], [], [], 120)
        assert ready and server.stdout is not None, "gitmem serve did not start"
        port = int(json.loads(server.stdout.readline())["url"].rsplit(":", 1)[1])
        deadline = time.monotonic() + 60
        while len(children(server.pid)) < workers:
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.05)
        pids = [server.pid, *children(server.pid)]
        stop, lock = threading.Event(), threading.Lock()
        threads = [
            threading.Thread(target=agent, args=(port, f"tok-agent{i}-workers-bench-0123456789", memories[i % len(memories)], i, stop, run, lock))
            for i in range(args.clients)
        ]  # fmt: skip
        for t in threads:
            t.start()
        time.sleep(1.0)  # every session open and warm
        with lock:
            calls0, acked0 = run.calls, len(run.acked)
        cpu0, client0, began = cpu_seconds(pids), time.process_time(), time.monotonic()
        time.sleep(args.seconds)
        with lock:
            calls1, acked1 = run.calls, len(run.acked)
        run.seconds = time.monotonic() - began
        run.server_cpu = cpu_seconds(pids) - cpu0
        run.client_cpu = time.process_time() - client0
        run.spread = connections_per_worker(port, pids[1:])
        run.measured = acked1 - acked0
        assert calls1 - calls0 >= run.measured
        stop.set()
        for t in threads:
            t.join(120)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()
    stores = {name: root.mount(name).sync for name in memories}
    run.lost = sum(1 for (name, path), content in run.acked.items() if _read(stores[name], path) != content)
    run.fsck = all(
        subprocess.run(["git", "fsck", "--strict"], cwd=root.mount_path(name), capture_output=True).returncode == 0
        for name in memories
    )
    return run


def _read(store: object, path: str) -> str | None:
    try:
        return store.read(path).text  # type: ignore[attr-defined, no-any-return]
    except Exception:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", choices=[1, 2], default=[1, 2],
                        help="worker counts run in each round (both for the 2 / 1 ratio)")  # fmt: skip
    parser.add_argument("--memories", type=int, nargs="+", default=[1],
                        help="memories the clients write to, client i to the (i mod N)th; several counts are alternated "
                             "within each round")  # fmt: skip
    parser.add_argument("--dirs", nargs="+", default=[tempfile.gettempdir(), "/mnt/ext4/workers"])
    parser.add_argument("--before", metavar="SRC", help="also run the server from another source tree (variant 'before')")
    parser.add_argument("--variant", nargs="+", choices=[*sorted(VARIANTS), "before"], default=["group"],
                        help="the server as it ships (group) and/or with one mechanism the old way, alternated "
                             "within each round (see VARIANTS)")  # fmt: skip
    args = parser.parse_args()
    if args.before:
        VARIANTS["before"] = {"PYTHONPATH": os.path.abspath(args.before)}
        args.variant = [*args.variant, "before"] if "before" not in args.variant else args.variant
    runs: list[Run] = []
    load = [os.getloadavg()[0]]
    for place in args.dirs:
        Path(place).mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="bench-workers-", dir=place))
        try:
            root = Root(tmp / "root")
            tokens = tmp / "tokens.toml"
            tokens.write_text("".join(
                token_entry(f"tok-agent{i}-workers-bench-0123456789", f"agent{i}", ["team*"], "write")
                for i in range(args.clients)))  # fmt: skip
            n = 0
            for _ in range(args.rounds):
                for variant, count, workers in [
                    (v, c, w) for v in args.variant for c in args.memories for w in args.workers
                ]:
                    n += 1
                    runs.append(one_run(root, tokens, f"team{n}", workers, args, place, variant, count))
                    load.append(os.getloadavg()[0])
                    r = runs[-1]
                    print(f"  {place} {variant} memories={count} workers={workers}: {r.measured / r.seconds:.0f} writes/s, "
                          f"connections per worker {r.spread}", file=sys.stderr)  # fmt: skip
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    report(runs, args, load)


def report(runs: list[Run], args: argparse.Namespace, load: list[float]) -> None:
    print(f"{args.clients} MCP clients writing distinct files to {' or '.join(map(str, args.memories))} memories, {args.seconds:g} s per run, {args.rounds} rounds "
          f"alternating 1 and 2 workers; load average {min(load):.1f}-{max(load):.1f} (1 min) during the runs, "
          f"{os.cpu_count()} cores")  # fmt: skip
    print()
    print("| file system | variant | memories | workers | writes/s (each round) | server cores used | server CPU ms/write | "
          "client CPU ms/write | connections per worker | lost | 5xx | fsck |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    groups = [(p, v, c) for p in args.dirs for v in args.variant for c in args.memories]
    for place, variant, count in groups:
        for workers in args.workers:
            mine = [r for r in runs if (r.place, r.workers, r.variant, r.memories) == (place, workers, variant, count)]
            rates = [r.measured / r.seconds for r in mine]
            writes = sum(r.measured for r in mine) or 1
            cores = sum(r.server_cpu for r in mine) / sum(r.seconds for r in mine)
            print(f"| {place} | {variant} | {count} | {workers} | {sum(rates) / len(rates):.0f} ({', '.join(f'{x:.0f}' for x in rates)}) | "
                  f"{cores:.2f} | "
                  f"{sum(r.server_cpu for r in mine) / writes * 1e3:.2f} | "
                  f"{sum(r.client_cpu for r in mine) / writes * 1e3:.2f} | "
                  f"{'; '.join('/'.join(map(str, r.spread)) for r in mine)} | {sum(r.lost for r in mine)} | "
                  f"{sum(r.fivexx for r in mine)} | {'clean' if all(r.fsck for r in mine) else 'FAILED'} |")  # fmt: skip
    print()
    for place, variant, count in groups:
        rates = {w: [r.measured / r.seconds for r in runs if (r.place, r.workers, r.variant, r.memories) == (place, w, variant, count)]
                 for w in (1, 2)}  # fmt: skip
        one, two = rates[1], rates[2]
        if not one or not two:
            continue
        pairs = ", ".join(f"{b / a:.2f}x" for a, b in zip(one, two, strict=True))
        print(f"{place} {variant} {count} memories: 2 workers / 1 worker: {sum(two) / sum(one):.2f}x (per round {pairs})")
    first, *others = args.variant
    for other in others:
        for place in args.dirs:
            for workers in args.workers:
                rate = {v: sum(r.measured / r.seconds for r in runs if (r.place, r.workers, r.variant) == (place, workers, v) and r.memories == args.memories[0])
                        for v in (first, other)}  # fmt: skip
                ratio = rate[first] / max(rate[other], 1e-9)
                print(f"{place} {workers} worker(s): {first} / {other} writes/s {ratio:.2f}x")
    errors = [e for r in runs for e in r.errors]
    if errors:
        print(f"errors: {len(errors)}; first: {errors[:3]}")


if __name__ == "__main__":
    main()
