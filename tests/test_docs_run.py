"""Docs that run: every code block of README.md and docs/cli.md is executed, in order, in a temp root.

A block is skipped only when the line before its fence says why
(``<!-- docs-test: skip (REASON) -->``); a skipped block is still checked for
syntax (Python compiled, shell through ``bash -n``, JSON parsed). Blocks are found
generically, so sections other branches add are covered as they land.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```\n", re.M | re.S)
SKIP = re.compile(r"<!-- docs-test: skip \((.+?)\) -->\n$")


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
        before = text[: m.start()]
        skip = SKIP.search(before)
        out.append(Block(doc, before.count("\n") + 1, m.group(1), m.group(2), skip.group(1) if skip else None))
    return out


def shell_env(tmp: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # the gitmem command of this environment
    return {**os.environ, "GITMEM_ROOT": str(tmp / "root"), "PATH": bin_dir + os.pathsep + os.environ["PATH"]}


def run_shell(block: Block, tmp: Path) -> None:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=tmp,
        env=shell_env(tmp),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{block} failed:\n{block.code}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"


def check_syntax(block: Block) -> None:
    if block.lang == "python":
        compile(block.code, str(block), "exec")
    elif block.lang == "sh":
        done = subprocess.run(["bash", "-n", "-c", block.code], capture_output=True, text=True)
        assert done.returncode == 0, f"{block}: {done.stderr}"
    elif block.lang == "json":
        json.loads(block.code)


def run_doc(doc: str, tmp: Path, monkeypatch: pytest.MonkeyPatch, *, times: int = 1) -> int:
    """Run the doc's blocks in order (``times`` passes, to show a second run works too); how many ran."""
    monkeypatch.chdir(tmp)
    monkeypatch.setenv("GITMEM_ROOT", str(tmp / "root"))
    ran = 0
    for _ in range(times):
        namespace: dict[str, object] = {"__name__": "__docs__"}
        for block in blocks(doc):
            check_syntax(block)
            if block.skip is not None or block.lang not in ("python", "sh"):
                continue
            if block.lang == "sh":
                if "jq " in block.code and shutil.which("jq") is None:
                    continue  # jq is not part of gitmem's install; the block is syntax-checked above
                run_shell(block, tmp)
            else:
                exec(compile(block.code, str(block), "exec"), namespace)
            ran += 1
    return ran


def test_every_skip_says_why() -> None:
    for doc in ("README.md", "docs/cli.md"):
        for block in blocks(doc):
            assert block.skip is None or len(block.skip) > 10, block


def test_readme_runs_in_order_and_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The Python blocks run twice in one folder: a reader who runs them again must not hit an error.
    # The shell blocks make memories; a second pass would find them, so the shell part runs once.
    python_only = [b for b in blocks("README.md") if b.lang == "python" and b.skip is None]
    assert len(python_only) >= 2
    ran = run_doc("README.md", tmp_path, monkeypatch)
    assert ran >= 4
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in python_only:
        exec(compile(block.code, str(block), "exec"), namespace)
    asyncio.set_event_loop_policy(None)


def test_cli_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_doc("docs/cli.md", tmp_path, monkeypatch) >= 1


def test_skipped_blocks_still_parse() -> None:
    skipped = [b for doc in ("README.md", "docs/cli.md") for b in blocks(doc) if b.skip]
    assert skipped, "the skip marker is recognised"
    for block in skipped:
        check_syntax(block)
