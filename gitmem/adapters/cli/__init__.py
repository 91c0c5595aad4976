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
    commandtable.py  every command's module and summary, the long-running ones
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
commands it registers on ``cli`` and their summaries) to :data:`.commandtable.COMMANDS`. Every command on
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitmem.adapters.cli.app import GitmemGroup


def main() -> None:
    """The ``gitmem`` entry point: the quick path when it understands the command line, else click."""
    from gitmem.adapters.cli.quick import run

    code = run(sys.argv[1:], entry=True)
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

__all__ = ["cli", "main"]
