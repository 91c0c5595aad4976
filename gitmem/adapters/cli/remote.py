"""``gitmem remote``, ``gitmem push``, ``gitmem pull``: share a memory through a hosting service."""

from __future__ import annotations

from typing import NoReturn

import click

from gitmem.adapters.cli.app import (
    EXIT_REFUSED,
    State,
    cli,
    common_options,
    emit,
    error_json,
    origin_options,
    pass_state,
    say,
    say_json,
    short,
)
from gitmem.remotes import MergeRefused


def report_refused(state: State, exc: MergeRefused, hint: str) -> NoReturn:
    """A refused merge (pull, approve): the code, every conflicting file or broken rule, what to do."""
    if state.json:
        payload = {**error_json(exc, hint), "paths": list(exc.paths), "reasons": list(exc.reasons)}
        say_json(payload)
    else:
        say(f"error [{exc.code}]: {exc.message}", err=True)
        for line in exc.reasons:
            say(f"  {line}", err=True)
        say(f"  what to do: {hint}", err=True)
    raise click.exceptions.Exit(EXIT_REFUSED)


@cli.group()
def remote() -> None:
    """Where a memory is pushed to and pulled from (git remotes of its repository)."""


@remote.command("add")
@click.argument("name")
@click.argument("remote_name", metavar="REMOTE")
@click.argument("url")
@common_options
@pass_state
def remote_add(state: State, name: str, remote_name: str, url: str) -> None:
    """Record remote REMOTE of memory NAME at URL (a hosting URL or a local path)."""
    from gitmem import remotes

    added = remotes.add(state.store(name), remote_name, url)
    emit(
        {"memory": name, "remote": added.name, "url": added.shown_url},
        f"{name}: remote {added.name} is {added.shown_url}; `gitmem push {name} {added.name}` sends main there",
    )


@remote.command("list")
@click.argument("name")
@common_options
@pass_state
def remote_list(state: State, name: str) -> None:
    """List the remotes of memory NAME (passwords in URLs are hidden)."""
    from gitmem import remotes

    found = remotes.list_remotes(state.store(name))

    def text() -> None:
        if not found:
            say(f"{name} has no remotes; add one with `gitmem remote add {name} origin URL`")
        for item in found:
            say(f"{item.name}\t{item.shown_url}")

    emit({"memory": name, "remotes": [{"name": r.name, "url": r.shown_url} for r in found]}, text)


@remote.command("remove")
@click.argument("name")
@click.argument("remote_name", metavar="REMOTE")
@common_options
@pass_state
def remote_remove(state: State, name: str, remote_name: str) -> None:
    """Forget remote REMOTE of memory NAME (nothing on the remote is touched)."""
    from gitmem import remotes

    remotes.remove(state.store(name), remote_name)
    emit({"memory": name, "removed": remote_name}, f"{name}: remote {remote_name} removed")


@cli.command()
@click.argument("name")
@click.argument("remote_name", metavar="[REMOTE]", default="origin")
@click.option("--proposals", is_flag=True, help="Also push every review proposal (refs/heads/proposals/*).")
@common_options
@pass_state
def push(state: State, name: str, remote_name: str, proposals: bool) -> None:
    """Push main of memory NAME to REMOTE (default: origin); never forced."""
    from gitmem import remotes

    pushed = remotes.push(state.store(name), remote_name, proposals=proposals)

    def text() -> None:
        for item in pushed:
            say(f"{item.ref}\t{item.status.replace('_', ' ')}\t{item.summary}")
        if not pushed:
            say("nothing to push")

    emit(
        {
            "memory": name,
            "remote": remote_name,
            "refs": [{"ref": p.ref, "status": p.status, "summary": p.summary} for p in pushed],
        },
        text,
    )


@cli.command()
@click.argument("name")
@click.argument("remote_name", metavar="[REMOTE]", default="origin")
@origin_options
@common_options
@pass_state
def pull(state: State, name: str, remote_name: str) -> None:
    """Bring main of REMOTE (default: origin) into memory NAME: fast-forward, or merge.

    What the remote brings must pass the memory's rules. When agents changed
    other files meanwhile a merge commit keeps both sides; when both sides
    changed the same file nothing changes and the files are listed.
    """
    from gitmem import remotes

    try:
        result = remotes.pull(state.store(name), remote_name, origin=state.origin)
    except MergeRefused as exc:
        if exc.code == "version_mismatch" and exc.paths:
            hint = (
                f"main was not changed; resolve it on {remote_name} (pull its main into a clone, fix "
                f"{', '.join(exc.paths[:3])}, push) or change the files here, then pull again"
            )
        elif exc.code == "version_mismatch":
            hint = f"main was not changed; {remote_name}/main shares no history with this memory"
        else:
            hint = f"main was not changed; fix the listed files on {remote_name} (rewrite the commits that add them) and pull again"
        report_refused(state, exc, hint)
    if result.kind == "up_to_date":
        message = f"{name} is up to date with {remote_name}/main ({short(result.after)})"
    else:
        how = "fast-forward" if result.kind == "fast_forward" else "merge commit"
        files = f"{len(result.paths)} file{'' if len(result.paths) == 1 else 's'} changed"
        message = f"{name}: main {short(result.before)} -> {short(result.after)} ({how}); {files}"
        for path in result.paths:
            message += f"\n  {path}"
    if result.closed:
        message += f"\nreview proposals merged upstream and closed: {', '.join(result.closed)}"
    emit(
        {
            "memory": name,
            "remote": remote_name,
            "result": result.kind,
            "before": result.before,
            "after": result.after,
            "paths": list(result.paths),
            "closed": list(result.closed),
        },
        message,
    )
