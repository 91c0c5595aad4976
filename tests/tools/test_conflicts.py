"""Writers that collide: both changes remain unless one really depends on what the other changed."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from gitmem import InMemoryFileStore, SyncGitFileStore
from gitmem.model import Origin
from gitmem.tools import FileMemoryCapability, FileMemoryLimits, FileMount
from tools.support import Agent, MovingStore, fsck, git, one, reopen

PREFS = "- likes tea\n- reply in English\n"


def test_seed_two_threads_edit_different_lines_then_a_stale_edit_fails(store: Any) -> None:
    first = Agent([one(store)], origin=Origin(run_id="thread-1"))
    second = Agent([one(reopen(store))], origin=Origin(run_id="thread-2"))
    first.call("create", memory="user", path="prefs.md", content=PREFS)
    # Both threads looked at the same version of the file.
    assert first.call("view", memory="user", path="prefs.md") == second.call("view", memory="user", path="prefs.md")

    assert (
        first.call(
            "edit", memory="user", path="prefs.md", old_string="reply in English", new_string="reply in Chinese"
        )["status"]
        == "edited"
    )
    assert (
        second.call("edit", memory="user", path="prefs.md", old_string="likes tea", new_string="likes coffee")["status"]
        == "edited"
    )
    now = store.read("prefs.md")
    assert now.text == "- likes coffee\n- reply in Chinese\n"

    for thread in (first, second):
        stale = thread.call(
            "edit", memory="user", path="prefs.md", old_string="reply in English", new_string="reply in French"
        )
        assert stale["error"] == "no_match"
        assert stale["current"] == {"path": "prefs.md", "version": now.version, "size": now.size, "content": now.text}
    assert store.read("prefs.md") == now


def test_concurrent_edits_of_different_lines_all_remain(tmp_path: Path) -> None:
    store = SyncGitFileStore.init(tmp_path / "m.git")
    lines = [f"item {i}: open\n" for i in range(8)]
    store.write("list.md", "".join(lines), expected=None)
    memory = FileMemoryCapability([FileMount("user", store)], limits=FileMemoryLimits(write_retries=20))

    def edit(i: int) -> dict[str, Any]:
        arguments = {"memory": "user", "path": "list.md", "old_string": f"item {i}: open", "new_string": f"item {i}: closed"}
        return memory.call("memory_file_edit", arguments, tool_call_id=f"c{i}")

    with ThreadPoolExecutor(8) as pool:  # eight tool calls at once, as an async server runs them
        results = list(pool.map(edit, range(8)))
    assert [r.get("status") for r in results] == ["edited"] * 8
    assert store.read("list.md").text == "".join(f"item {i}: closed\n" for i in range(8))
    fsck(store.path)


@pytest.mark.slow
def test_processes_editing_one_file_lose_no_edit(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    workers, edits = 3, 6
    board = "".join(f"w{w}-{i}: todo\n" for w in range(workers) for i in range(edits))
    SyncGitFileStore.init(repo).write("board.md", board, expected=None)
    go = tmp_path / "go"
    script = str(Path(__file__).with_name("edit_worker.py"))
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                script,
                json.dumps({"repo": str(repo), "wid": w, "edits": edits, "go": str(go), "retries": 200}),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    go.touch()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert [json.loads(line).get("status") for line in out.splitlines()] == ["edited"] * edits, out
    final = SyncGitFileStore.open(repo).read("board.md").text
    assert final == board.replace(": todo", ": done")
    assert git(str(repo), "rev-list", "--count", "main").strip() == str(1 + 1 + workers * edits)
    fsck(str(repo))


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("edit", {"path": "a.md", "old_string": "A", "new_string": "B"}),
        ("append", {"path": "a.md", "content": "more"}),
        ("move", {"source": "a.md", "destination": "b.md"}),
    ],
)
@pytest.mark.parametrize("retries", [0, 2])
def test_a_file_that_keeps_changing_exhausts_the_retries(tool: str, arguments: dict[str, str], retries: int) -> None:
    moving = MovingStore(InMemoryFileStore())
    moving.inner.write("a.md", "A", expected=None)
    agent = Agent([one(moving)], limits=FileMemoryLimits(write_retries=retries))
    failure = agent.call(tool, memory="user", **arguments)
    assert failure["error"] == "conflict_retries_exhausted"
    assert moving.attempts == retries + 1
    # Only the other writer's changes are there; the file as it is now comes back.
    now = moving.inner.read("a.md")
    assert now.text == "A" + "!" * (retries + 1)
    assert failure["current"]["content"] == now.text and failure["current"]["version"] == now.version
    assert [e.path for e in moving.inner.list()] == ["a.md"]


def test_a_write_that_loses_once_succeeds_on_the_fresh_content() -> None:
    class OnceMoving(MovingStore):
        def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
            if self.attempts == 0:
                return super().write(path, text, expected=expected, origin=origin)
            self.attempts += 1
            return self.inner.write(path, text, expected=expected, origin=origin)

    moving = OnceMoving(InMemoryFileStore())
    moving.inner.write("a.md", "A\n", expected=None)
    result = Agent([one(moving)]).call("append", memory="user", path="a.md", content="B")
    assert result["status"] == "appended" and moving.attempts == 2
    assert moving.inner.read("a.md").text == "A\n!\nB"
