"""Lost edits when several agent sessions edit one shared memory file at once.

N sessions each replace their own lines of one file (``item S-K: todo`` becomes
``item S-K: done``), all at the same time, K edits per session. Every edit is a
``str_replace`` of text that occurs once and that no other session touches, so a
correct memory keeps every edit it reports done. Each contender is counted the
same way: edits *reported done* (no error came back) and edits *kept* (the line
reads ``done`` in the file afterwards).

- **gitmem over MCP**: N ``gitmem mcp`` server processes on one root, one real
  MCP client session each, calling ``memory_file_edit`` (a compare-and-swap
  commit, re-read and retried when another session got in first).
- **gitmem, Anthropic memory tool**: N processes, each with
  :class:`gitmem.adapters.anthropic_memory.GitMemoryTool` over the same mount,
  running ``str_replace`` commands as the SDK's tool runner would.
- **SDK local memory tool** (the baseline): N processes, each with the anthropic
  SDK's own ``BetaLocalFilesystemMemoryTool`` over one directory (read the file,
  replace, write it back).

All sessions of a contender wait on one start signal, then edit as fast as they
can. The script prints, per contender, done / kept / lost, why edits were refused
and the wall time. gitmem refuses an edit (``conflict_retries_exhausted``) when
other writers changed the file on each of its re-reads; ``--agent-retries N``
makes a session try a refused edit again, as the instructions tell a model to.
The SDK tool refuses nothing: its losses are silent.

Usage::

    .venv/bin/python bench/bench_shared_edits.py                 # 10 sessions x 5 edits, 3 rounds
    .venv/bin/python bench/bench_shared_edits.py --agent-retries 3       # a refused edit is tried again
    .venv/bin/python bench/bench_shared_edits.py --sessions 25 --edits 2 --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FILE = "shared.md"
#: Why edits were refused in the current contender's rounds (error code or message start -> count).
REFUSALS: dict[str, int] = {}


def lines(sessions: int, edits: int) -> str:
    return "".join(f"item {s}-{k}: todo\n" for s in range(sessions) for k in range(edits))


def kept(text: str, sessions: int, edits: int) -> int:
    return sum(f"item {s}-{k}: done\n" in text for s in range(sessions) for k in range(edits))


# --- the SDK's tool and gitmem's Anthropic backend: one process per session ----------------


def _tool_session(
    kind: str, where: str, session: int, edits: int, retries: int, start: Any, ready: Any, out: Any
) -> None:
    from anthropic.lib.tools import ToolError

    if kind == "sdk":
        from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

        tool: Any = BetaLocalFilesystemMemoryTool(base_path=where)
    else:
        from gitmem import Root
        from gitmem.adapters.anthropic_memory import GitMemoryTool
        from gitmem.model import Origin

        tool = GitMemoryTool(Root(where).mount("shared"), origin=Origin(f"run-{session}", f"agent-{session}"))
    ready.put(session)
    start.wait()
    done = 0
    refusals: dict[str, int] = {}
    for k in range(edits):
        command = {
            "command": "str_replace",
            "path": f"/memories/{FILE}",
            "old_str": f"item {session}-{k}: todo",
            "new_str": f"item {session}-{k}: done",
        }
        for _ in range(1 + retries):  # a refused edit is tried again, as the instructions tell a model
            try:
                tool.call(command)
                done += 1
                break
            except ToolError as exc:
                reason = str(exc.content if isinstance(exc.content, str) else exc).split(":")[0][:60]
                refusals[reason] = refusals.get(reason, 0) + 1
    out.put((done, refusals))


def run_tools(kind: str, sessions: int, edits: int, retries: int) -> tuple[int, int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "sdk":
            where = tmp
            (Path(tmp) / "memories").mkdir()
            (Path(tmp) / "memories" / FILE).write_text(lines(sessions, edits), encoding="utf-8")
        else:
            from gitmem import Root

            where = str(Path(tmp) / "root")
            Root(where).mount("shared", create=True).sync.write(FILE, lines(sessions, edits), expected=None)
        ctx = mp.get_context("spawn")
        start, ready, out = ctx.Event(), ctx.Queue(), ctx.Queue()
        procs = [
            ctx.Process(target=_tool_session, args=(kind, where, s, edits, retries, start, ready, out))
            for s in range(sessions)
        ]
        for p in procs:
            p.start()
        for _ in procs:
            ready.get(timeout=600)  # every session has imported and opened its tool
        began = time.perf_counter()
        start.set()
        answers = [out.get(timeout=600) for _ in procs]
        wall = time.perf_counter() - began
        done = sum(a[0] for a in answers)
        for a in answers:
            for reason, n in a[1].items():
                REFUSALS[reason] = REFUSALS.get(reason, 0) + n
        for p in procs:
            p.join()
        if kind == "sdk":
            text = (Path(tmp) / "memories" / FILE).read_text(encoding="utf-8")
        else:
            from gitmem import Root

            text = Root(where).mount("shared").sync.read(FILE).text
        return done, kept(text, sessions, edits), wall


# --- gitmem over MCP: one server process and one client session per agent -----------------


async def _mcp_session(root: str, session: int, edits: int, retries: int, start: asyncio.Event) -> int:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    args = ["-m", "gitmem.adapters.cli", "mcp", "--root", root, "--mount", "shared", "--no-watch"]
    params = StdioServerParameters(command=sys.executable, args=[*args, "--principal", f"agent-{session}"])
    done = 0
    with open(Path(root).parent / f"mcp-{session}.stderr", "w", encoding="utf-8") as errors:
        async with stdio_client(params, errlog=errors) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                ready[0] += 1
                await start.wait()
                for k in range(edits):
                    edit = {
                        "memory": "shared",
                        "path": FILE,
                        "old_string": f"item {session}-{k}: todo",
                        "new_string": f"item {session}-{k}: done",
                    }
                    for _ in range(1 + retries):  # a refused edit is tried again, as the instructions say
                        result = await client.call_tool("memory_file_edit", edit)
                        answer = json.loads(result.content[0].text)  # type: ignore[union-attr]
                        if not result.is_error and "error" not in answer:
                            done += 1
                            break
                        REFUSALS[answer.get("error", "?")] = REFUSALS.get(answer.get("error", "?"), 0) + 1
    return done


ready = [0]


async def _mcp_all(root: str, sessions: int, edits: int, retries: int) -> tuple[int, float]:
    start = asyncio.Event()
    ready[0] = 0
    tasks = [asyncio.create_task(_mcp_session(root, s, edits, retries, start)) for s in range(sessions)]
    while ready[0] < sessions:
        await asyncio.sleep(0.05)
    began = time.perf_counter()
    start.set()
    done = sum(await asyncio.gather(*tasks))
    return done, time.perf_counter() - began


def run_mcp(sessions: int, edits: int, retries: int) -> tuple[int, int, float]:
    from gitmem import Root

    with tempfile.TemporaryDirectory() as tmp:
        root = str(Path(tmp) / "root")
        store = Root(root).mount("shared", create=True).sync
        store.write(FILE, lines(sessions, edits), expected=None)
        done, wall = asyncio.run(_mcp_all(root, sessions, edits, retries))
        return done, kept(store.read(FILE).text, sessions, edits), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--edits", type=int, default=5, help="edits per session")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--agent-retries", type=int, default=0, help="times a session tries a refused edit again (default 0)"
    )
    opts = parser.parse_args()
    total = opts.sessions * opts.edits
    contenders = {
        "gitmem over MCP (memory_file_edit)": lambda: run_mcp(opts.sessions, opts.edits, opts.agent_retries),
        "gitmem, Anthropic memory tool": lambda: run_tools("gitmem", opts.sessions, opts.edits, opts.agent_retries),
        "SDK local memory tool (baseline)": lambda: run_tools("sdk", opts.sessions, opts.edits, opts.agent_retries),
    }
    print(
        f"{opts.sessions} sessions x {opts.edits} edits = {total} edits per round, {opts.rounds} rounds, "
        f"a refused edit tried again up to {opts.agent_retries} times"
    )
    for name, run in contenders.items():
        REFUSALS.clear()
        rows = [run() for _ in range(opts.rounds)]
        done = [r[0] for r in rows]
        keep = [r[1] for r in rows]
        lost = [d - k for d, k in zip(done, keep, strict=True)]
        walls = ", ".join(f"{r[2]:.2f}s" for r in rows)
        print(
            f"{name:<38} reported done {'/'.join(map(str, done))} of {total}; kept {'/'.join(map(str, keep))}; "
            f"done but lost {'/'.join(map(str, lost))}; wall {walls}"
        )
        if REFUSALS:
            print(f"{'':<38} refused (the caller is told, and can retry): {REFUSALS}")


if __name__ == "__main__":
    main()
