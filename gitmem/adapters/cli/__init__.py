"""The ``gitmem`` command line: parse, make one call into the core, render.

Layout::

    app.py       the root group ``cli``, shared options (--json, --root, --principal,
                 --run), error -> exit code mapping, rendering and progress helpers
    files.py     init, mounts, ls, cat, write, edit, mv, rm, changes
    history.py   log, show, diff, blame, restore, revert
    search.py    grep, find, index status|rebuild
    admin.py     forget, purge, fsck, gc, demo
    records.py   records init|add|list|search|update|rm|purge|log (record memory)
    serve.py, hooks.py, mcp.py, watch.py, remote.py, review.py   (collaboration and agents)
    durable.py   durable memory: apply, show, log, recall, activate, approve
    session.py   session memory: remember, recall, recent, tags, prune, delete

Adding a command module (serve, hooks, watch, mcp, remote, review, ...) takes two
steps: write ``gitmem/adapters/cli/<name>.py`` that registers on the root group ::

    from gitmem.adapters.cli.app import cli, common_options, emit, pass_state

    @cli.command()
    @click.argument("name")
    @common_options
    @pass_state
    def serve(state, name): ...

and add ``"<name>"`` to :data:`COMMAND_MODULES` below (one line). Every command on
``cli`` (and on groups made with ``@cli.group()``) gets the shared error handling:
a :class:`~gitmem.errors.MemoryStoreError` becomes exit code 1 with a message
naming its code. Import optional dependencies (mcp, waitress, ...) inside the
command function, so ``gitmem --help`` works without them. Document the command in
``docs/cli.md``; ``tests/cli/test_cli_docs.py`` fails until you do.
"""

from __future__ import annotations

import importlib

from gitmem.adapters.cli.app import cli, main

#: Modules under this package that register commands on ``cli`` (help lists commands alphabetically).
COMMAND_MODULES: tuple[str, ...] = (
    "files",
    "history",
    "search",
    "admin",
    "serve",
    "hooks",
    "mcp",
    "watch",
    "remote",
    "review",
    "durable",
    "session",
    "records",
)

for _module in COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["COMMAND_MODULES", "cli", "main"]
