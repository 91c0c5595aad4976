"""``gitmem mcp``: serve memories to an MCP client over stdio (see :mod:`gitmem.adapters.mcp_server`).

An MCP client (Claude Desktop, an IDE, an agent framework) starts this command as a
subprocess and talks JSON-RPC over its stdin and stdout, so nothing but protocol
may go to stdout: problems with the arguments are reported on stderr before the
server starts, with exit code 2 (usage) or 1 (a memory cannot be opened).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gitmem.adapters.cli.app import FOLDER, State, cli, origin_options, pass_state, root_option, say, usage_error

if TYPE_CHECKING:  # gitmem.tools loads the tool schemas; only `gitmem mcp` itself needs them
    from gitmem.tools.mounts import Access


def parse_mount(spec: str) -> tuple[str, Access]:
    """``user`` or ``user:write`` → ``("user", "write")``; ``docs:read`` → ``("docs", "read")``."""
    name, sep, access = spec.partition(":")
    if not sep:
        return name, "write"
    if access == "read":
        return name, "read"
    if access == "write":
        return name, "write"
    raise usage_error(f"--mount {spec!r}: the access after ':' is 'read' or 'write'")


def parse_always_load(specs: tuple[str, ...], names: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, path = spec.partition(":")
        if not sep or not path:
            raise usage_error(f"--always-load {spec!r}: write NAME:PATH, such as user:README.md")
        if name not in names:
            raise usage_error(f"--always-load {spec!r}: {name!r} is not one of the --mount memories")
        out.setdefault(name, []).append(path)
    return out


@cli.command()
@click.option(
    "--mount",
    "mounts",
    multiple=True,
    required=True,
    metavar="NAME[:read|:write]",
    help="A memory to offer (repeatable); ':read' offers only view and grep. Default access: write.",
)
@click.option(
    "--always-load",
    "always_load",
    multiple=True,
    metavar="NAME:PATH",
    help="A file whose content is part of every full context of memory NAME (repeatable).",
)
@click.option(
    "--cursors",
    "cursor_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSON file keeping where the last memory_context prompt ended, so the next session gets only changes.",
)
@click.option(
    "--session-memory",
    "session_dir",
    type=FOLDER,
    help="Also offer the memory_session_* tools over the session memory in this folder (created if needed).",
)
@click.option(
    "--namespace",
    default="default",
    show_default=True,
    help="Whose records the record memories among the --mount memories show (one namespace per server).",
)
@click.option(
    "--no-watch",
    is_flag=True,
    help="Do not watch the memories: no resource subscriptions, no notifications when a memory changes.",
)
@click.option(
    "--durable",
    "durable_name",
    metavar="NAME",
    help="Also offer durable_recall and durable_propose over durable memory NAME (needs --durable-namespace).",
)
@click.option(
    "--durable-namespace",
    nargs=3,
    metavar="TENANT PRINCIPAL SCOPE",
    help="The one namespace of --durable the tools may read and propose into.",
)
@root_option
@origin_options
@pass_state
def mcp(
    state: State,
    mounts: tuple[str, ...],
    always_load: tuple[str, ...],
    cursor_file: Path | None,
    session_dir: Path | None,
    namespace: str,
    no_watch: bool,
    durable_name: str | None,
    durable_namespace: tuple[str, str, str] | None,
) -> None:
    """Serve memories to an MCP client over stdio: the memory_file_* and memory_record_* tools.

    File memories get the file tools and their context; record memories (made
    with `gitmem records init`) the record tools and a recall prompt, for the
    records of --namespace. Write mounts that do not exist yet are created as file
    memories; read mounts must exist. While serving, the file memories are
    watched, and a client subscribed to memory://NAME/context is told when memory
    NAME changes, whoever changed it.
    """
    try:
        import mcp as _sdk  # noqa: F401  (only checks the optional dependency is there)
    except ImportError:
        from gitmem.config import install_hint

        raise click.ClickException(f"gitmem mcp needs the mcp SDK: {install_hint('mcp')}") from None
    import anyio

    from gitmem.adapters.mcp_server import MemoryMcpServer
    from gitmem.records import RecordStore
    from gitmem.tools import FileMemoryCapability, FileMount
    from gitmem.tools.records import RecordMemoryCapability, RecordMount

    parsed = [parse_mount(spec) for spec in mounts]
    names = [name for name, _ in parsed]
    if len(set(names)) != len(names):
        raise usage_error(f"--mount names a memory twice: {names}")
    loads = parse_always_load(always_load, names)
    root = state.root
    offered: list[FileMount] = []
    record_mounts: list[RecordMount] = []
    for name, access in parsed:
        store = root.mount(name, create=access == "write").sync  # MemoryStoreError -> exit 1
        kind = store.kind
        try:
            if kind == "record":
                if name in loads:
                    raise usage_error(f"--always-load {name}:...: {name!r} is a record memory, it has no files to load")
                record_mounts.append(RecordMount(name, RecordStore(store, namespace), access))
            elif kind == "file":
                offered.append(FileMount(name, store, access, always_load=tuple(loads.get(name, ()))))
            else:
                raise usage_error(f"--mount {name}: a {kind} memory cannot be served over MCP yet")
        except (ValueError, TypeError) as exc:
            raise usage_error(f"--mount {name}: {exc}") from None
    for offer in offered:
        _warn_missing_loads(offer.name, offer.store, offer.always_load)
    session = None
    if session_dir is not None:
        from gitmem.session import open_session_memory
        from gitmem.session.tools import SessionTools

        session = SessionTools(open_session_memory(session_dir))  # MemoryStoreError -> exit 1
    durable = None
    if (durable_name is None) != (durable_namespace is None):
        raise usage_error("--durable NAME and --durable-namespace TENANT PRINCIPAL SCOPE go together")
    if durable_name is not None and durable_namespace is not None:
        from gitmem.durable import DurableBinding, DurableRepository, Namespace
        from gitmem.durable.tools import DurableTools

        repository = DurableRepository.open(root.path, durable_name, create=True)
        durable = DurableTools(DurableBinding(repository, Namespace(*durable_namespace)))
    server = MemoryMcpServer(
        FileMemoryCapability(offered) if offered else None,
        records=RecordMemoryCapability(record_mounts) if record_mounts else None,
        origin=state.origin,
        cursor_file=cursor_file,
        watch_root=None if no_watch else root,
        session=session,
        durable=durable,
    )
    try:
        anyio.run(server.run_stdio)
    except KeyboardInterrupt:  # Ctrl-C when started by hand: stop quietly, like a closed stdin
        pass


def _warn_missing_loads(name: str, store: Any, paths: tuple[str, ...]) -> None:
    """Say on stderr (stdout is the MCP stream) which ``--always-load`` files memory ``name`` lacks.

    Not refused: the file may be written while serving, and is loaded from then on. But a
    typo would otherwise be silently ignored for the whole session.
    """
    if not paths:
        return
    present = {entry.path for entry in store.list()}
    for path in paths:
        if path not in present:
            say(
                f"warning: --always-load {name}:{path}: memory {name!r} has no file {path!r} (yet); "
                "it is loaded once it is written",
                err=True,
            )
