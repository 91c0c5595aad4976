"""How soon is a remote agent told that a memory moved? Write on one MCP client, event on others.

One ``gitmem serve`` process on 127.0.0.1 (a free port) and one memory.
``--listeners`` agents (official ``mcp`` client, streamable HTTP: each opens the
GET event stream after the handshake) subscribe to ``memory://team/context``; one
more agent then makes ``--writes`` tool calls (``memory_file_create`` of a
distinct file), one at a time, waiting until every listener has heard of each
(or ``--timeout``) before the next. All clients are threads of this process, so
one clock times both ends:

- **latency**: from just before the writer sends its call to the moment a
  listener's client hands over ``notifications/resources/updated``; it holds the
  write itself (the commit), the server's watcher (inotify and a 5 ms settle),
  and the event's way out;
- **after reply**: the same event measured from when the writer had its reply
  (negative: the event came first);
- **missed**: events that did not come within ``--timeout``.

Usage::

    .venv/bin/python bench/bench_notify.py                 # 4 listeners, 200 writes
    .venv/bin/python bench/bench_notify.py --writes 50
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.mcp_http_client import HttpMcpClient
from gitmem import Root
from gitmem.adapters.tokens import token_entry

URI = "memory://team/context"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listeners", type=int, default=4)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitmem-notify-") as tmp:
        root = Root(Path(tmp) / "root")
        root.mount("team", create=True).sync.write("seed.md", "seed\n", expected=None)
        tokens = {f"agent{i}": f"tok-agent{i}-0123456789abcdefghij" for i in range(args.listeners + 1)}
        token_file = Path(tmp) / "tokens.toml"
        token_file.write_text("".join(token_entry(t, who, ["team"], "write") for who, t in tokens.items()))
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gitmem.adapters.cli",
                "serve",
                "--root",
                str(root.path),
                "--port",
                "0",
                "--token-file",
                str(token_file),
                "--json",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, "gitmem serve did not start"
            url = json.loads(proc.stdout.readline())["url"] + "/mcp"
            run(args, url, list(tokens.values()))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


def run(args: argparse.Namespace, url: str, tokens: list[str]) -> None:
    listeners = [HttpMcpClient(url, t) for t in tokens[1:]]
    writer = HttpMcpClient(url, tokens[0])
    for client in (*listeners, writer):
        client.__enter__()
    try:
        for client in listeners:
            client.subscribe(URI)
        time.sleep(1.0)  # every GET stream open
        latency: list[float] = []
        after: list[float] = []
        missed = 0
        for i in range(args.writes):
            began = time.perf_counter()
            done = writer.call("memory_file_create", memory="team", path=f"w/{i}.md", content=f"write {i}\n")
            replied = time.perf_counter()
            assert not done.is_error, done
            for client in listeners:
                try:
                    _, when = client.updates.get(timeout=args.timeout)
                except queue.Empty:
                    missed += 1
                    continue
                latency.append((when - began) * 1000)
                after.append((when - replied) * 1000)
            for client in listeners:  # an event for a burst of writes may come twice: start each write clean
                while not client.updates.empty():
                    client.updates.get_nowait()
    finally:
        for client in (writer, *listeners):
            client.__exit__(None, None, None)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"listeners {args.listeners}, writes {args.writes}, load average {load}")
    print("| measure | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|")
    for name, values in (("write sent -> event at a listener", latency), ("reply -> event", after)):
        print(f"| {name} | {pct(values, 0.5):.1f} | {pct(values, 0.95):.1f} | {max(values):.1f} |")
    print(f"events {len(latency)} of {args.writes * args.listeners}, missed {missed}")


if __name__ == "__main__":
    main()
