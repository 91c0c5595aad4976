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

from gitmem.adapters.cli.app import (
    FOLDER,
    State,
    cli,
    common_options,
    emit,
    origin_options,
    pass_state,
    root_option,
    say,
    usage_error,
)

if TYPE_CHECKING:  # gitmem.tools loads the tool schemas; only `gitmem mcp` and `gitmem tools` need them
    from gitmem.tools import FileMemoryCapability
    from gitmem.tools.durable import DurableTools
    from gitmem.tools.mounts import Access
    from gitmem.tools.records import RecordMemoryCapability
    from gitmem.tools.session import SessionTools


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


def parse_tools(spec: str | None) -> list[str] | None:
    """``view,grep,history`` -> the names; every name must be some kind's tool."""
    if spec is None:
        return None
    from gitmem.tools.catalog import reviewer_tool_names, unknown_tool_names

    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise usage_error("--tools names no tool")
    unknown = unknown_tool_names(names)
    if unknown:
        raise usage_error(f"--tools: no tool is called {', '.join(unknown)} (see `gitmem tools`)")
    reviewer = reviewer_tool_names(names)
    if reviewer:
        raise usage_error(
            f"--tools: {', '.join(reviewer)} is offered only by `gitmem serve`, to admin tokens "
            "(a reviewer with a principal); approve locally with `gitmem durable approve`"
        )
    return names


def known_tools(names: list[str] | None, kind: str) -> list[str] | None:
    """The names of ``names`` that are tools of ``kind`` (all of its tools when ``names`` is None)."""
    if names is None:
        return None
    from gitmem.tools.catalog import kind_names

    return kind_names(names, kind)


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
@click.option(
    "--tools",
    "tool_names",
    metavar="NAMES",
    help="Offer only these tools, comma-separated: short names (view,grep,history), tool names "
    "(memory_file_search) or permission ids (memory.file.restore). Default: every tool.",
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
    tool_names: str | None,
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

    files, records, session, durable = surface(
        state, mounts, always_load, namespace, session_dir, durable_name, durable_namespace, tool_names
    )
    server = MemoryMcpServer(
        files,
        records=records,
        origin=state.origin,
        cursor_file=cursor_file,
        watch_root=None if no_watch else state.root,
        session=session,
        durable=durable,
    )
    try:
        anyio.run(server.run_stdio)
    except KeyboardInterrupt:  # Ctrl-C when started by hand: stop quietly, like a closed stdin
        pass


def surface(
    state: State,
    mounts: tuple[str, ...],
    always_load: tuple[str, ...],
    namespace: str,
    session_dir: Path | None,
    durable_name: str | None,
    durable_namespace: tuple[str, str, str] | None,
    tool_names: str | None,
) -> tuple[FileMemoryCapability | None, RecordMemoryCapability | None, SessionTools | None, DurableTools | None]:
    """The memory kinds the options ask for, each narrowed by ``--tools``: what ``mcp`` serves and ``tools`` lists."""
    from gitmem.records import RecordStore
    from gitmem.tools import FileMemoryCapability, FileMount
    from gitmem.tools.records import RecordMemoryCapability, RecordMount

    narrow = parse_tools(tool_names)
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
                raise usage_error(f"--mount {name}: {not_by_mount(name, kind)}")
        except (ValueError, TypeError) as exc:
            raise usage_error(f"--mount {name}: {exc}") from None
    for offer in offered:
        _warn_missing_loads(offer.name, offer.store, offer.always_load)
    session = None
    if session_dir is not None:
        from gitmem.session import open_session_memory
        from gitmem.tools.session import SessionTools

        session = SessionTools(open_session_memory(session_dir), tools=narrow)  # MemoryStoreError -> exit 1
    durable = None
    if (durable_name is None) != (durable_namespace is None):
        raise usage_error("--durable NAME and --durable-namespace TENANT PRINCIPAL SCOPE go together")
    if durable_name is not None and durable_namespace is not None:
        from gitmem.durable import DurableBinding, DurableRepository, Namespace
        from gitmem.tools.durable import DurableTools

        repository = DurableRepository.open(root.path, durable_name, create=True)
        durable = DurableTools(DurableBinding(repository, Namespace(*durable_namespace)), tools=narrow)
    files = FileMemoryCapability(offered, tools=known_tools(narrow, "file")) if offered else None
    records = RecordMemoryCapability(record_mounts, tools=known_tools(narrow, "record")) if record_mounts else None
    return files, records, session, durable


def not_by_mount(name: str, kind: str) -> str:
    """Why memory ``name`` of ``kind`` is not offered through ``--mount``, and how it is offered instead."""
    if kind == "durable":
        return f"a durable memory is offered with --durable {name} --durable-namespace TENANT PRINCIPAL SCOPE"
    if kind == "session":
        return "a session memory is offered with --session-memory DIRECTORY (the folder that holds it)"
    return f"a {kind} memory has no MCP tools"


def servable(state: State) -> tuple[tuple[str, ...], list[dict[str, str]]]:
    """The memories under the root that ``--mount`` can offer, and the others with how each is offered."""
    names: list[str] = []
    others: list[dict[str, str]] = []
    for name in state.root.mounts():
        kind = state.root.mount(name).sync.kind
        if kind in ("file", "record"):
            names.append(name)
        else:
            others.append({"memory": name, "kind": kind, "how": not_by_mount(name, kind)})
    return tuple(names), others


@cli.command()
@click.option(
    "--mount",
    "mounts",
    multiple=True,
    metavar="NAME[:read|:write]",
    help="A memory whose tools to list (repeatable). Default: every file and record memory under the root, "
    "with write access (the others are named, with the option that offers them).",
)
@click.option("--session-memory", "session_dir", type=FOLDER, help="Also list the memory_session_* tools.")
@click.option("--namespace", default="default", show_default=True, help="The namespace of the record memories.")
@click.option("--durable", "durable_name", metavar="NAME", help="Also list the durable tools of durable memory NAME.")
@click.option("--durable-namespace", nargs=3, metavar="TENANT PRINCIPAL SCOPE", help="The namespace of --durable.")
@click.option("--tools", "tool_names", metavar="NAMES", help="Only these tools, as for `gitmem mcp --tools`.")
@click.option("--schemas", is_flag=True, help="With --json, include each tool's description and input schema.")
@common_options
@pass_state
def tools(
    state: State,
    mounts: tuple[str, ...],
    session_dir: Path | None,
    namespace: str,
    durable_name: str | None,
    durable_namespace: tuple[str, str, str] | None,
    tool_names: str | None,
    schemas: bool,
) -> None:
    """List the agent tools `gitmem mcp` would offer with the same options, and what their definitions cost.

    Each tool's name, permission id (what a host's permission rules name), kind,
    effect, the memories it may be used on, and the characters of its definition.
    """
    from gitmem.tools.registry import ToolRegistry

    others: list[dict[str, str]] = []
    if not mounts:
        mounts, others = servable(state)
    kinds = surface(state, mounts, (), namespace, session_dir, durable_name, durable_namespace, tool_names)
    registry = ToolRegistry.of(*kinds)
    rows = []
    for t in registry:
        row: dict[str, object] = {
            "name": t.name,
            "permission": t.permission,
            "kind": t.kind,
            "effect": t.effect,
            "memories": list(t.memories),
            "chars": t.size(),
        }
        if schemas:
            row |= {"description": t.description, "input_schema": t.input_schema}
        rows.append(row)
    payload = {
        "tools": rows,
        "chars": registry.size(),
        "instructions_chars": len(registry.instructions),
        "not_listed": others,
    }

    def text() -> None:
        width = max((len(t.name) for t in registry), default=0)
        for t in registry:
            where = f"  ({', '.join(t.memories)})" if t.memories else ""
            say(f"{t.name:<{width}}  {t.effect:<5}  {t.permission}{where}")
        count = f"{len(registry)} tool{'' if len(registry) == 1 else 's'}"
        say(f"{count}, {registry.size()} characters of definitions")
        for other in others:
            say(f"not listed: {other['memory']} ({other['kind']}): {other['how']}")

    emit(payload, text)


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
