"""``gitmem review``: the review gate and its proposals (see :mod:`gitmem.review`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from gitmem.adapters.cli.app import (
    State,
    acting_principal,
    cli,
    common_options,
    emit,
    origin_options,
    pass_state,
    say,
    short,
    to_json,
    usage_error,
)
from gitmem.adapters.cli.remote import report_refused
from gitmem.errors import if_found

if TYPE_CHECKING:
    from gitmem.review import Proposal


def _proposal_json(p: Proposal) -> dict[str, object]:
    from gitmem.history import git_time

    return {
        "run": p.run,
        "ref": p.ref,
        "head": p.head,
        "base": p.base,
        "commits": p.commits,
        "paths": list(p.paths),
        "principals": list(p.principals),
        "authors": [{"who": who, "commits": n} for who, n in p.authors],
        "log": [{"commit": c, "author": who, "summary": summary} for c, who, summary in p.log],
        "updated": git_time(p.updated).isoformat(),
    }


def _who(p: Proposal) -> str:
    """``alice (2), claude (1)``: each commit credited to its own principal or git author."""
    return ", ".join(f"{who} ({n})" for who, n in p.authors) or "-"


@cli.group()
def review() -> None:
    """Send agent writes to proposal branches, and approve or reject them."""


@review.command("enable")
@click.argument("name")
@common_options
@pass_state
def review_enable(state: State, name: str) -> None:
    """Turn the review gate of memory NAME on: writes with a run id go to proposals."""
    from gitmem import review as api

    api.enable(state.store(name), True)
    emit(
        {"memory": name, "review": True},
        f"{name}: writes carrying a run id now go to refs/heads/proposals/<run>; "
        f"see them with `gitmem review list {name}`",
    )


@review.command("disable")
@click.argument("name")
@common_options
@pass_state
def review_disable(state: State, name: str) -> None:
    """Turn the review gate of memory NAME off (open proposals stay until approved or rejected)."""
    from gitmem import review as api

    api.enable(state.store(name), False)
    emit({"memory": name, "review": False}, f"{name}: runs write to main again")


@review.command("list")
@click.argument("name")
@common_options
@pass_state
def review_list(state: State, name: str) -> None:
    """List the open proposals of memory NAME."""
    from gitmem import review as api
    from gitmem.history import git_time

    store = state.store(name)
    found = api.proposals(store)
    gate = api.enabled(store)

    def text() -> None:
        say(f"review gate: {'on' if gate else 'off'}")
        if not found:
            say("no open proposals")
        for p in found:
            who = _who(p)
            when = git_time(p.updated).strftime("%Y-%m-%d %H:%M")
            say(f"{p.run}\t{short(p.head)}\t{p.commits} commits\t{len(p.paths)} files\tby {who}\t{when}")

    emit({"memory": name, "review": gate, "proposals": [_proposal_json(p) for p in found]}, text)


@review.command("show")
@click.argument("name")
@click.argument("proposal_id", metavar="ID")
@common_options
@pass_state
def review_show(state: State, name: str, proposal_id: str) -> None:
    """Show what proposal ID (the run id) of memory NAME changes: a diff against main where it forked."""
    from gitmem import review as api

    store = state.store(name)
    found = api.proposal(store, proposal_id)
    diffs = api.diff(store, proposal_id)
    draft = api.conflict(store, proposal_id)
    sides: list[dict[str, object]] = []
    if draft is not None:
        for path in draft.unresolved:
            ours, theirs = _side(store, draft.ours, path), _side(store, draft.theirs, path)
            sides.append({"path": path, "ours": ours, "theirs": theirs})

    def text() -> None:
        say(f"proposal {found.run} ({found.ref}) at {short(found.head)}, {found.commits} commits by {_who(found)}")
        say(f"forked from main at {short(found.base)}")
        for commit, author, summary in found.log:
            say(f"  {short(commit)}  {author}  {summary}")
        for d in diffs:
            say(d.patch.rstrip("\n") if d.patch else f"{d.status} {d.path}", multiline=bool(d.patch))
        if draft is not None:
            say(f"conflict with {draft.remote}/main ({short(draft.theirs)}): {len(sides)} file(s) unresolved")
            for side in sides:
                for label in ("ours", "theirs"):
                    body = side[label]
                    say(f"--- {side['path']} ({label}{', deleted' if body is None else ''})")
                    if isinstance(body, str):
                        say(body.rstrip("\n"), multiline=True)

    payload: dict[str, object] = {"memory": name, "proposal": _proposal_json(found), "diff": to_json(diffs)}
    if draft is not None:
        payload["conflict"] = {"remote": draft.remote, "ours": draft.ours, "theirs": draft.theirs, "unresolved": sides}
    emit(payload, text)


def _side(store: object, rev: str, path: str) -> str | None:
    """The text of ``path`` at ``rev`` (one side of a conflict), ``None`` when that side deleted it."""
    file = if_found(store.read, path, rev)  # type: ignore[attr-defined]
    return None if file is None else str(file.text)


@review.command("resolve")
@click.argument("name")
@click.argument("proposal_id", metavar="ID")
@click.argument("path")
@click.option("--ours", "side", flag_value="ours", help="Keep this memory's version (main's).")
@click.option("--theirs", "side", flag_value="theirs", help="Take the remote's version.")
@click.option(
    "--file",
    "merged",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=str),
    help="Write the merged text from this file ('-': stdin).",
)
@common_options
@pass_state
def review_resolve(state: State, name: str, proposal_id: str, path: str, side: str | None, merged: str | None) -> None:
    """Settle file PATH of conflict proposal ID: --ours, --theirs, or --file with the merged text.

    A conflict proposal is what `gitmem pull NAME REMOTE --propose` opens when
    both sides changed a file. Once every file is settled, `gitmem review
    approve NAME ID` lands the merge on main (a merge commit of main and the
    remote's main), and `gitmem push NAME REMOTE` sends it as a fast-forward.
    """
    from gitmem import review as api

    if (side is None) == (merged is None):
        raise usage_error("give exactly one of --ours, --theirs or --file MERGED")
    text = None
    if merged is not None:
        text = _read_merged(merged)
    draft = api.resolve(state.store(name), proposal_id, path, side=side, text=text)
    left = list(draft.unresolved)
    how = side or "merged text"
    then = (
        f"still unresolved: {', '.join(left)}"
        if left
        else f"approve it with `gitmem review approve {name} {proposal_id}`"
    )
    emit(
        {"memory": name, "run": proposal_id, "path": path, "resolved": how, "unresolved": left, "head": draft.commit},
        f"{name}: {path} settled ({how}) in {proposal_id}; {then}",
    )


def _read_merged(source: str) -> str:
    """The merged text: stdin for ``-``, else a regular file read through the one local-file gate."""
    from gitmem.adapters.cli.output import STDIN_LIMIT, read_stdin
    from gitmem.errors import MemoryStoreError
    from gitmem.localfile import read_local_strict

    if source == "-":  # the one stdin reader: its bound checked before the bytes are decoded
        return read_stdin(what="the merged text")
    try:  # the same bound: far above any memory file; the store's own size rule decides
        data = read_local_strict(source, STDIN_LIMIT)
    except OSError as exc:  # the opener refuses planted files itself; a path the system cannot open is this
        raise MemoryStoreError("unavailable", f"cannot read {source}: {exc.strerror or exc}") from None
    if data is None:
        raise MemoryStoreError("not_found", f"{source} does not exist")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryStoreError("invalid_file", f"the merged text is not UTF-8 (at byte {exc.start})") from exc


@review.command("approve")
@click.argument("name")
@click.argument("proposal_id", metavar="ID")
@origin_options
@common_options
@pass_state
def review_approve(state: State, name: str, proposal_id: str) -> None:
    """Merge proposal ID into main of memory NAME (a merge commit with Gitmem-Approved-By) and delete it."""
    from gitmem import review as api

    approver = acting_principal(state, "approves")
    try:
        result = api.approve(state.store(name), proposal_id, approver=approver, origin=state.origin)
    except api.MergeRefused as exc:
        if any(r.startswith("unresolved: ") for r in exc.reasons):
            hint = (
                f"main was not changed; settle each file with `gitmem review resolve {name} {proposal_id} PATH "
                "--ours | --theirs | --file MERGED` (see both versions with `gitmem review show`), then approve again"
            )
        else:
            hint = (
                f"main and the proposal were not changed; edit {', '.join(exc.paths[:3]) or 'the files'} on main or "
                f"reject the proposal (`gitmem review reject {name} {proposal_id}`)"
            )
        report_refused(state, exc, hint)
    emit(
        {
            "memory": name,
            "run": proposal_id,
            "approved_by": approver,
            "result": result.kind,
            "before": result.before,
            "after": result.after,
            "paths": list(result.paths),
        },
        f"{name}: proposal {proposal_id} approved by {approver}; main {short(result.before)} -> {short(result.after)}",
    )


@review.command("reject")
@click.argument("name")
@click.argument("proposal_id", metavar="ID")
@click.option("--reason", help="Why, in one line; kept with the record of the rejection.")
@origin_options
@common_options
@pass_state
def review_reject(state: State, name: str, proposal_id: str, reason: str | None) -> None:
    """Delete proposal ID of memory NAME, recording who rejected it (refs/gitmem/reviews); main is not touched."""
    from gitmem import review as api

    rejecter = acting_principal(state, "rejects")
    head = api.reject(state.store(name), proposal_id, rejecter=rejecter, reason=reason)
    emit(
        {"memory": name, "run": proposal_id, "rejected": head, "rejected_by": rejecter, "reason": reason},
        f"{name}: proposal {proposal_id} ({short(head)}) rejected by {rejecter}",
    )
