"""Hostile input answers alike everywhere: the CLI's ``--json``, the agent tools, the git store and its twin.

Each case is one call made four ways on the same seeded memory (a fresh copy per way):
``gitmem --json ...``, the tool through the registry (as ``gitmem mcp`` runs it), the git
store (its error named by :func:`gitmem.errors.situation`, as the surfaces name it) and the
in-memory twin. All must give the same outcome (success, or the same code) and leave the
same files at the same versions. ``test_error_codes.py`` covers one case per code over a
real MCP client; this covers the paths, versions and contents a hostile caller sends.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitmem import FileStore, InMemoryFileStore
from gitmem.adapters.cli import cli
from gitmem.errors import MemoryStoreError, situation
from gitmem.root import Root
from gitmem.tools import FileMemoryCapability, FileMount
from gitmem.tools.registry import ToolRegistry

STALE = "0" * 40
SEED = {"f.md": "hello\nhello\n", "dir/f.md": "in dir\n", "A.md": "upper\n"}
DEEP = "/".join(["d"] * 130) + "/f"


def _version(store: FileStore, path: str) -> str:
    try:
        return store.read(path).version
    except MemoryStoreError:
        return STALE


@dataclass(frozen=True)
class Case:
    name: str
    cli: tuple[str, ...]
    tool: tuple[str, dict[str, Any]]
    python: Callable[[FileStore], object]
    stdin: bytes = b""


#: Paths the view tool lists as a folder (its ``path`` names a file or a folder), where ``cat`` and
#: ``read`` take files only: the three agree on files, and on folders the tool is the one to list.
FOLDERS = ("", "a/", "dir", "dir/")


def _path_cases(path: str, label: str) -> list[Case]:
    reads = [Case(f"read {label}", ("cat", "user", path), ("view", {"path": path}), lambda s: s.read(path))]
    return reads * (path not in FOLDERS) + [
        Case(
            f"create {label}",
            ("write", "user", path, "--create"),
            ("create", {"path": path, "content": "t\n"}),
            lambda s: s.write(path, "t\n", expected=None),
            stdin=b"t\n",
        ),
        Case(
            f"delete {label}",
            ("rm", "user", path, "--expect", STALE),
            ("delete", {"path": path, "version": STALE}),
            lambda s: s.delete(path, expected=STALE),
        ),
        Case(
            f"move onto {label}",
            ("mv", "user", "f.md", path),
            ("move", {"source": "f.md", "destination": path}),
            lambda s: s.move("f.md", path, expected=_version(s, "f.md")),
        ),
        Case(
            f"move from {label}",
            ("mv", "user", path, "new.md"),
            ("move", {"source": path, "destination": "new.md"}),
            lambda s: s.move(path, "new.md", expected=_version(s, path)),
        ),
    ]


PATHS = {
    "empty": "",
    "dot-dot": "../x.md",
    "inner dot-dot": "a/../b.md",
    "NUL": "a\x00b.md",
    "trailing slash": "a/",
    "leading slash": "/a.md",
    "double slash": "a//b.md",
    ".git": ".git/config",
    ".gitmodules": ".gitmodules",
    "256 bytes": "x" * 256,
    "255 bytes": "x" * 255,
    "130 deep": DEEP,
    "surrogate": "a\udcff.md",
    "newline": "a\nb.md",
    "backslash": "a\\b.md",
    "bidi": "\u202e.md",
    "a folder": "dir",
    "a folder/": "dir/",
    "through a file": "f.md/x",
    "missing": "nope.md",
    "case twin": "a.md",
    "existing": "A.md",
    "trailing space": "a.md ",
}
TEXTS = {
    "empty": b"",
    "NUL": b"x\x00y",
    "past the cap": b"x" * (64 * 1024 + 1),
    "broken frontmatter": b"---\nbad: [\n---\n",
    "not UTF-8": b"a\xffb",
    "credential": b"aws AKIAABCDEFGHIJKLMNOP\n",
    "CRLF": b"a\r\nb",
}


def _text_cases(label: str, data: bytes) -> list[Case]:
    text = data.decode("utf-8", "surrogateescape")
    return [
        Case(
            f"create text {label}",
            ("write", "user", "new.md", "--create"),
            ("create", {"path": "new.md", "content": text}),
            lambda s: s.write("new.md", text, expected=None),
            stdin=data,
        ),
        Case(
            f"replace text {label}",
            ("write", "user", "f.md", "--expect", "__f.md__"),
            ("edit", {"path": "f.md", "old_string": "hello\nhello\n", "new_string": text}),
            lambda s: s.write("f.md", text, expected=_version(s, "f.md")),
            stdin=data,
        ),
    ]


CASES = [case for label, path in PATHS.items() for case in _path_cases(path, label)]
CASES += [case for label, data in TEXTS.items() for case in _text_cases(label, data)]
CASES += [
    Case(
        "move onto itself",
        ("mv", "user", "f.md", "f.md"),
        ("move", {"source": "f.md", "destination": "f.md"}),
        lambda s: s.move("f.md", "f.md", expected=_version(s, "f.md")),
    ),
    Case(
        "case-only rename",
        ("mv", "user", "A.md", "a.md"),
        ("move", {"source": "A.md", "destination": "a.md"}),
        lambda s: s.move("A.md", "a.md", expected=_version(s, "A.md")),
    ),
    Case(
        "delete at a malformed version",
        ("rm", "user", "f.md", "--expect", "zz"),
        ("delete", {"path": "f.md", "version": "zz"}),
        lambda s: s.delete("f.md", expected="zz"),
    ),
    Case(
        "delete at an upper-case version",
        ("rm", "user", "f.md", "--expect", "__F.MD__"),
        ("delete", {"path": "f.md", "version": "__F.MD__"}),
        lambda s: s.delete("f.md", expected=_version(s, "f.md").upper()),
    ),
    Case(
        "grep a regex that does not compile",
        ("grep", "user", "(", "-E"),
        ("grep", {"pattern": "(", "regex": True}),
        lambda s: s.search("(", regex=True),  # type: ignore[attr-defined]
    ),
    Case(
        "grep an empty pattern",
        ("grep", "user", ""),
        ("grep", {"pattern": ""}),
        lambda s: s.search(""),  # type: ignore[attr-defined]
    ),
    Case(
        "grep a literal holding a newline",
        ("grep", "user", "hello\nhello"),
        ("grep", {"pattern": "hello\nhello"}),
        lambda s: s.search("hello\nhello"),  # type: ignore[attr-defined]
    ),
    Case(
        "grep under a missing folder",
        ("grep", "user", "e", "--path", "nope/"),
        ("grep", {"pattern": "e", "path": "nope/"}),
        lambda s: s.search("e", path="nope/"),  # type: ignore[attr-defined]
    ),
    Case(
        "grep under a bad folder",
        ("grep", "user", "e", "--path", "../x/"),
        ("grep", {"pattern": "e", "path": "../x/"}),
        lambda s: s.search("e", path="../x/"),  # type: ignore[attr-defined]
    ),
]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("parity") / "root"
    store = Root(folder).mount("user", create=True).sync
    for path, text in SEED.items():
        store.write(path, text, expected=None)
    return folder


def _copy(seeded: Path, where: Path) -> Root:
    shutil.copytree(seeded, where, symlinks=True)
    return Root(where)


def _state(store: FileStore) -> list[tuple[str, str]]:
    return sorted((e.path, e.version) for e in store.list())


def _outcome(call: Callable[[], object]) -> tuple[str, ...]:
    try:
        call()
    except MemoryStoreError as exc:
        return ("error", situation(exc).code)
    return ("ok",)


def _cli(root: Root, case: Case) -> tuple[str, ...]:
    store = root.mount("user").sync
    args = tuple(
        _version(store, "f.md") if a == "__f.md__" else _version(store, "f.md").upper() if a == "__F.MD__" else a
        for a in case.cli
    )
    done = CliRunner().invoke(cli, ["--root", str(root.path), "--json", *args], input=case.stdin)
    if done.exit_code == 0:
        return ("ok",)
    assert done.exit_code == 1, (case.name, done.output)
    return ("error", str(json.loads(done.stdout)["error"]))


def _tool(root: Root, case: Case) -> tuple[str, ...]:
    tool, arguments = case.tool
    store = root.mount("user").sync
    if arguments.get("version") == "__F.MD__":
        arguments = {**arguments, "version": _version(store, "f.md").upper()}
    registry = ToolRegistry.of(FileMemoryCapability([FileMount("user", store, "write")]))
    return _outcome(lambda: registry.run(f"memory_file_{tool}", {"memory": "user", **arguments}))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_hostile_call_answers_alike_on_every_surface_and_both_stores(
    seeded: Path, tmp_path: Path, case: Case
) -> None:
    twin = InMemoryFileStore()
    for path, text in SEED.items():
        twin.write(path, text, expected=None)
    cli_root, tool_root, git_root = (_copy(seeded, tmp_path / name) for name in ("cli", "tool", "git"))
    git_store = git_root.mount("user").sync
    outcomes = {
        "cli": _cli(cli_root, case),
        "tool": _tool(tool_root, case),
        "git store": _outcome(lambda: case.python(git_store)),
        "twin": _outcome(lambda: case.python(twin)),
    }
    assert len(set(outcomes.values())) == 1, outcomes
    states = {
        "cli": _state(cli_root.mount("user").sync),
        "tool": _state(tool_root.mount("user").sync),
        "git store": _state(git_store),
        "twin": _state(twin),
    }
    assert all(state == states["twin"] for state in states.values()), states
