"""The ``gitmem`` command line: parse, make one call into the core, render.

Layout::

    app.py       the root group ``cli``, shared options (--json, --root, --principal,
                 --run), error -> exit code mapping, rendering and progress helpers
    files.py     init, mounts, ls, cat, write, edit, mv, rm, changes
    history.py   log, show, diff, blame, restore, revert
    search.py    grep, find, index status|rebuild
    admin.py     forget, purge, fsck, gc, demo
    manage.py    status, import, export, delete, config (a memory's way in and out, and its limits)
    records.py   records init|add|list|search|update|rm|purge|log (record memory)
    frameworks.py  sweep (expired items of a LangGraph store, gitmem.adapters.langgraph_store)
    serve.py, tokens.py, hooks.py, mcp.py, watch.py, remote.py, review.py   (collaboration and agents)
    forge.py     check (the memory rules on any git repository: a forge's CI status check)
    durable.py   durable memory: apply, show, log, recall, activate, approve
    session.py   session memory: remember, recall, recent, tags, prune, delete
    quick.py     ls, cat and --help without click (see below); output.py, reads.py and
                 roothelp.py are the click-free printing both paths share

Adding a command module (serve, hooks, watch, mcp, remote, review, ...) takes two
steps: write ``gitmem/adapters/cli/<name>.py`` that registers on the root group ::

    from gitmem.adapters.cli.app import cli, common_options, emit, pass_state

    @cli.command()
    @click.argument("name")
    @common_options
    @pass_state
    def serve(state, name): ...

and add ``"<name>": {"serve": "<the first sentence of its help>"}`` (the module, the
commands it registers on ``cli`` and their summaries) to :data:`COMMANDS` below. Every command on
``cli`` (and on groups made with ``@cli.group()``) gets the shared error handling:
a :class:`~gitmem.errors.MemoryStoreError` becomes exit code 1 with a message
naming its code. Import optional dependencies (mcp, waitress, ...) inside the
command function, so ``gitmem --help`` works without them. Document the command in
``docs/cli.md``; ``tests/cli/test_cli_docs.py`` fails until you do.

A module is imported only when one of its commands runs (or when all are listed,
for ``--help``): every CLI call is a new process, and building the options of
every command cost each call more than reading a file
(``tests/cli/test_cli_startup.py`` keeps this table true).

The simplest and most frequent calls do not load click at all: ``gitmem ls``,
``gitmem cat`` of ``main`` and ``gitmem --help`` go through :mod:`.quick`, which
hands every command line it does not fully understand to click, and prints
through the same code (:mod:`.output`, :mod:`.reads`) as the click commands.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitmem.adapters.cli.app import GitmemGroup

#: Modules under this package, the commands each registers on ``cli`` and each command's
#: summary: the first sentence of its help, which ``gitmem --help`` lists (help lists
#: commands alphabetically). The quick path prints that list without importing the modules
#: (or click); ``tests/cli/test_cli_quick.py`` holds each summary to its command's help.
COMMANDS: MappingProxyType[str, Mapping[str, str]] = MappingProxyType(
    {
        "files": {
            "init": "Create memory NAME.",
            "mounts": "List the memories under the root.",
            "ls": "List the files of memory NAME, or of one DIRECTORY.",
            "cat": "Print file PATH of memory NAME.",
            "write": "Write stdin to file PATH of memory NAME.",
            "edit": "Replace the one occurrence of --old with --new in PATH.",
            "mv": "Rename file SOURCE to DESTINATION.",
            "rm": "Delete file PATH if it is still at --expect VERSION.",
            "changes": "List the paths changed since a cursor.",
        },
        "history": {
            "log": "List changes newest first, with who made them.",
            "show": "Print file PATH as it was at revision REV.",
            "diff": "Show what changed from revision A to B (default: the head).",
            "blame": "Show which change last touched each line of PATH, and who made it.",
            "restore": "Set PATH back to its content at REV, as one new commit.",
            "revert": "Undo the change COMMIT made, as one new commit.",
        },
        "search": {
            "grep": "Print the lines that contain PATTERN, as path:line:text.",
            "find": "Rank the files that best match the words of QUERY.",
            "index": "Inspect or rebuild a memory's search index.",
        },
        "admin": {
            "purge": "Empty memory NAME and destroy its history.",
            "forget": "Erase PATH and every past version of it from all history.",
            "fsck": "Check the integrity of memory NAME (git fsck --strict).",
            "gc": "Pack the objects of memory NAME (git gc).",
            "demo": "Run two agents sharing memory NAME (default: demo).",
        },
        "serve": {
            "serve": "Serve every memory under the root: git over HTTP (clone, fetch, checked pushes) and MCP at /mcp.",
        },
        "tokens": {"token": "Tokens of `gitmem serve`: add, list, revoke, rotate; the file keeps only their SHA-256."},
        "hooks": {"hooks": "Server-side git hooks that check pushes made without gitmem serve."},
        "forge": {"check": "Check the commits of git repository REPO against the memory rules."},
        "mcp": {
            "mcp": "Serve memories to an MCP client over stdio: the memory_file_* and memory_record_* tools.",
            "tools": "List the agent tools `gitmem mcp` would offer with the same options, and what their definitions cost.",
        },
        "watch": {"watch": "Print every ref change of memories NAME..."},
        "remote": {
            "clone": "Make memory NAME from the main branch of the git repository at URL, with URL as its remote origin.",
            "remote": "Where a memory is pushed to and pulled from (git remotes of its repository).",
            "push": "Push main of memory NAME to REMOTE (default: origin); never forced.",
            "pull": "Bring main of REMOTE (default: origin) into memory NAME: fast-forward, or merge.",
        },
        "review": {"review": "Send agent writes to proposal branches, and approve or reject them."},
        "manage": {
            "import": "Copy the files of DIRECTORY into memory NAME as one commit.",
            "export": "Write every file of memory NAME to DESTINATION, a new folder or a tarball.",
            "delete": "Delete memory NAME: its repository and all its history.",
            "status": "Show the root and each memory: kind, head, size, review and index state.",
            "config": "Show or change the limits of memory NAME.",
        },
        "durable": {"durable": "Durable memory: namespaced nodes that reach a model only once activated."},
        "session": {"session": "Session memory: remember, recall and prune what agent sessions learned."},
        "records": {"records": "Record memory: short texts, recalled by what they say."},
        "frameworks": {"sweep": "Delete the expired items of LangGraph store NAME, in one commit."},
    }
)
COMMAND_MODULES: tuple[str, ...] = tuple(COMMANDS)


#: The cyclic garbage collector's first threshold during one CLI call (Python's default: 700).
#: A call is a new process that imports a few hundred modules and reads one answer: at the
#: default, the collector ran 40-80 times per read command, walking the same just-imported
#: classes and functions again and again (10-40 ms of each ``log``, ``grep`` or recall at 10k,
#: more than some commands' work), and found next to nothing to free. It still runs, after
#: every 200k new container objects, so a long command's garbage stays bounded; the
#: long-running commands (:data:`LONG_RUNNING`) go back to the default when they start.
CALL_GC_THRESHOLD = 200_000
#: Commands that serve until stopped: they collect as any Python server does.
LONG_RUNNING = frozenset({"serve", "mcp", "watch"})
#: The collector's thresholds before :func:`main` raised the first one.
DEFAULT_GC_THRESHOLDS: tuple[int, ...] = ()


def main() -> None:
    """The ``gitmem`` entry point: the quick path when it understands the command line, else click."""
    import gc

    global DEFAULT_GC_THRESHOLDS
    if not DEFAULT_GC_THRESHOLDS:  # main() run twice in one process keeps the first default
        DEFAULT_GC_THRESHOLDS = gc.get_threshold()
    gc.set_threshold(CALL_GC_THRESHOLD, *DEFAULT_GC_THRESHOLDS[1:])
    from gitmem.adapters.cli.quick import run

    code = run(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from gitmem.adapters.cli.app import main as click_main

    click_main()


def __getattr__(name: str) -> Any:
    """``cli`` (the click group) is imported on first use: the quick path runs without click."""
    if name == "cli":
        from gitmem.adapters.cli.app import cli

        globals()["cli"] = cli
        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


cli: GitmemGroup

__all__ = ["CALL_GC_THRESHOLD", "COMMANDS", "COMMAND_MODULES", "DEFAULT_GC_THRESHOLDS", "LONG_RUNNING", "cli", "main"]
