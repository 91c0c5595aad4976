"""``gitmem serve``: every memory under the root over git smart HTTP and MCP (``gitmem token`` manages its tokens).

See :mod:`gitmem.adapters.http_server` (git), :mod:`gitmem.adapters.http_front` (the waitress loop, base path), :mod:`gitmem.adapters.mcp_http` (``/mcp``)
and :mod:`gitmem.adapters.tokens` (who a token speaks for).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gitmem.adapters.cli.app import State, cli, common_options, emit, pass_state, say


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0: any free one).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Token file, its format named by its extension: *.toml holds [[token]] tables (principal, sha256, "
    "memories, access; see `gitmem token`), *.json the same as JSON, any other name a plain list of tokens with "
    "full access; $GITMEM_TOKENS adds plain ones. "
    "A token is needed to push and for MCP, and to clone or fetch unless --public-read.",
)
@click.option("--public-read", is_flag=True, help="Let anyone clone and fetch; without it reads need a token too.")
@click.option(
    "--max-push-bytes",
    type=click.IntRange(min=0),
    metavar="N",
    help="Refuse a push whose pack is larger than N bytes [default: 64 MiB; 0: no limit].",
)
@click.option("--no-mcp", is_flag=True, help="Do not serve MCP over streamable HTTP at /mcp.")
@click.option(
    "--mcp-sessions",
    type=click.IntRange(min=1),
    default=64,  # mcp_http.DEFAULT_MAX_SESSIONS (not imported: it would load the mcp SDK for every command)
    show_default=True,
    metavar="N",
    help="MCP sessions kept per token; a new one past N closes that token's least recently used idle session.",
)
@click.option(
    "--mcp-streams",
    type=click.IntRange(min=0),
    default=16,  # mcp_http.DEFAULT_MAX_STREAMS
    show_default=True,
    metavar="N",
    help="MCP event streams (GET /mcp: change notifications) open at once in each worker process; each holds a "
    "thread of its own.",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="ORIGIN",
    help="A web origin (scheme://host[:port]) whose pages may send requests (repeatable). "
    "Requests without an Origin header (git, MCP clients) always pass; other origins get 403.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Another name the server answers to in the Host header (repeatable), e.g. a reverse proxy's. "
    "On a loopback address only loopback names are answered otherwise (403).",
)
@click.option(
    "--base-path",
    default="",
    metavar="PATH",
    help="Serve every route under PATH (e.g. /memories: PATH/NAME.git, PATH/mcp, PATH/health), as a reverse "
    "proxy forwards it; requests outside it get 404.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    metavar="N",
    help="Worker processes serving the port [default: this machine's cores]; a supervisor replaces one that "
    "dies and stops them all on SIGTERM or Ctrl-C.",
)
@common_options
@pass_state
def serve(
    state: State,
    host: str,
    port: int,
    token_file: Path | None,
    public_read: bool,
    max_push_bytes: int | None,
    no_mcp: bool,
    mcp_sessions: int,
    mcp_streams: int,
    allow_origins: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    base_path: str,
    workers: int | None,
) -> None:
    """Serve every memory under the root: git over HTTP (clone, fetch, checked pushes) and MCP at /mcp.

    Requests from web pages are refused (403) unless their origin is allowed, and on
    a loopback address the Host header must name the server: DNS rebinding cannot
    turn a page into a client.
    """
    try:
        import waitress  # noqa: F401  (only checks the optional dependency is there)
    except ImportError:
        from gitmem.config import install_hint

        raise click.ClickException(f"gitmem serve needs waitress: {install_hint('serve')}") from None
    from gitmem.adapters.http_front import normalize_base_path
    from gitmem.adapters.http_server import load_tokens
    from gitmem.adapters.origins import normalize_origin
    from gitmem.adapters.receive_pack import DEFAULT_MAX_PUSH_BYTES
    from gitmem.adapters.serve_workers import Listening, default_workers
    from gitmem.adapters.serve_workers import serve as run
    from gitmem.errors import MemoryStoreError

    for origin in allow_origins:
        if normalize_origin(origin) is None:
            raise click.BadParameter(
                f"{origin!r} is not an origin: give scheme://host[:port], such as https://app.example",
                param_hint="--allow-origin",
            )
    try:
        base = normalize_base_path(base_path)
    except MemoryStoreError as exc:
        raise click.BadParameter(exc.message, param_hint="--base-path") from None
    limit = DEFAULT_MAX_PUSH_BYTES if max_push_bytes is None else max_push_bytes or None
    mcp = not no_mcp and _has_mcp()

    tokens = load_tokens(token_file)
    root = state.root
    processes = workers or default_workers()

    def ready(server: Listening) -> None:
        mounts = root.mounts()
        url = _public_url(server.host, server.port) + base
        emit(
            {
                "url": url,
                "root": str(root.path),
                "mounts": mounts,
                "public_read": public_read,
                "tokens": len(tokens),
                "principals": tokens.principals(),
                "max_push_bytes": limit,
                "clone_url": f"{url.replace('://', '://<principal>:<token>@', 1)}/<name>.git",
                "mcp_url": f"{url}/mcp" if mcp else None,
                "mcp_sessions": mcp_sessions if mcp else None,
                "base_path": base or "/",
                "workers": processes,
            },
            lambda: _describe(url, root.path, mounts, public_read, len(tokens), mcp, processes),
        )
        sys.stdout.flush()

    run(
        root,
        host=host,
        port=port,
        tokens=tokens,
        public_read=public_read,
        max_push_bytes=limit,
        mcp=mcp,
        mcp_sessions=mcp_sessions,
        mcp_streams=mcp_streams,
        on_ready=ready,
        allowed_origins=allow_origins,
        allowed_hosts=allow_hosts,
        base_path=base,
        workers=processes,
    )


def _has_mcp() -> bool:
    try:
        import mcp as _sdk  # noqa: F401  (the optional dependency of /mcp)
    except ImportError:
        return False
    return True


def _public_url(host: str, port: int) -> str:
    """The URL others use: a wildcard listen address is shown as this machine's name."""
    import socket

    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _describe(url: str, root: Path, mounts: list[str], public_read: bool, tokens: int, mcp: bool, workers: int) -> None:
    plural = "es" if workers != 1 else ""
    say(f"serving {root} at {url} ({len(mounts)} memories now, {workers} worker process{plural}); Ctrl-C stops")
    auth = url.replace("://", "://<principal>:<token>@", 1)
    shown = mounts[:10]
    for name in shown:
        say(f"  git clone {url if public_read else auth}/{name}.git")
    if len(mounts) > len(shown):
        say(f"  ... and {len(mounts) - len(shown)} more: git clone {auth}/<name>.git")
    if not mounts:
        say(f"  git clone {auth}/<name>.git")
    say("  (the token is the HTTP password; the user name is not checked)")
    if mcp:
        say(f"  MCP (streamable HTTP): {url}/mcp with header 'Authorization: Bearer <token>'")
    else:
        say("  MCP over HTTP is off (--no-mcp, or the mcp extra is not installed)")
    reads = "anyone can clone" if public_read else "clones need a token"
    pushes = f"{tokens} access token(s)" if tokens else "no tokens configured, so every push and MCP request is refused"
    say(f"  {reads}; {pushes}")
    say("  plain HTTP: put a TLS reverse proxy in front of it before tokens cross a network")
