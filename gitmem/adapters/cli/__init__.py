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

and add ``"<name>": ("serve",)`` (the module and the commands it registers on
``cli``) to :data:`COMMANDS` below. Every command on
``cli`` (and on groups made with ``@cli.group()``) gets the shared error handling:
a :class:`~gitmem.errors.MemoryStoreError` becomes exit code 1 with a message
naming its code. Import optional dependencies (mcp, waitress, ...) inside the
command function, so ``gitmem --help`` works without them. Document the command in
``docs/cli.md``; ``tests/cli/test_cli_docs.py`` fails until you do.

A module is imported only when one of its commands runs (or when all are listed,
for ``--help``): every CLI call is a new process, and building the options of
every command cost each call more than reading a file
(``tests/cli/test_cli_startup.py`` keeps this table true).
"""

from __future__ import annotations

from types import MappingProxyType

from gitmem.adapters.cli.app import cli, main

#: Modules under this package and the commands each registers on ``cli`` (help lists commands alphabetically).
COMMANDS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "files": ("init", "mounts", "ls", "cat", "write", "edit", "mv", "rm", "changes"),
        "history": ("log", "show", "diff", "blame", "restore", "revert"),
        "search": ("grep", "find", "index"),
        "admin": ("purge", "forget", "fsck", "gc", "demo"),
        "serve": ("serve",),
        "hooks": ("hooks",),
        "mcp": ("mcp",),
        "watch": ("watch",),
        "remote": ("remote", "push", "pull"),
        "review": ("review",),
        "manage": ("import", "export", "delete", "status", "config"),
        "durable": ("durable",),
        "session": ("session",),
        "records": ("records",),
    }
)
COMMAND_MODULES: tuple[str, ...] = tuple(COMMANDS)

cli.lazy = MappingProxyType({name: f"{__name__}.{module}" for module, names in COMMANDS.items() for name in names})

__all__ = ["COMMANDS", "COMMAND_MODULES", "cli", "main"]
