"""Docs that run: every code block of README.md and docs/*.md runs, in order, on ONE root.

A reader starts with the README, then reads the pages; so does this test: one
``GITMEM_ROOT`` for all of them, shell blocks in ``bash -euo pipefail`` with this
environment's ``gitmem`` first on ``PATH``, the Python blocks of a page in one
namespace (a page is one session), each page started in a fresh working folder so
its relative paths are its own. A block that reuses a memory an earlier page made,
or checks something vacuously, fails here as it would for the reader.

A block that cannot run says why on its first line, visibly, as a comment:
``# docs-test: skip (needs a server that runs until stopped)``. A skipped block is
still checked for syntax (Python compiled, shell through ``bash -n``); JSON blocks
are parsed. A page whose blocks are all of one kind that cannot run here (the
benchmarks) says so in a sentence the test finds. Every other ``sh``/``python``
block must run: the test counts them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```\n", re.M | re.S)
MARK = re.compile(r"\A# docs-test: skip \((.+?)\)\n")
RUNNABLE = ("sh", "python")
#: The order a reader meets them in: the README, then the pages it links first.
PAGES = (
    "README.md",
    "docs/cli.md",
    "docs/errors.md",
    "docs/records.md",
    "docs/session-memory.md",
    "docs/durable.md",
    "docs/anthropic.md",
    "docs/forge.md",
    "docs/architecture.md",
    "docs/benchmarks.md",
)
#: Pages whose commands are not run, with the sentence each page carries saying so.
PAGE_SKIPS = {"docs/benchmarks.md": "The docs test does not run the commands on this page"}


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    lang: str
    code: str
    skip: str | None

    def __str__(self) -> str:
        return f"{self.doc}:{self.line} ({self.lang or 'text'})"


def blocks(doc: str) -> list[Block]:
    text = (REPO / doc).read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        mark = MARK.match(m.group(2))
        line = text[: m.start()].count("\n") + 1
        out.append(Block(doc, line, m.group(1), m.group(2), mark.group(1) if mark else None))
    return out


def check_syntax(block: Block) -> None:
    if block.lang == "python":
        compile(block.code, str(block), "exec")
    elif block.lang == "sh":
        done = subprocess.run(["bash", "-n", "-c", block.code], capture_output=True, text=True)
        assert done.returncode == 0, f"{block}: {done.stderr}"
    elif block.lang == "json":
        json.loads(block.code)


def test_every_page_is_read() -> None:
    on_disk = {"README.md", *(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))}
    assert set(PAGES) == on_disk, "add the page to PAGES, in the order a reader meets it"


def test_every_skip_says_why_and_every_block_parses() -> None:
    for doc in PAGES:
        for block in blocks(doc):
            check_syntax(block)
            assert block.skip is None or len(block.skip) > 10, block
            assert "docs-test" not in block.code or block.skip is not None, f"{block}: a marker only on line one"
            if block.lang == "sh":  # `! cmd` never stops a `set -e` script: the check would pass vacuously
                bare = [line for line in block.code.splitlines() if line.lstrip().startswith("! ")]
                assert not bare, f"{block}: write a must-not check as (! cmd): {bare}"
        assert "<!-- docs-test" not in (REPO / doc).read_text(encoding="utf-8"), f"{doc}: the marker is in the block"
    for doc, sentence in PAGE_SKIPS.items():
        assert sentence in (REPO / doc).read_text(encoding="utf-8"), f"{doc} must say why its commands are not run"


def run_shell(block: Block, env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{block} failed:\n{block.code}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"


def test_every_block_runs_in_order_on_one_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    bin_dir = str(Path(sys.executable).parent)  # the gitmem command of this environment
    env = {**os.environ, "GITMEM_ROOT": str(root), "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
    for name in ("GITMEM_PRINCIPAL", "GITMEM_RUN", "GITMEM_MEMORY_DIR"):
        env.pop(name, None)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITMEM_ROOT", str(root))
    ran: list[str] = []
    runnable: list[str] = []
    for doc in PAGES:
        page = tmp_path / "work" / doc.replace("/", "-")
        page.mkdir(parents=True)
        monkeypatch.chdir(page)
        namespace: dict[str, object] = {"__name__": "__docs__"}
        for block in blocks(doc):
            if block.lang not in RUNNABLE or block.skip is not None or doc in PAGE_SKIPS:
                continue
            runnable.append(str(block))
            if block.lang == "sh":
                run_shell(block, env, page)
            else:
                exec(compile(block.code, str(block), "exec"), namespace)
                asyncio.set_event_loop_policy(None)
            ran.append(str(block))
    assert ran == runnable and len(ran) >= 20, ran
    assert (root / "user.git").is_dir()  # the root the README made is the one every page used


def test_the_readme_python_runs_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A reader who runs the README's Python a second time in the same folder must not hit an error.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITMEM_ROOT", str(tmp_path / "root"))
    python = [b for b in blocks("README.md") if b.lang == "python" and b.skip is None]
    assert len(python) >= 2
    for _ in range(2):
        namespace: dict[str, object] = {"__name__": "__docs__"}
        for block in python:
            exec(compile(block.code, str(block), "exec"), namespace)
    asyncio.set_event_loop_policy(None)
