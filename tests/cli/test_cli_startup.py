"""Startup stays light: `--help`, `ls` and `cat` load no library they do not use.

Agents and scripts call the CLI in loops, so import time is paid on every call.
What is imported is checked here (it cannot flake); how long it takes is measured
by bench/bench_startup.py against `git cat-file`, never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import gitmem
from gitmem.adapters.cli.commandtable import COMMANDS

#: Libraries the CLI must load only in the commands that use them.
HEAVY = (
    "pygit2",
    "whoosh",
    "dulwich",
    "pydantic",
    "mcp",
    "anthropic",
    "rich",
    "asyncio",
    "yaml",
    "watchdog",
    "numpy",
    "regex",
    "signal",
)
#: gitmem's own engines, which the quick read path of `ls` and `cat` (gitmem.quickread) does without.
ENGINES = (
    "gitmem.gitstore",
    "gitmem.git.repo",
    "gitmem.git.loose",
    "gitmem.git.packwrite",
    "gitmem.git.treeedit",
    "gitmem.git.merge",
    "gitmem.git.review",
    "gitmem.git.rewrite",
    "gitmem.git.pushcheck",
    "gitmem.index",
    "gitmem.grep",
    "gitmem.store",
    "gitmem.tools",
    "gitmem.recall",
    "gitmem.durable",
    "gitmem.secrets",
)

PROBE = """
import json, sys
from gitmem.adapters.cli import cli
try:
    cli.main(sys.argv[1:], prog_name="gitmem")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""

#: The same through the entry point, which tries the quick path (gitmem.adapters.cli.quick) first.
ENTRY = """
import json, sys
from gitmem.adapters.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def modules(root: Path, *args: str, probe: str = PROBE) -> set[str]:
    """Every module a fresh process holds after running ``gitmem ARGS`` (read from its ``sys.modules``)."""
    done = subprocess.run(
        [sys.executable, "-c", probe, "--root", str(root), *args], capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def heavy(held: set[str]) -> set[str]:
    return {m.split(".")[0] for m in held} & set(HEAVY)


def engines(held: set[str]) -> set[str]:
    return {e for e in ENGINES for m in held if m == e or m.startswith(e + ".")}


def loaded(root: Path, *args: str) -> set[str]:
    return heavy(modules(root, *args))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("startup")
    from click.testing import CliRunner

    from gitmem.adapters.cli import cli

    runner = CliRunner()
    assert runner.invoke(cli, ["--root", str(root), "init", "user"]).exit_code == 0
    text = "---\ndescription: tea\n---\nlikes tea\n"
    assert runner.invoke(cli, ["--root", str(root), "write", "user", "a.md", "--create"], input=text).exit_code == 0
    return root


def test_help_and_version_load_no_heavy_library(root: Path) -> None:
    assert loaded(root, "--help") == set()
    assert loaded(root, "--version") == set()
    assert loaded(root, "ls", "--help") == set()
    assert loaded(root, "ls") == set()  # a usage error


def test_ls_and_cat_read_main_without_pygit2_or_the_engines(root: Path) -> None:
    # ls reads each file's frontmatter description: yaml only for frontmatter beyond `key: text` lines.
    held = {args: modules(root, *args) for args in (("ls", "user"), ("cat", "user", "a.md"), ("--help",))}
    assert heavy(held["ls", "user"]) == set()
    assert heavy(held["cat", "user", "a.md"]) == set()
    assert loaded(root, "cat", "user", "a.md", "--json") == set()
    for args, names in held.items():
        assert engines(names) == set(), args


#: The click-free modules every click command prints through (the quick path uses them too).
SHARED = {
    "gitmem.adapters.cli.commandtable",
    "gitmem.adapters.cli.origin",
    "gitmem.adapters.cli.output",
    "gitmem.adapters.cli.reads",
    "gitmem.adapters.cli.roothelp",
}


#: What the interpreter holds before any gitmem code runs (site, and .pth files such as an editable install's).
AT_START: set[str] = set(
    json.loads(
        subprocess.run(
            [sys.executable, "-c", "import json, sys; print(json.dumps(sorted(sys.modules)))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
)


def test_the_entry_point_runs_the_quick_forms_without_click(root: Path) -> None:
    for args in (("ls", "user"), ("cat", "user", "a.md"), ("--json", "cat", "user", "nope.md"), ("ls", "user", "--json")):
        held = modules(root, *args, probe=ENTRY)
        assert not {m for m in held if m == "click" or m.startswith("click.")}, args
        assert "gitmem.adapters.cli.app" not in held, args
        # gitmem.root names its folders without pathlib (an editable install's finder loads it at start).
        assert "pathlib" not in held - AT_START, args
        # Objects are checked with CPython's own SHA-1: loading OpenSSL (hashlib) costs more than the hashing.
        assert "_hashlib" not in held - AT_START, args
        # Values are plain frozen classes and types are the type checker's: building dataclasses
        # (with inspect) and loading typing cost a CLI call ~10 ms before it does anything.
        assert {"typing", "dataclasses", "inspect"} & (held - AT_START) == set(), args
        assert {m.split(".")[0] for m in held} & set(HEAVY) == set(), args
        assert engines(held) == set(), args
    held = subprocess.run(
        [sys.executable, "-c", ENTRY, "--help"], capture_output=True, text=True, check=True
    ).stderr.strip().splitlines()[-1]
    assert '"click"' not in held and '"gitmem.adapters.cli.files"' not in held
    assert '"dataclasses"' not in held and '"gitmem.fileformat"' not in held  # the help page needs no rules
    # A form the quick path leaves to click: click parses it (and the store reads the run's view).
    assert "click" in modules(root, "ls", "user", "--run", "r1", probe=ENTRY)


def test_a_command_loads_only_its_own_module(root: Path) -> None:
    commands = {m for m in modules(root, "cat", "user", "a.md") if m.startswith("gitmem.adapters.cli.")}
    assert commands == {"gitmem.adapters.cli.app", "gitmem.adapters.cli.files"} | SHARED
    every = {m for m in modules(root, "--help") if m.startswith("gitmem.adapters.cli.")}
    assert every == {"gitmem.adapters.cli.app"} | SHARED | {f"gitmem.adapters.cli.{m}" for m in COMMANDS}


def test_the_command_table_names_every_command_and_its_module() -> None:
    import click

    from gitmem.adapters.cli import cli

    names = cli.list_commands(click.Context(cli))  # imports every command module
    assert sorted(cli.lazy) == names
    for name in names:
        command = cli.commands[name]
        assert command.callback is not None
        assert command.callback.__module__ == cli.lazy[name], name


def test_reads_the_quick_path_leaves_to_the_store_open_it(root: Path) -> None:
    # An older revision and a run's view are the store's: pygit2 loads, and the answer is right.
    assert "pygit2" in loaded(root, "cat", "user", "a.md", "--rev", "main")
    assert "pygit2" in loaded(root, "ls", "user", "--run", "r1")


def test_the_package_exports_every_name_lazily() -> None:
    for name in gitmem.__all__:
        assert getattr(gitmem, name) is not None, name
    assert set(gitmem._LAZY) == set(gitmem.__all__) - {"__version__"}
    with pytest.raises(AttributeError):
        _ = gitmem.no_such_name


def test_the_session_cli_default_mount_is_the_session_layers() -> None:
    from gitmem.adapters.cli import session as session_cli
    from gitmem.session.location import DEFAULT_MOUNT

    assert session_cli.DEFAULT_MOUNT == DEFAULT_MOUNT


def test_the_session_cli_memory_types_are_the_session_layers() -> None:
    from gitmem.adapters.cli import session as session_cli
    from gitmem.session.items import MEMORY_TYPES

    assert session_cli.MEMORY_TYPES == MEMORY_TYPES


#: What a read that opens the store (pygit2) still does without: the write engine's pool, processes, the ledger.
NOT_FOR_READS = (
    "subprocess",
    "signal",
    "concurrent.futures",
    "logging",
    "secrets",
    "gitmem.git.erasures",
    "gitmem.index",
    "whoosh",
    "asyncio",
    "gitmem.git.packwrite",  # the pack writer and its tree editor are a write's
    "gitmem.git.treeedit",
    "gitmem.git.packfold",
    "gitmem.grep",  # a search's
)


def test_log_and_blame_load_the_store_but_not_what_only_writes_and_git_calls_need(root: Path) -> None:
    """log and blame open the store (pygit2 loads), yet take no writer lock, fsync nothing and
    read no index: the fsync pool, secrets, the erasure ledger and Whoosh load only when a
    command does that work. log, show, diff and changes run no git process either; blame asks
    ``git blame`` (libgit2's blame grows with the memory), so subprocess is what it adds."""
    for args in (
        ("log", "user"),
        ("blame", "user", "a.md"),
        ("log", "user", "--json"),
        ("show", "user", "main", "a.md"),
        ("diff", "user", "main"),
        ("changes", "user"),
    ):
        held = modules(root, *args)
        assert "pygit2" in held, args
        git_call = {"subprocess", "signal", "logging"} if args[0] == "blame" else set()
        assert {m for m in NOT_FOR_READS if m in held} - git_call == set(), args
        if args[0] != "changes":  # the history commands build no file command's options
            assert "gitmem.adapters.cli.files" not in held, args
    # A path's log follows it through the ledger of erased paths: that one loads it.
    assert "gitmem.git.erasures" in modules(root, "log", "user", "a.md")


def test_first_grep_of_a_mount_without_an_index_loads_neither_pygit2_nor_whoosh(tmp_path: Path) -> None:
    """A fresh clone's grep is answered through the peek (gitmem.quickread.search): no store, no
    pygit2, no whoosh (and its asyncio); so is a grep with a small index (git grep reads it faster
    than a new process opens the index); with a large index, or for a run, the store answers."""
    from gitmem.index.mount import INLINE_DOCS
    from gitmem.model import Edit
    from gitmem.root import Root

    root = Root(tmp_path)
    store = root.mount("big", create=True).sync
    store.apply([Edit(f"n/{i:03}.md", f"note {i}\n" + ("zeppelin\n" if i % 9 == 0 else "")) for i in range(INLINE_DOCS + 20)])
    held = modules(tmp_path, "grep", "big", "zeppelin", probe=ENTRY)
    assert {m.split(".")[0] for m in held} & {"pygit2", "whoosh", "asyncio", "dulwich"} == set()
    assert engines(held) <= {"gitmem.index", "gitmem.grep"}
    assert "gitmem.index.engine" not in held and "gitmem.gitstore" not in held
    assert not {m for m in held if m == "click" or m.startswith("click.")}  # the quick path parsed it
    assert "gitmem.adapters.cli.app" not in held
    assert store.index_status().state == "missing"  # a grep starts no indexer
    store.rebuild_index()
    held = modules(tmp_path, "grep", "big", "zeppelin", probe=ENTRY)
    assert {m.split(".")[0] for m in held} & {"pygit2", "whoosh", "asyncio", "dulwich"} == set()
    assert "gitmem.index.mount" not in held and "gitmem.index.lock" not in held  # no indexer to start


def test_recall_commands_load_no_write_rules_once_their_snapshot_is_saved(tmp_path: Path) -> None:
    """A recall that loads a current snapshot writes nothing: no tempfile (snapshot writes), no secret
    rules (checks of writes); durable recall loads no change-set parser, staging rules or approvals.
    None of the three loads an event loop, the review or merge engine, or Whoosh."""
    from click.testing import CliRunner

    from gitmem.adapters.cli import cli
    from gitmem.durable import DurableRepository
    from tests.durable.support import NS, change, create

    DurableRepository.open(tmp_path, "facts", create=True).apply(change("k1", create("n1", "tea", status="active")))
    runner = CliRunner()
    base = ["--root", str(tmp_path)]
    for args in (
        ["records", "init", "people"],
        ["records", "add", "people", "prefers green tea", "-n", "u1"],
        ["session", "remember", "the build needs python 3.11", "--memory-dir", str(tmp_path / "s")],
    ):
        done = runner.invoke(cli, [*base, *args])
        assert done.exit_code == 0, (args, done.output)
    writes = {"tempfile", "gitmem.secrets"}
    durable_writes = {"gitmem.durable.changes", "gitmem.durable.rules", "gitmem.durable.approval", "gitmem.durable.binding"}
    for args in (
        ("records", "search", "people", "tea", "-n", "u1"),
        ("session", "recall", "python build", "--memory-dir", str(tmp_path / "s")),
        ("durable", "recall", "facts", "tea", "-n", NS.tenant, NS.principal, NS.scope),
    ):
        modules(tmp_path, *args, probe=ENTRY)  # the first saves the snapshot (tempfile is a writer's)
        held = modules(tmp_path, *args, probe=ENTRY) - AT_START
        assert "gitmem.recall.snapshot" in held and "gitmem.gitstore" in held, args  # ...which the second loads
        assert held & (writes | durable_writes) == set(), args
        unwanted = {"asyncio", "whoosh", "gitmem.review", "gitmem.git.review", "gitmem.git.merge", "gitmem.index"}
        assert {m for m in held if m in unwanted or m.split(".")[0] in unwanted} == set(), args


def test_find_of_a_current_index_loads_whoosh_but_not_pygit2(tmp_path: Path) -> None:
    """A find whose index is stamped with the head reads it over the peek (gitmem.quickread.find):
    Whoosh ranks, no store, no pygit2, no click; a lagging index is the store's to catch up."""
    from gitmem.model import Edit
    from gitmem.root import Root

    root = Root(tmp_path)
    store = root.mount("big", create=True).sync
    store.apply([Edit(f"n/{i:03}.md", f"note {i}\n" + ("zeppelin\n" if i % 9 == 0 else "")) for i in range(30)])
    store.rebuild_index()
    held = {m.split(".")[0] for m in modules(tmp_path, "find", "big", "zeppelin", probe=ENTRY)}
    assert "whoosh" in held and not held & {"pygit2", "click", "dulwich"}
    store.apply([Edit("n/new.md", "zeppelin\n")])
    assert "pygit2" in {m.split(".")[0] for m in modules(tmp_path, "find", "big", "zeppelin", probe=ENTRY)}
