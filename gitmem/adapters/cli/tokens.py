"""``gitmem token``: the tokens of a ``gitmem serve`` token file: add, list, revoke, rotate.

Each edit replaces the file at once, so a running server follows it from its
next request (see :mod:`gitmem.adapters.tokenadmin`). ``gitmem token PRINCIPAL
--memory ...`` (no sub-command) is ``gitmem token add``, as it always was.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from gitmem.adapters.cli.app import GitmemGroup, State, cli, common_options, emit, pass_state, say

F = TypeVar("F", bound=Callable[..., Any])


class _TokenGroup(GitmemGroup):
    """``gitmem token PRINCIPAL ...`` without a sub-command means ``gitmem token add PRINCIPAL ...``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["add", *args]
        return super().parse_args(ctx, args)


_FILE_HELP = "The token file of `gitmem serve --token-file` (*.toml, *.json, or a plain list)."


def _file_option(required: bool = True) -> Callable[[F], F]:
    option: Callable[[F], F] = click.option(
        "--file",
        "--token-file",
        "token_file",
        required=required,
        envvar="GITMEM_TOKEN_FILE",
        type=click.Path(dir_okay=False, path_type=Path),
        help=_FILE_HELP + " [env: GITMEM_TOKEN_FILE]",
    )
    return option


@cli.group(cls=_TokenGroup)
def token() -> None:
    """Tokens of `gitmem serve`: add, list, revoke, rotate; the file keeps only their SHA-256.

    A running server follows its token file: every change here holds from its next request.
    """


@token.command("add")
@click.argument("principal")
@click.option(
    "--memory",
    "memories",
    multiple=True,
    required=True,
    metavar="NAME|GLOB",
    help="A memory the token reaches (repeatable): a name, or a glob such as 'team-*'.",
)
@click.option(
    "--access",
    type=click.Choice(["read", "propose", "write", "admin"]),
    default="write",
    show_default=True,
    help="read; propose (pushes and MCP writes go to proposals); write (main, unless review-gated); admin.",
)
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    help="A record namespace the token may also name, beyond its principal's own (repeatable).",
)
@click.option("--tenant", help="The tenant of its durable namespaces (default: each durable memory's name).")
@click.option("--note", help="A note kept with the entry (whose laptop, which bot), shown by `gitmem token list`.")
@_file_option(required=False)
@common_options
@pass_state
def add(
    state: State,
    principal: str,
    memories: tuple[str, ...],
    access: str,
    namespaces: tuple[str, ...],
    tenant: str | None,
    note: str | None,
    token_file: Path | None,
) -> None:
    """Mint a token for PRINCIPAL: printed once; the token file keeps only its SHA-256."""
    from gitmem.adapters.tokens import new_token, token_entries, token_entry

    grants: dict[str, Any] = {"namespaces": namespaces, "tenant": tenant}
    if token_file is None:
        secret = new_token()
        entry = token_entry(secret, principal, memories, access, note, **grants)  # type: ignore[arg-type]  # click.Choice checked it
        made = token_entries(entry, "the new entry")[0]
    else:
        from gitmem.adapters.tokenadmin import add_token
        from gitmem.adapters.tokens import toml_table

        secret, made = add_token(token_file, principal, memories, access, note, **grants)  # type: ignore[arg-type]
        entry = toml_table(made)
    from gitmem.adapters.tokenadmin import describe

    emit({"token": secret, **describe(made), "entry": entry}, lambda: _show_token(secret, made.id, entry, token_file))


@token.command("list")
@_file_option()
@common_options
@pass_state
def list_(state: State, token_file: Path) -> None:
    """List the tokens of the file: id, principal, memories, access, granted record namespaces and tenant
    (never a token or its hash)."""
    from gitmem.adapters.tokenadmin import describe, list_tokens

    rows = [describe(e) for e in list_tokens(token_file)]
    emit({"file": str(token_file), "tokens": rows}, lambda: _show_rows(rows, token_file))


@token.command("revoke")
@click.argument("who", metavar="PRINCIPAL|ID")
@_file_option()
@common_options
@pass_state
def revoke(state: State, who: str, token_file: Path) -> None:
    """Revoke every token of PRINCIPAL, or the token ID (principal:NAME or id:ID says which): refused from the
    server's next request."""
    from gitmem.adapters.tokenadmin import describe, revoke_tokens

    gone = [describe(e) for e in revoke_tokens(token_file, who)]

    def show() -> None:
        for row in gone:
            say(f"revoked {row['id']} ({row['principal'] or 'plain token'})")
        say(f"{token_file}: a running server refuses {'it' if len(gone) == 1 else 'them'} from its next request")

    emit({"file": str(token_file), "revoked": gone}, show)


@token.command("rotate")
@click.argument("who", metavar="PRINCIPAL|ID")
@_file_option()
@common_options
@pass_state
def rotate(state: State, who: str, token_file: Path) -> None:
    """Replace a token with a new one (same principal, memories, access); prints the new token once."""
    from gitmem.adapters.tokenadmin import describe, rotate_token

    done = rotate_token(token_file, who)
    row = describe(done.entry)

    def show() -> None:
        say(f"token: {done.token}")
        say("  (shown once: the server keeps only its hash)")
        say(f"replaced {done.replaced.id} with {done.entry.id} for {row['principal']}: the old token is refused "
            "from the server's next request")  # fmt: skip

    emit({"token": done.token, "replaced": done.replaced.id, **row}, show)


def _show_token(secret: str, ident: str, entry: str, token_file: Path | None) -> None:
    say(f"token: {secret}")
    say(f"  (shown once: the server keeps only its hash; its id is {ident})")
    if token_file is None:
        say("add this entry to the TOML token file of gitmem serve --token-file:")
        say(entry.rstrip("\n"), multiline=True)
    else:
        say(f"added to {token_file}; a running server accepts it from its next request")


def _show_rows(rows: list[dict[str, Any]], token_file: Path) -> None:
    if not rows:
        say(f"{token_file}: no tokens")
        return
    for row in rows:
        who = row["principal"] or "(plain: full access, no principal)"
        note = f"  # {row['note']}" if row["note"] else ""
        also = f"  namespaces: {','.join(row['namespaces'])}" if row["namespaces"] else ""
        tenant = f"  tenant: {row['tenant']}" if row["tenant"] is not None else ""
        say(f"{row['id']}  {who}  {row['access']}  {','.join(row['memories'])}{also}{tenant}{note}")
