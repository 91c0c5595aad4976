"""What record, session and Anthropic-tool writes cost on top of one plain store write, per op.

For whichever gitmem is first on ``sys.path`` (so two trees compare by running it
with each), in ONE process, each round calls, in a random order:

- ``write``: ``SyncGitFileStore.write`` of a new file into an existing fan-out folder
  of the record mount (what a record add or a remember stores, minus their layer);
- ``edit``: the same write of an existing file in place (expecting its version);
- ``record add`` / ``record update`` on a namespace of ``--records`` records;
- ``remember`` on a session memory of ``--items`` items;
- the Anthropic tool's ``create``, ``str_replace``, ``insert``, ``rename`` and ``delete``
  on a mount of its own (each file created, edited, renamed and deleted over the rounds),
  against a plain add and edit on that same mount (``tool mount: ...``).

It prints the process CPU p50 of each (``time.process_time``, which also counts the
writer's background pack folds; and the calling thread's, ``time.thread_time``, where
pygit2 runs) and its ratio to ``write`` (adds) or ``edit`` (edits), then, with ``--profile``,
a cProfile (clock: ``time.process_time``) per kind of the functions whose own time
per op differs most from the plain write's::

    .venv/bin/python bench/ab/ontop.py [TREE] [--rounds 300] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default=str(Path(__file__).resolve().parents[2]))
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--profile", action="store_true", help="also a cProfile per kind (slower rounds)")
    parser.add_argument("--top", type=int, default=14)
    args = parser.parse_args()
    sys.path.insert(0, args.tree)
    from bench.bench_records import Corpus, seed_git
    from bench.bench_session import make_items, new_git_memory, sentence
    from gitmem import Root
    from gitmem.adapters.anthropic_memory import GitMemoryTool
    from gitmem.model import Origin
    from gitmem.records import RecordStore
    from gitmem.records.rules import IdGenerator, record_path

    rng = random.Random(11)
    tmp = Path(tempfile.mkdtemp(prefix="gitmem-ontop-"))
    try:
        corpus = Corpus(rng)
        root = Root(tmp / "root")
        ids = seed_git(root, "facts", "alice", args.records, corpus)
        store = root.mount("facts", kind="record").sync
        records = RecordStore(store, "alice")
        gen = IdGenerator()
        edit_paths = [record_path("alice", i) for i in ids[-args.rounds :]]
        memory = new_git_memory(
            tmp, "session", make_items(args.items, rng, now=time.time(), age_days=1, importance=0.6)
        )
        len(memory)
        claude = root.mount("claude", create=True)
        tool = GitMemoryTool(claude, origin=Origin(run_id="bench", principal_id="bench"))
        for i in range(args.rounds):  # files the edits, renames and deletes work on
            with tool.tool_use(f"toolu_seed{i}"):
                tool.call(
                    {
                        "command": "create",
                        "path": f"/memories/t{i % 10}/n{i}.md",
                        "file_text": f"# n{i}\nstatus: open\n",
                    }
                )

        plain_claude = claude.sync  # the tool's own mount, for the tool's baselines
        for i in range(args.rounds):
            plain_claude.write(f"e{i % 10}/e{i}.md", f"# e{i}\nstatus: open\n", expected=None)

        def edit_call(n: int) -> Callable[[], object]:
            path = edit_paths[n]
            version = store.read(path).version  # the read is not timed: only the write
            text = f"edited {n} {corpus.record()}\n"
            return lambda: store.write(path, text, expected=version)

        def claude_edit(n: int) -> Callable[[], object]:
            path = f"e{n % 10}/e{n}.md"
            current = plain_claude.read(path)  # not timed, as above
            text = current.text + f"line {n}\n"
            return lambda: plain_claude.write(path, text, expected=current.version)

        def anth(n: int, payload: dict[str, Any]) -> Callable[[], object]:
            def call() -> object:
                with tool.tool_use(f"toolu_{n}_{payload['command']}"):
                    return tool.call(payload)

            return call

        rows: dict[str, tuple[str, Callable[[int], Callable[[], object]]]] = {
            "write (add a file)": ("", lambda n: _bind(store.write, record_path("alice", gen.next()), corpus.record())),
            "edit (in place)": ("", edit_call),
            "tool mount: write (add a file)": (
                "",
                lambda n: _bind(plain_claude.write, f"w{n % 10}/y{n}.md", f"# y{n}\nstatus: open\n"),
            ),
            "tool mount: edit (in place)": ("", claude_edit),
            "record add": ("write (add a file)", lambda n: _call(records.add, corpus.record())),
            "record update": (
                "edit (in place)",
                lambda n: _call(records.update, ids[n], f"updated {n} {corpus.record()}"),
            ),
            "remember": (
                "write (add a file)",
                lambda n: _call(memory.remember, sentence(rng, 1_000_000 + n) + " fresh"),
            ),
            "anthropic create": (
                "tool mount: write (add a file)",
                lambda n: anth(
                    n, {"command": "create", "path": f"/memories/c{n % 10}/x{n}.md", "file_text": f"# x{n}\n"}
                ),
            ),
            "anthropic str_replace": (
                "tool mount: edit (in place)",
                lambda n: anth(
                    n,
                    {
                        "command": "str_replace",
                        "path": f"/memories/t{n % 10}/n{n}.md",
                        "old_str": "open",
                        "new_str": "done",
                    },
                ),
            ),
            "anthropic insert": (
                "tool mount: edit (in place)",
                lambda n: anth(
                    n,
                    {
                        "command": "insert",
                        "path": f"/memories/t{n % 10}/n{n}.md",
                        "insert_line": 1,
                        "insert_text": f"seen {n}",
                    },
                ),
            ),
        }
        # Renames and deletes need files that the rows above do not touch any more: run after.
        tail: dict[str, tuple[str, Callable[[int], Callable[[], object]]]] = {
            "anthropic rename": (
                "tool mount: edit (in place)",
                lambda n: anth(
                    n,
                    {
                        "command": "rename",
                        "old_path": f"/memories/t{n % 10}/n{n}.md",
                        "new_path": f"/memories/arch/n{n}.md",
                    },
                ),
            ),
            "anthropic delete": (
                "tool mount: edit (in place)",
                lambda n: anth(n, {"command": "delete", "path": f"/memories/arch/n{n}.md"}),
            ),
        }
        cpu: dict[str, list[float]] = {name: [] for name in [*rows, *tail]}
        thread: dict[str, list[float]] = {name: [] for name in [*rows, *tail]}
        profiles: dict[str, cProfile.Profile] = {}
        counts: dict[str, int] = {}

        def timed(name: str, call: Callable[[], object]) -> None:
            if args.profile:
                prof = profiles.setdefault(name, cProfile.Profile(time.process_time))
                prof.enable()
                call()
                prof.disable()
                counts[name] = counts.get(name, 0) + 1
                return
            start, own = time.process_time(), time.thread_time()
            call()
            cpu[name].append(time.process_time() - start)
            thread[name].append(time.thread_time() - own)

        plain = {k: rows[k] for k in ("write (add a file)", "edit (in place)", "tool mount: edit (in place)")}
        for phase in (
            rows,
            {**plain, "anthropic rename": tail["anthropic rename"]},
            {**plain, "anthropic delete": tail["anthropic delete"]},
        ):
            for n in range(args.rounds):
                calls = [(name, make(n)) for name, (_, make) in phase.items()]
                rng.shuffle(calls)
                for name, call in calls:
                    timed(name, call)
        print(f"gitmem from {args.tree}; {args.records} records, {args.items} items, {args.rounds} rounds")
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
        if not args.profile:
            print("| op | process CPU p50 / p95 (ms) | thread CPU p50 (ms) | against | ratio (process / thread) |")
            print("|---|---|---|---|---|")
            for name, (base, _) in [*rows.items(), *tail.items()]:
                s, t = cpu[name], thread[name]
                line = f"| {name} | {_q(s, 0.5):.3f} / {_q(s, 0.95):.3f} | {_q(t, 0.5):.3f} |"
                if base:
                    ratio, own = _q(s, 0.5) / _q(cpu[base], 0.5), _q(t, 0.5) / _q(thread[base], 0.5)
                    line += f" {base} | {ratio:.2f}x / {own:.2f}x |"
                else:
                    line += " | |"
                print(line)
            return
        own = {name: _own(profiles[name], counts[name]) for name in profiles}
        for name, (base, _) in [*rows.items(), *tail.items()]:
            if not base:
                continue
            mine, theirs = own[name], own[base]
            total = sum(v[0] for v in mine.values()) - sum(v[0] for v in theirs.values())
            print(
                f"\n## {name}: {sum(v[0] for v in mine.values()) * 1000:.3f} ms/op own time, "
                f"{total * 1000:+.3f} ms against {base}"
            )
            diffs = sorted(
                ((mine.get(k, (0.0, 0.0))[0] - theirs.get(k, (0.0, 0.0))[0], k) for k in set(mine) | set(theirs)),
                reverse=True,
            )
            for d, k in diffs[: args.top]:
                calls = mine.get(k, (0.0, 0.0))[1] - theirs.get(k, (0.0, 0.0))[1]
                print(f"  {d * 1e6:+8.1f} µs  {calls:+6.2f} calls  {k}")
    finally:
        for repo in (getattr(root, "_mounts", None) or {}).values():
            del repo
        shutil.rmtree(tmp, ignore_errors=True)


def _bind(write: Callable[..., object], path: str, text: str) -> Callable[[], object]:
    return lambda: write(path, text, expected=None)


def _call(fn: Callable[..., object], *a: object) -> Callable[[], object]:
    return lambda: fn(*a)


def _own(profile: cProfile.Profile, n: int) -> dict[str, tuple[float, float]]:
    """Own time (s) and calls per op of each function."""
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    out: dict[str, tuple[float, float]] = {}
    for (file, line, func), (_cc, nc, tt, _ct, _callers) in stats.items():
        key = f"{os.path.basename(os.path.dirname(file))}/{os.path.basename(file)}:{line}:{func}" if line else func
        out[key] = (tt / n, nc / n)
    return out


def _q(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


if __name__ == "__main__":
    main()
