"""The Anthropic memory-tool backend, driven through the SDK's own command types and runner (no network).

What it must show: every command works and reads like the SDK's local-filesystem
tool; every change is one CAS commit recording the tool-use id; an edit re-reads
and retries after a concurrent change (and fails, writing nothing, when its text is
gone); no hostile path escapes ``/memories`` or writes anything.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anthropic import Anthropic
from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand as Create,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818DeleteCommand as Delete,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818InsertCommand as Insert,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818RenameCommand as Rename,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818StrReplaceCommand as StrReplace,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818ViewCommand as View,
)
from anthropic.types.beta import BetaMessage

from gitmem import Applied, Edit, ForwardingFileStore, GitFileStore, InMemoryFileStore, Root, SyncGitFileStore
from gitmem.adapters.anthropic_memory import AsyncGitMemoryTool, GitMemoryTool, store_path
from gitmem.fileformat import FileFormat
from gitmem.model import Origin

ORIGIN = Origin(run_id="run-7", principal_id="alice")


@pytest.fixture
def store(tmp_path: Path) -> GitFileStore:
    return Root(tmp_path / "root").mount("claude", create=True)


@pytest.fixture
def tool(store: GitFileStore) -> GitMemoryTool:
    return GitMemoryTool(store, origin=ORIGIN)


def git(store: GitFileStore, *args: str) -> str:
    return subprocess.run(["git", "-C", store.path, *args], capture_output=True, text=True, check=True).stdout


def commits(store: GitFileStore) -> int:
    return int(git(store, "rev-list", "--count", "main"))


def run(tool: GitMemoryTool, command: Any, tool_use_id: str = "toolu_x") -> str:
    with tool.tool_use(tool_use_id):
        return str(tool.execute(command))


def refused(tool: GitMemoryTool, command: Any) -> str:
    with pytest.raises(ToolError) as caught:
        run(tool, command)
    assert isinstance(caught.value.content, str)
    return caught.value.content


# --- every command, compared with the SDK's local-filesystem tool ------------------


SCRIPT: list[Any] = [
    View(command="view", path="/memories"),
    Create(command="create", path="/memories/prefs/language.md", file_text="Reply in Chinese.\nBe brief.\n"),
    Create(command="create", path="/memories/prefs/language.md", file_text="again"),
    Create(command="create", path="/memories/notes/a.md", file_text="alpha\nbeta\ngamma\ndelta\nepsilon\n"),
    Create(command="create", path="/memories/notes/deep/b.md", file_text="x\n"),
    Create(command="create", path="/memories/notes/.hidden.md", file_text="secret\n"),
    Create(command="create", path="/memories/top.md", file_text="no trailing newline"),
    View(command="view", path="/memories/prefs/language.md"),
    View(command="view", path="/memories/notes/a.md", view_range=[2, 4]),
    View(command="view", path="/memories/notes/a.md", view_range=[3, -1]),
    View(command="view", path="/memories/missing.md"),
    StrReplace(command="str_replace", path="/memories/notes/a.md", old_str="delta", new_str="DELTA"),
    StrReplace(command="str_replace", path="/memories/notes/a.md", old_str="zeta", new_str="x"),
    StrReplace(command="str_replace", path="/memories/notes/a.md", old_str="a\n", new_str="x"),
    StrReplace(command="str_replace", path="/memories/nope.md", old_str="a", new_str="b"),
    Insert(command="insert", path="/memories/notes/a.md", insert_line=0, insert_text="first\n"),
    Insert(command="insert", path="/memories/notes/a.md", insert_line=6, insert_text="last"),
    Insert(command="insert", path="/memories/notes/a.md", insert_line=99, insert_text="x"),
    Insert(command="insert", path="/memories/top.md", insert_line=1, insert_text="second"),
    View(command="view", path="/memories/notes/a.md"),
    View(command="view", path="/memories/top.md"),
    Rename(command="rename", old_path="/memories/top.md", new_path="/memories/archive/top.md"),
    Rename(command="rename", old_path="/memories/top.md", new_path="/memories/x.md"),
    Rename(command="rename", old_path="/memories/notes/a.md", new_path="/memories/prefs/language.md"),
    Delete(command="delete", path="/memories/archive/top.md"),
    Delete(command="delete", path="/memories/archive/top.md"),
    Delete(command="delete", path="/memories"),
]


def outcome(tool: Any, command: Any) -> tuple[bool, str]:
    try:
        return True, str(tool.execute(command))
    except ToolError as exc:
        return False, str(exc.content)


def test_every_command_reads_like_the_sdk_local_filesystem_tool(tool: GitMemoryTool, tmp_path: Path) -> None:
    local = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path / "local"))
    for command in SCRIPT:
        ours, theirs = outcome(tool, command), outcome(local, command)
        if command.command == "view" and command.path == "/memories":
            assert ours[1].splitlines()[0] == theirs[1].splitlines()[0]
            continue
        assert ours == theirs, command

    # Listings name the same entries in the same order. Folder sizes differ (ours is the bytes
    # inside), and git keeps no empty folders, where the SDK keeps archive/ after its last file.
    def empty(entry: str) -> bool:
        folder = tmp_path / "local" / entry.lstrip("/")
        return entry.endswith("/") and not any(files for _, _, files in os.walk(folder))

    for path in ("/memories", "/memories/notes", "/memories/"):
        ours, theirs = outcome(tool, View(command="view", path=path)), outcome(local, View(command="view", path=path))
        assert ours[0] and theirs[0]
        listed = [line.split("\t")[1].replace("//", "/") for line in theirs[1].splitlines()[2:]]
        assert [line.split("\t")[1] for line in ours[1].splitlines()[2:]] == [e for e in listed if not empty(e)]
        assert ours[1].splitlines()[1].split("\t")[1] == path.rstrip("/"), "the folder itself, as the SDK shows it"
    listing = run(tool, View(command="view", path="/memories/notes"))
    assert "\t/memories/notes/a.md" in listing and "\t/memories/notes/deep/" in listing
    assert ".hidden" not in listing


def test_the_listing_shows_two_levels_with_sizes(tool: GitMemoryTool) -> None:
    run(tool, Create(command="create", path="/memories/a/b/c/d.md", file_text="12345\n"))
    run(tool, Create(command="create", path="/memories/a/e.md", file_text="x" * 2048))
    assert run(tool, View(command="view", path="/memories/")) == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n"
        "2.0K\t/memories\n2.0K\t/memories/a/\n6B\t/memories/a/b/\n2K\t/memories/a/e.md"
    )


def test_each_change_is_one_commit_recording_the_tool_use(tool: GitMemoryTool, store: GitFileStore) -> None:
    before = commits(store)
    run(tool, Create(command="create", path="/memories/n.md", file_text="one\ntwo\n"), "toolu_01")
    run(tool, StrReplace(command="str_replace", path="/memories/n.md", old_str="two", new_str="2"), "toolu_02")
    run(tool, Insert(command="insert", path="/memories/n.md", insert_line=2, insert_text="three"), "toolu_03")
    run(tool, Rename(command="rename", old_path="/memories/n.md", new_path="/memories/m.md"), "toolu_04")
    run(tool, View(command="view", path="/memories/m.md"), "toolu_05")
    refused(tool, Create(command="create", path="/memories/m.md", file_text="dup"))
    refused(tool, StrReplace(command="str_replace", path="/memories/m.md", old_str="absent", new_str="x"))
    run(tool, Delete(command="delete", path="/memories/m.md"), "toolu_06")
    assert commits(store) == before + 5, "one commit per change; views and refusals commit nothing"
    fmt = "%an|%(trailers:key=Gitmem-Run,valueonly,separator=)|%(trailers:key=Gitmem-Tool-Call,valueonly,separator=)|%s"
    log = git(store, "log", "-5", f"--format={fmt}").splitlines()
    assert log == [
        "alice|run-7|toolu_06|delete m.md",
        "alice|run-7|toolu_04|move n.md → m.md",
        "alice|run-7|toolu_03|edit n.md",
        "alice|run-7|toolu_02|edit n.md",
        "alice|run-7|toolu_01|create n.md",
    ]
    assert subprocess.run(["git", "-C", store.path, "fsck", "--strict"], capture_output=True).returncode == 0


def test_folder_delete_and_rename_are_one_commit_each(tool: GitMemoryTool, store: GitFileStore) -> None:
    for name in ("a", "b", "sub/c"):
        run(tool, Create(command="create", path=f"/memories/box/{name}.md", file_text=f"{name}\n"))
    before = commits(store)
    assert run(tool, Rename(command="rename", old_path="/memories/box", new_path="/memories/crate"), "toolu_mv") == (
        "Successfully renamed /memories/box to /memories/crate"
    )
    assert commits(store) == before + 1, "the whole folder moved in one commit"
    assert sorted(e.path for e in store.sync.list()) == ["crate/a.md", "crate/b.md", "crate/sub/c.md"]
    assert git(store, "ls-tree", "-r", "--name-only", "main").split() == [
        "crate/a.md",
        "crate/b.md",
        "crate/sub/c.md",
    ], "the old folder is gone from the tree"
    trailers = git(store, "log", "-1", "--format=%(trailers:key=Gitmem-From,valueonly,separator=%x20)").split()
    assert trailers == ["box/a.md", "box/b.md", "box/sub/c.md"]
    assert "Cannot move" in refused(
        tool, Rename(command="rename", old_path="/memories/crate", new_path="/memories/crate/x")
    )
    run(tool, Create(command="create", path="/memories/other.md", file_text="o\n"))
    taken = refused(tool, Rename(command="rename", old_path="/memories/crate", new_path="/memories/other.md"))
    assert taken == "The destination /memories/other.md already exists"
    assert (
        run(tool, Delete(command="delete", path="/memories/crate/"), "toolu_rm")
        == "Successfully deleted /memories/crate/"
    )
    assert [e.path for e in store.sync.list()] == ["other.md"]
    calls = git(
        store, "log", f"-{commits(store) - before}", "--format=%(trailers:key=Gitmem-Tool-Call,valueonly,separator=)"
    )
    assert calls.split() == ["toolu_rm", "toolu_x", "toolu_mv"], "one commit per folder command"
    assert [entry.summary for entry in store.sync.log("crate/sub/c.md")] == [
        "delete crate/a.md, crate/b.md, crate/sub/c.md",
        "move 3 files: box/a.md → crate/a.md, box/b.md → crate/b.md, box/sub/c.md → crate/sub/c.md",
        "create box/sub/c.md",
    ], "log follows a file through the folder rename"
    assert subprocess.run(["git", "-C", store.path, "fsck", "--strict"], capture_output=True).returncode == 0


def test_content_the_store_refuses_writes_nothing(tool: GitMemoryTool, store: GitFileStore) -> None:
    before = commits(store)
    key = "aws_key = AKIA" + "ABCDEFGHIJKLMNOP\n"
    message = refused(tool, Create(command="create", path="/memories/keys.md", file_text=key))
    assert message.startswith("Nothing was written to /memories/keys.md:") and "secret" in message
    run(tool, Create(command="create", path="/memories/big.md", file_text="x\n"))
    huge = "y" * (store.format.max_file_bytes + 1)
    message = refused(tool, StrReplace(command="str_replace", path="/memories/big.md", old_str="x", new_str=huge))
    assert message.startswith("Nothing was written to /memories/big.md:")
    assert "not a file" in refused(tool, StrReplace(command="str_replace", path="/memories", old_str="a", new_str="b"))
    run(tool, Create(command="create", path="/memories/dir/f.md", file_text="f\n"))
    assert refused(tool, Insert(command="insert", path="/memories/dir", insert_line=0, insert_text="x")) == (
        "The path /memories/dir is not a file."
    )
    assert commits(store) == before + 2


def test_create_over_a_file_says_it_exists_whatever_the_text(tool: GitMemoryTool, store: GitFileStore) -> None:
    """Create writes without reading first; a file already there is still the answer, even for text the
    store would refuse (as when the file was read first), and nothing is committed."""
    run(tool, Create(command="create", path="/memories/a.md", file_text="a\n"))
    before = commits(store)
    huge = "y" * (store.format.max_file_bytes + 1)
    for text in ("b\n", huge, "aws_key = AKIA" + "ABCDEFGHIJKLMNOP\n"):
        assert refused(tool, Create(command="create", path="/memories/a.md", file_text=text)) == (
            "File /memories/a.md already exists"
        )
    assert refused(tool, Create(command="create", path="/memories/a.md/b.md", file_text="x\n")).startswith(
        "Invalid path /memories/a.md/b.md"
    )
    assert commits(store) == before
    assert store.sync.read("a.md").text == "a\n"


def test_a_tool_with_stricter_rules_than_its_mount_applies_them(store: GitFileStore) -> None:
    strict = GitMemoryTool(store, origin=ORIGIN, fmt=store.format.replace(max_file_bytes=8))
    message = refused(strict, Create(command="create", path="/memories/long.md", file_text="0123456789\n"))
    assert message.startswith("Nothing was written to /memories/long.md:")
    run(strict, Create(command="create", path="/memories/short.md", file_text="0123\n"))
    message = refused(strict, Insert(command="insert", path="/memories/short.md", insert_line=1, insert_text="4567"))
    assert message.startswith("Nothing was written to /memories/short.md:")
    assert [e.path for e in store.sync.list()] == ["short.md"]


# --- compare-and-swap ------------------------------------------------------------------


class Interfering(ForwardingFileStore):
    """A store that lets another writer change the file just before our write lands."""

    def __init__(self, store: GitFileStore, change: Any, times: int = 1) -> None:
        super().__init__(store.sync)
        self.other = SyncGitFileStore.open(store.path)  # another handle, as another process holds it
        self.change = change
        self.left = times

    def _interfere(self, path: str) -> None:
        if self.left > 0:
            self.left -= 1
            current = self.other.read(path)
            self.other.write(path, self.change(current.text), expected=current.version, origin=Origin(run_id="other"))

    def write(self, path: str, text: str, *, expected: str | None, origin: Origin | None = None) -> str:
        self._interfere(path)
        return super().write(path, text, expected=expected, origin=origin)

    def move(self, source: str, destination: str, *, expected: str, origin: Origin | None = None) -> str:
        self._interfere(source)
        return super().move(source, destination, expected=expected, origin=origin)

    def delete(self, path: str, *, expected: str, origin: Origin | None = None) -> None:
        self._interfere(path)
        super().delete(path, expected=expected, origin=origin)


def test_an_edit_retries_after_a_concurrent_change_and_both_remain(store: GitFileStore) -> None:
    store.sync.write("list.md", "one\ntwo\nthree\n", expected=None)
    moving = Interfering(store, lambda text: text.replace("three", "THREE (other)"))
    tool = GitMemoryTool(moving, origin=ORIGIN)
    run(tool, StrReplace(command="str_replace", path="/memories/list.md", old_str="one", new_str="ONE"), "toolu_e")
    assert store.sync.read("list.md").text == "ONE\ntwo\nTHREE (other)\n"
    log = git(store, "log", "-2", "--format=%(trailers:key=Gitmem-Run,valueonly,separator=)").split()
    assert log == ["run-7", "other"], "ours was rebuilt on top of the other writer's commit"

    moving = Interfering(store, lambda text: "zero\n" + text)
    tool = GitMemoryTool(moving, origin=ORIGIN)
    run(tool, Insert(command="insert", path="/memories/list.md", insert_line=3, insert_text="after two"))
    assert store.sync.read("list.md").text == "zero\nONE\ntwo\nafter two\nTHREE (other)\n"

    tool = GitMemoryTool(store, origin=ORIGIN)
    assert run(tool, Delete(command="delete", path="/memories/list.md")) == "Successfully deleted /memories/list.md"
    assert store.sync.list() == []


def test_a_delete_that_lost_a_race_keeps_the_newer_text(store: GitFileStore) -> None:
    """A lost delete is not retried (as the tools' delete), so a concurrent edit is never destroyed."""
    store.sync.write("list.md", "one\n", expected=None)
    moving = Interfering(store, lambda text: text + "added meanwhile\n")
    tool = GitMemoryTool(moving, origin=ORIGIN)
    message = refused(tool, Delete(command="delete", path="/memories/list.md"))
    assert "changed after it was read" in message and "not deleted" in message
    assert store.sync.read("list.md").text == "one\nadded meanwhile\n"
    assert "run-7" not in git(store, "log", "--format=%(trailers:key=Gitmem-Run,valueonly,separator=)").split()


@pytest.mark.parametrize("command", [Delete(command="delete", path="/memories/box"), "clear"])
def test_a_folder_delete_expects_the_listed_versions(store: GitFileStore, command: Any) -> None:
    for name in ("a", "b"):
        store.sync.write(f"box/{name}.md", f"{name}\n", expected=None)
    moving = Interfering(store, lambda text: text + "edited meanwhile\n")  # hits box/a.md, listed first
    tool = GitMemoryTool(moving, origin=ORIGIN)
    with pytest.raises(ToolError) as caught:
        with tool.tool_use("toolu_rm"):
            tool.clear_all_memory() if command == "clear" else tool.execute(command)
    message = str(caught.value.content)
    assert "0 of 2 files" in message and "changed after it was read" in message
    assert [(e.path, store.sync.read(e.path).text) for e in store.sync.list()] == [
        ("box/a.md", "a\nedited meanwhile\n"),
        ("box/b.md", "b\n"),
    ], "the edited file keeps the newer text and nothing after it is touched"


def test_under_the_review_gate_a_run_reads_its_own_writes(store: GitFileStore) -> None:
    from gitmem import review

    review.enable(store)
    tool = GitMemoryTool(store, origin=ORIGIN)
    run(tool, Create(command="create", path="/memories/plan.md", file_text="step one\n"))
    assert "step one" in run(tool, View(command="view", path="/memories/plan.md"))
    run(tool, StrReplace(command="str_replace", path="/memories/plan.md", old_str="one", new_str="two"))
    assert "/memories/plan.md" in run(tool, View(command="view", path="/memories"))
    assert store.sync.for_run("run-7").read("plan.md").text == "step two\n"
    assert store.sync.list() == [], "main is untouched until the proposal is approved"
    assert [p.run for p in review.proposals(store)] == ["run-7"]

    async def drive() -> str:
        atool = AsyncGitMemoryTool(store, origin=ORIGIN)
        await atool.execute(Insert(command="insert", path="/memories/plan.md", insert_line=1, insert_text="three"))
        return str(await atool.execute(View(command="view", path="/memories/plan.md")))

    assert "three" in asyncio.run(drive())


def test_an_edit_whose_text_is_gone_fails_and_writes_nothing(store: GitFileStore) -> None:
    store.sync.write("list.md", "one\ntwo\n", expected=None)
    moving = Interfering(store, lambda text: text.replace("one", "uno"))
    tool = GitMemoryTool(moving, origin=ORIGIN)
    before = commits(store)
    message = refused(tool, StrReplace(command="str_replace", path="/memories/list.md", old_str="one", new_str="1"))
    assert "did not appear verbatim" in message and "changed while this command ran" in message
    assert commits(store) == before + 1, "only the other writer's commit"
    assert store.sync.read("list.md").text == "uno\ntwo\n"


def test_a_file_that_keeps_changing_exhausts_the_retries(store: GitFileStore) -> None:
    store.sync.write("hot.md", "x\n", expected=None)
    moving = Interfering(store, lambda text: text + "!", times=100)
    tool = GitMemoryTool(moving, origin=ORIGIN, write_retries=2)
    message = refused(tool, Insert(command="insert", path="/memories/hot.md", insert_line=0, insert_text="top"))
    assert "kept changing" in message and "nothing was written" in message
    assert git(store, "log", "--format=%(trailers:key=Gitmem-Run,valueonly,separator=)").split().count("run-7") == 0
    assert moving.left == 100 - 3, "one first try and two retries"


def test_threads_editing_different_lines_all_land(store: GitFileStore) -> None:
    store.sync.write("board.md", "".join(f"slot {n}: free\n" for n in range(4)), expected=None)
    tools = [GitMemoryTool(GitFileStore.open(store.path), origin=Origin(run_id=f"t{n}")) for n in range(4)]
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def claim(n: int) -> None:
        start.wait(timeout=30)
        try:
            run(
                tools[n],
                StrReplace(
                    command="str_replace",
                    path="/memories/board.md",
                    old_str=f"slot {n}: free",
                    new_str=f"slot {n}: t{n}",
                ),
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    # Each attempt can only lose to one of the three other commits: retries 3 always suffices.
    assert errors == []
    assert store.sync.read("board.md").text == "".join(f"slot {n}: t{n}\n" for n in range(4))


# --- paths that must not escape -----------------------------------------------------------

HOSTILE: list[Any] = [
    "/memories/../x.md",
    "/memories/../../etc/passwd",
    "/memories/a/../../x.md",
    "/memories/..",
    "/memories/.",
    "/memories/./a.md",
    "/memories/a/./b.md",
    "/memories/x/..",
    "/memories/%2e%2e/x.md",
    "/memories/%2E%2E/x.md",
    "/memories/..%2fx.md",
    "/memories%2f..%2fx.md",
    "/memories/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/memories/a%5c..%5cx.md",
    "/memories/a%00.md",
    "/memories/%252e%252e/x.md",
    "/memories\\..\\x.md",
    "/memories/a\\b.md",
    "/memories/..\\x.md",
    "/memories_backup/x.md",
    "/memories-old/x.md",
    "/memoriesx.md",
    "/memories..",
    "/etc/passwd",
    "/",
    "",
    "memories/x.md",
    "./memories/x.md",
    "../memories/x.md",
    "~/memories/x.md",
    "/memories/~/x.md",
    "/memories/~root/x.md",
    "/memories/a\x00b.md",
    "/memories/a\nb.md",
    "/memories/a\rb.md",
    "//memories/x.md",
    "/memories//x.md",
    "/MEMORIES/x.md",
    "/memories/\uff0e\uff0e/x.md",
    "/memories/.git/config",
    "/memories/a/.GIT/x",
    "/memories/" + "a" * 300,
    None,
    5,
    ["/memories/x.md"],
]


def hostile_inputs(path: Any) -> list[dict[str, Any]]:
    """Tool inputs as the model sends them; ``tool.call`` parses them into the SDK's command types."""
    return [
        {"command": "view", "path": path},
        {"command": "create", "path": path, "file_text": "pwned\n"},
        {"command": "str_replace", "path": path, "old_str": "ok", "new_str": "pwned"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/moved.md"},
        {"command": "rename", "old_path": "/memories/ok.md", "new_path": path},
    ]


def snapshot(top: Path, skip: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(top):
        if Path(dirpath).is_relative_to(skip):
            continue
        for name in names:
            out[os.path.join(dirpath, name)] = Path(dirpath, name).read_bytes()
    return out


def test_no_hostile_path_escapes_or_writes(tool: GitMemoryTool, store: GitFileStore, tmp_path: Path) -> None:
    run(tool, Create(command="create", path="/memories/ok.md", file_text="ok\n"))
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0\n")
    (tmp_path / "root" / "x.md").write_text("outside\n")
    head, outside = store.sync.head(), snapshot(tmp_path, Path(store.path))
    escapes = []
    for path in HOSTILE:
        for tool_input in hostile_inputs(path):
            try:
                answer = tool.call(tool_input)
            except ToolError as exc:
                assert isinstance(exc.content, str) and exc.content, (path, tool_input)
                continue
            escapes.append((path, tool_input["command"], answer))
    assert escapes == []
    assert store.sync.head() == head, "no commit"
    assert snapshot(tmp_path, Path(store.path)) == outside, "nothing written outside the repository"
    assert [e.path for e in store.sync.list()] == ["ok.md"]


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/memories/../x", "would escape /memories"),
        ("/memories_backup/x", "only shares the prefix"),
        ("/etc/passwd", "Path must start with /memories"),
        ("/memories/%2e%2e/x", "percent-encoded"),
        ("/memories\\x", "backslash"),
        ("/memories/a\x00", "NUL"),
        ("/memories/~/x", "'~'"),
        ("/memories//x", "empty segment"),
        ("/memories/.git/x", "Invalid path"),
    ],
)
def test_refusals_say_why(path: str, says: str) -> None:
    with pytest.raises(ToolError) as caught:
        store_path(path)
    assert says in str(caught.value.content)


def test_paths_inside_memories_map_to_the_mount() -> None:
    assert store_path("/memories") == ""
    assert store_path("/memories/") == ""
    assert store_path("/memories/prefs/language.md") == "prefs/language.md"
    assert store_path("/memories/prefs/") == "prefs"
    assert store_path("/memories/cafe\u0301.md") == "caf\u00e9.md"
    assert store_path("/memories/a..b/c.d.md") == "a..b/c.d.md"
    assert store_path("/memories/notes~") == "notes~"


# --- tool-use ids through the SDK --------------------------------------------------------


def message(*blocks: dict[str, Any], stop: str = "tool_use") -> BetaMessage:
    return BetaMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-5-5",
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": list(blocks),
        }
    )


def use(tool_use_id: str, name: str = "memory", **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def test_expected_tool_uses_name_the_commits(tool: GitMemoryTool, store: GitFileStore) -> None:
    reply = message(
        {"type": "text", "text": "saving"},
        use("toolu_a", command="create", path="/memories/a.md", file_text="a\n"),
        use("toolu_other", name="weather", city="Paris"),
        use("toolu_b", command="create", path="/memories/b.md", file_text="b\n"),
    )
    assert tool.expect(reply) == 2
    blocks = [b for b in reply.content if b.type == "tool_use" and b.name == "memory"]
    for block in blocks:
        tool.call(block.input)
    tool.call(dict(blocks[0].input, path="/memories/c.md"))  # not a block of the message: no id
    calls = git(store, "log", "-3", "--format=%s|%(trailers:key=Gitmem-Tool-Call,valueonly,separator=)").splitlines()
    assert calls == ["create c.md|", "create b.md|toolu_b", "create a.md|toolu_a"]

    results = [tool.run_tool_use(b) for b in blocks]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_a",
        "content": "Error: File /memories/a.md already exists",
        "is_error": True,
    }
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}


def test_the_sdk_tool_runner_drives_the_backend(tool: GitMemoryTool, store: GitFileStore) -> None:
    replies = [
        message(
            use("toolu_01", command="create", path="/memories/prefs.md", file_text="Reply in French.\n"),
            use("toolu_02", command="view", path="/memories/../secrets"),
        ),
        message({"type": "text", "text": "Noted."}, stop="end_turn"),
    ]
    requests: list[dict[str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.content))
        return httpx2.Response(200, json=replies[len(requests) - 1].model_dump(mode="json"))

    client = Anthropic(
        api_key="test", base_url="http://model.test", http_client=httpx2.Client(transport=httpx2.MockTransport(answer))
    )
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-5-5",
        max_tokens=512,
        tools=[tool],
        messages=[{"role": "user", "content": "I prefer French."}],
    )
    for reply in runner:
        tool.expect(reply)
    assert len(requests) == 2
    assert requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = requests[1]["messages"][-1]["content"]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": "File created successfully at: /memories/prefs.md",
    }
    assert results[1]["tool_use_id"] == "toolu_02" and results[1]["is_error"] is True
    assert (
        git(store, "log", "-1", "--format=%(trailers:key=Gitmem-Tool-Call,valueonly,separator=)").strip() == "toolu_01"
    )


class InterferingBatch(Interfering):
    """Like :class:`Interfering`, for a store that moves and deletes folders in one commit."""

    def __init__(self, store: GitFileStore, change: Any) -> None:
        super().__init__(store, change, 1)
        self.batch = store.sync

    def move_many(self, pairs: Sequence[tuple[str, str, str]], *, origin: Origin | None = None) -> list[str]:
        self._interfere(pairs[1][0])
        return self.batch.move_many(pairs, origin=origin)

    def delete_many(self, items: Sequence[tuple[str, str]], *, origin: Origin | None = None) -> None:
        self._interfere(items[1][0])
        self.batch.delete_many(items, origin=origin)

    def apply(self, edits: Sequence[Edit], **kwargs: Any) -> Applied:
        return self.batch.apply(edits, **kwargs)


def test_a_concurrent_edit_in_a_folder_being_renamed_moves_nothing(store: GitFileStore) -> None:
    for name in ("a", "b", "c"):
        store.sync.write(f"box/{name}.md", f"{name}\n", expected=None)
    tool = GitMemoryTool(InterferingBatch(store, lambda text: text + "edited meanwhile\n"), origin=ORIGIN)
    before = commits(store)
    message = refused(tool, Rename(command="rename", old_path="/memories/box", new_path="/memories/crate"))
    assert "/memories/box/b.md changed" in message and "nothing was moved" in message
    assert [(e.path, store.sync.read(e.path).text) for e in store.sync.list()] == [
        ("box/a.md", "a\n"),
        ("box/b.md", "b\nedited meanwhile\n"),
        ("box/c.md", "c\n"),
    ], "every file stays where it was, the edit kept"
    assert commits(store) == before + 1, "only the other writer's commit"


@pytest.mark.parametrize("command", [Delete(command="delete", path="/memories/box"), "clear"])
def test_a_concurrent_edit_in_a_folder_being_deleted_deletes_nothing(store: GitFileStore, command: Any) -> None:
    for name in ("a", "b", "c"):
        store.sync.write(f"box/{name}.md", f"{name}\n", expected=None)
    tool = GitMemoryTool(InterferingBatch(store, lambda text: text + "edited meanwhile\n"), origin=ORIGIN)
    head = store.sync.head()
    with pytest.raises(ToolError) as caught:
        tool.clear_all_memory() if command == "clear" else tool.execute(command)
    message = str(caught.value.content)
    assert "/memories/box/b.md changed after it was read" in message and "nothing under" in message
    assert [e.path for e in store.sync.list()] == ["box/a.md", "box/b.md", "box/c.md"]
    assert store.sync.log(limit=1)[0].origin.run_id == "other", "no commit of ours after the other writer's"
    assert store.sync.log(limit=2)[1].commit == head


def test_a_folder_delete_goes_on_when_a_file_was_deleted_meanwhile(store: GitFileStore) -> None:
    for name in ("a", "b", "c"):
        store.sync.write(f"box/{name}.md", f"{name}\n", expected=None)
    other = GitFileStore.open(store.path).sync

    class Vanishing(InterferingBatch):
        def delete_many(self, items: Sequence[tuple[str, str]], *, origin: Origin | None = None) -> None:
            if self.left:
                self.left = 0
                other.delete("box/b.md", expected=other.read("box/b.md").version)
            self.batch.delete_many(items, origin=origin)

    tool = GitMemoryTool(Vanishing(store, lambda text: text), origin=ORIGIN)
    before = commits(store)
    assert run(tool, Delete(command="delete", path="/memories/box"), "toolu_rm") == "Successfully deleted /memories/box"
    assert store.sync.list() == []
    assert commits(store) == before + 2, "the other writer's delete, then ours of the rest"


# --- the async tool, and stores other than git ------------------------------------------


def test_the_async_tool_runs_the_same_commands(store: GitFileStore) -> None:
    tool = AsyncGitMemoryTool(store, origin=ORIGIN)

    async def script() -> list[str]:
        out = []
        reply = message(use("toolu_as", command="create", path="/memories/a.md", file_text="one\n"))
        tool.expect(reply)
        block = reply.content[0]
        assert block.type == "tool_use"
        out.append(str(await tool.call(block.input)))
        with tool.tool_use("toolu_as2"):
            out.append(
                await tool.str_replace(
                    StrReplace(command="str_replace", path="/memories/a.md", old_str="one", new_str="1")
                )
            )
        out.append(str(await tool.execute(View(command="view", path="/memories/a.md"))))
        result = await tool.run_tool_use(block)
        out.append(str(result.get("is_error")))
        with pytest.raises(ToolError):
            await tool.execute(Delete(command="delete", path="/memories_backup/a.md"))
        out.append(await tool.rename(Rename(command="rename", old_path="/memories/a.md", new_path="/memories/b.md")))
        out.append(await tool.delete(Delete(command="delete", path="/memories/b.md")))
        return out

    assert asyncio.run(script()) == [
        "File created successfully at: /memories/a.md",
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\t1\n     2\t",
        "Here's the content of /memories/a.md with line numbers:\n     1\t1\n     2\t",
        "True",
        "Successfully renamed /memories/a.md to /memories/b.md",
        "Successfully deleted /memories/b.md",
    ]
    calls = git(store, "log", "-4", "--format=%(trailers:key=Gitmem-Tool-Call,valueonly,separator=)").split()
    assert calls == ["toolu_as2", "toolu_as"], "rename and delete ran outside a tool use: no tool call recorded"


def test_any_file_store_works_behind_the_sync_tool() -> None:
    memory = InMemoryFileStore()
    tool = GitMemoryTool(memory)
    run(tool, Create(command="create", path="/memories/a.md", file_text="x\n"))
    assert run(tool, View(command="view", path="/memories/a.md")).endswith("     1\tx\n     2\t")
    assert memory.read("a.md").text == "x\n"


def test_the_async_tool_renames_a_folder_in_one_commit(store: GitFileStore) -> None:
    for name in ("a", "b"):
        store.sync.write(f"box/{name}.md", f"{name}\n", expected=None)
    tool = AsyncGitMemoryTool(store, origin=ORIGIN)
    before = commits(store)

    async def rename() -> str:
        with tool.tool_use("toolu_amv"):
            return await tool.rename(Rename(command="rename", old_path="/memories/box", new_path="/memories/crate"))

    assert asyncio.run(rename()) == "Successfully renamed /memories/box to /memories/crate"
    assert commits(store) == before + 1
    assert [e.path for e in store.sync.list()] == ["crate/a.md", "crate/b.md"]
    assert store.sync.log(limit=1)[0].origin.tool_call_id == "toolu_amv"


def test_a_store_without_batches_renames_a_folder_file_by_file() -> None:
    memory = InMemoryFileStore()
    for name in ("a", "b"):
        memory.write(f"box/{name}.md", f"{name}\n", expected=None)
    plain = ForwardingFileStore(memory)  # the contract only: no move_many / delete_many
    tool = GitMemoryTool(plain)
    assert run(tool, Rename(command="rename", old_path="/memories/box", new_path="/memories/crate")) == (
        "Successfully renamed /memories/box to /memories/crate"
    )
    assert [op for op, _ in memory.origins[-2:]] == ["move", "move"], "one change per file"
    assert run(tool, Delete(command="delete", path="/memories/crate")) == "Successfully deleted /memories/crate"
    assert [op for op, _ in memory.origins[-2:]] == ["delete", "delete"]
    assert memory.list() == []


def test_the_in_memory_store_renames_a_folder_in_one_change() -> None:
    memory = InMemoryFileStore()
    for name in ("a", "b"):
        memory.write(f"box/{name}.md", f"{name}\n", expected=None)
    tool = GitMemoryTool(memory)
    run(tool, Rename(command="rename", old_path="/memories/box", new_path="/memories/crate"))
    assert [op for op, _ in memory.origins] == ["create", "create", "move"]
    assert [e.path for e in memory.list()] == ["crate/a.md", "crate/b.md"]


@pytest.mark.parametrize(
    "bad",
    [
        {"command": "str_replace", "path": "/memories/a.md", "old_str": 5, "new_str": "x"},
        {"command": "insert", "path": "/memories/a.md", "insert_line": "1", "insert_text": "x"},
        {"command": "view", "path": "/memories", "view_range": "12"},
        {"command": "view", "path": "/memories", "view_range": [1, 2, 3]},
        {"command": "create", "path": "/memories/b.md"},
        {"command": "teleport", "path": "/memories/a.md"},
        {"path": "/memories/a.md"},
        "view /memories",
    ],
)
def test_every_command_is_checked_against_its_schema_before_it_runs(tmp_path: Path, bad: object) -> None:
    """The SDK builds commands unchecked; the backend refuses a malformed one with a ToolError and writes nothing."""
    store = Root(tmp_path / "root").mount("claude", create=True)
    tool = GitMemoryTool(store)
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "hello\n"})
    head = store.sync.head()
    with pytest.raises(ToolError, match="Invalid command"):
        tool.call(bad)
    with pytest.raises(ToolError, match="Invalid command"):
        asyncio.run(AsyncGitMemoryTool(store).call(bad))
    assert store.sync.head() == head


def test_a_refused_replace_of_a_common_text_takes_time_linear_in_the_file() -> None:
    """Every occurrence's line is named in one pass: a 512 KiB file of 260k matches answers
    at once (counting each line number from the top took minutes: quadratic in the file)."""
    memory = InMemoryFileStore(FileFormat(max_file_bytes=1 << 20))
    tool = GitMemoryTool(memory)
    tool.call({"command": "create", "path": "/memories/a.txt", "file_text": "a\n" * (1 << 18)})
    started = time.thread_time()  # CPU: a loaded machine does not stretch it
    message = refused(tool, StrReplace(command="str_replace", path="/memories/a.txt", old_str="a", new_str="b"))
    assert time.thread_time() - started < 5.0
    assert message.startswith("No replacement was performed. Multiple occurrences of old_str `a` in lines: 1, 2, 3,")
    assert memory.read("a.txt").text == "a\n" * (1 << 18)
