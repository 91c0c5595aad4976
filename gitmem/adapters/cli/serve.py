"""``gitmem serve``: every memory under the root over git smart HTTP (see :mod:`gitmem.adapters.http_server`)."""

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
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="File of access tokens, one per line ('#' starts a comment); $GITMEM_TOKENS adds more. "
    "A token is needed to push, and to clone or fetch unless --public-read.",
)
@click.option("--public-read", is_flag=True, help="Let anyone clone and fetch; without it reads need a token too.")
@click.option(
    "--max-push-bytes",
    type=click.IntRange(min=0),
    metavar="N",
    help="Refuse a push whose pack is larger than N bytes [default: 64 MiB; 0: no limit].",
)
@common_options
@pass_state
def serve(
    state: State, host: str, port: int, token_file: Path | None, public_read: bool, max_push_bytes: int | None
) -> None:
    """Serve every memory under the root to git over HTTP: clone, fetch, and checked pushes."""
    try:
        import waitress  # noqa: F401  (only checks the optional dependency is there)
    except ImportError:
        raise click.ClickException("gitmem serve needs waitress: pip install 'gitmem[serve]'") from None
    from gitmem.adapters.http_server import GitHttpServer, load_tokens
    from gitmem.adapters.http_server import serve as run
    from gitmem.adapters.receive_pack import DEFAULT_MAX_PUSH_BYTES

    limit = DEFAULT_MAX_PUSH_BYTES if max_push_bytes is None else max_push_bytes or None

    tokens = load_tokens(token_file)
    root = state.root

    def ready(server: GitHttpServer) -> None:
        mounts = root.mounts()
        emit(
            {
                "url": server.url,
                "root": str(root.path),
                "mounts": mounts,
                "public_read": public_read,
                "tokens": len(tokens),
                "max_push_bytes": limit,
            },
            lambda: _describe(server.url, root.path, mounts, public_read, len(tokens)),
        )
        sys.stdout.flush()

    run(root, host=host, port=port, tokens=tokens, public_read=public_read, max_push_bytes=limit, on_ready=ready)


def _describe(url: str, root: Path, mounts: list[str], public_read: bool, tokens: int) -> None:
    say(f"serving {root} at {url}/<name>.git ({len(mounts)} memories now); Ctrl-C stops")
    for name in mounts:
        say(f"  git clone {url}/{name}.git")
    reads = "anyone can clone" if public_read else "clones need a token"
    pushes = f"{tokens} access token(s)" if tokens else "no tokens configured, so every push is refused"
    say(f"  {reads}; {pushes}")
