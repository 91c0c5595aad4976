"""Admin commands: purge, forget, fsck, gc, and the ``demo`` walk-through.

The destructive ones (purge, forget) erase history for good and refuse to run
without ``--yes``: that is a usage error (exit code 2), not a refusal by the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from gitmem.adapters.cli.app import (
    EXIT_REFUSED,
    State,
    cli,
    common_options,
    confirm,
    emit,
    origin_options,
    pass_state,
    progress,
    say,
    to_json,
    usage_error,
)
from gitmem.errors import MemoryStoreError

if TYPE_CHECKING:
    from gitmem.history import ObjectCounts


@cli.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Confirm: every file and all history of NAME is destroyed.")
@origin_options
@common_options
@pass_state
def purge(state: State, name: str, yes: bool) -> None:
    """Empty memory NAME and destroy its history.

    Every file and every past version is removed and the objects pruned, so git
    cannot read them back. Older cursors then answer "full resync".
    """
    confirm(yes, f"purging {name!r}")
    store = state.store(name)
    store.purge(state.origin)
    emit({"memory": name, "head": store.head(), "purged": True}, f"purged {name!r}: no files, no history")


@cli.command()
@click.argument("name")
@click.argument("path", required=False)
@click.option("--yes", is_flag=True, help="Confirm: PATH and all its past versions are erased for good.")
@click.option(
    "--from-ledger",
    "from_ledger",
    is_flag=True,
    help="Instead of PATH: forget every path holding a version the ledger names.",
)
@click.option(
    "--remotes", "on_remotes", is_flag=True, help="Then push the rewritten history to every remote and check each."
)
@origin_options
@common_options
@pass_state
def forget(state: State, name: str, path: str | None, yes: bool, from_ledger: bool, on_remotes: bool) -> None:
    """Erase PATH and every past version of it from all history.

    For content that must not survive (personal data, a leaked secret). Commits
    are rewritten, reflogs expired and objects pruned; other files keep their
    history. PATH may be a file or a folder, and names it had before a move are
    erased too. Older cursors then answer "full resync"; clones made before keep
    their copy unless --remotes reaches them: every configured remote gets the
    rewritten history (with a lease) and the erasure ledger, and is then checked
    for any ref that still reaches an erased version (exit code 1 if one does).
    Without --remotes the remotes that may still hold the text are named.
    --remotes works after the local forget too: with PATH already forgotten
    here (the erasure ledger records it), or with no PATH, only the remotes
    are reached. With --from-ledger (and no PATH), every path whose history
    holds a version the erasure ledger names is forgotten: an erasure made on
    another copy.
    """
    if from_ledger:
        if path is not None:
            raise usage_error("give PATH or --from-ledger, not both")
        confirm(yes, "forgetting what the erasure ledger names")
        with progress("forgetting what the ledger names"):
            reports = state.store(name).forget_erased(origin=state.origin)
        names = sorted({n for r in reports for n in r.names})
        emit(
            {"memory": name, "forgotten": [to_json(r) for r in reports]},
            f"forgot {len(names)} path(s) holding erased versions" + (f": {', '.join(names)}" if names else ""),
        )
        return
    if path is None and not on_remotes:
        raise usage_error("give the PATH to forget (or --from-ledger, or --remotes alone to reach the remotes)")
    if path is not None and path.endswith("/") and path.strip("/"):  # a folder written as `ls` takes it: prefs/
        path = path.rstrip("/")
    confirm(yes, f"forgetting {path!r}" if path is not None else "rewriting the remotes' history")
    store = state.store(name)
    lines: list[str] = []
    payload: dict[str, Any] = {"memory": name}
    if path is not None:
        try:
            with progress(f"forgetting {path}"):
                report = store.forget(path, origin=state.origin)
        except MemoryStoreError as exc:
            # Already forgotten here (the ledger records it): what is left is to reach the remotes.
            if not (exc.code == "not_found" and on_remotes and store.was_forgotten(path)):
                raise
            lines.append(f"{path} was already forgotten here (the erasure ledger records it); reaching the remotes")
        else:
            kept = f"; {len(report.shared_versions)} version(s) kept because another file holds the same content"
            lines.append(
                f"forgot {', '.join(report.names)}: {report.commits_rewritten} commit(s) rewritten, "
                f"{len(report.erased_versions)} version(s) erased" + (kept if report.shared_versions else "")
            )
            payload.update(to_json(report))
    from gitmem import remotes

    if not on_remotes:
        held = remotes.list_remotes(store)
        payload["remotes_may_hold"] = [r.name for r in held]
        if held:
            shown = ", ".join(f"{r.name} ({r.shown_url})" for r in held)
            lines.append(
                f"the remotes {shown} may still hold the erased text: run `gitmem forget {name} --remotes --yes` "
                "to push the rewritten history and the erasure ledger there and check them (see docs/forge.md)"
            )
        emit(payload, "\n".join(lines))
        return
    with progress("pushing to remotes"):
        done = remotes.erase(store)
    if not done:
        lines.append(f"{name} has no remotes; nothing else to reach")
    for item in done:
        state_text = (
            "clean" if item.clean else ("still reached from " + ", ".join(item.holding) if item.holding else "")
        )
        lines.append(f"{item.remote}: {state_text}" + (f" ({item.error})" if item.error else ""))
    payload["remotes"] = [
        {"remote": i.remote, "clean": i.clean, "holding": list(i.holding), "error": i.error} for i in done
    ]
    emit(payload, "\n".join(lines))
    if not all(i.clean for i in done):
        raise click.exceptions.Exit(EXIT_REFUSED)


@cli.command()
@click.argument("name")
@click.option(
    "--erasures",
    "check_erasures",
    is_flag=True,
    help="Prove every forget and purge: nothing of the mount holds what they erased.",
)
@common_options
@pass_state
def fsck(state: State, name: str, check_erasures: bool) -> None:
    """Check the integrity of memory NAME (git fsck --strict).

    Exit code 0 when the repository is sound, 1 when git reports a problem.
    With --erasures, checks the erasure ledger instead: for every entry, no
    object, ref, reflog, pack or derived file of the mount holds what it
    erased; exit code 1 naming what still does.
    """
    if check_erasures:
        audit = state.store(name).check_erasures()
        text = (
            f"ok: {audit.entries} erasure(s), {audit.blobs} erased version(s); nothing of the mount holds them"
            if audit.ok
            else "\n".join(["still held:", *audit.holders])
        )
        if audit.written_again:
            text += f"\n{len(audit.written_again)} version(s) erased only by a purge were written again since"
        emit({"memory": name, **to_json(audit), "ok": audit.ok}, text)
        if not audit.ok:
            raise click.exceptions.Exit(EXIT_REFUSED)
        return
    report = state.store(name).fsck()
    text = "ok: no problems found" if report.ok else "\n".join(["problems found:", *report.messages])
    emit({"memory": name, "ok": report.ok, "messages": report.messages}, text)
    if not report.ok:
        raise click.exceptions.Exit(EXIT_REFUSED)


def _counts(c: ObjectCounts) -> str:
    return f"{c.loose} loose ({c.loose_kib} KiB), {c.packed} packed in {c.packs} pack(s) ({c.pack_kib} KiB)"


@cli.command()
@click.argument("name")
@common_options
@pass_state
def gc(state: State, name: str) -> None:
    """Pack the objects of memory NAME (git gc).

    Safe while others write: objects not yet referenced keep git's grace period.
    """
    with progress(f"packing {name}"):
        report = state.store(name).gc()
    emit(
        {"memory": name, "before": report.before, "after": report.after},
        f"before: {_counts(report.before)}\nafter:  {_counts(report.after)}",
    )


@cli.command()
@click.argument("name", default="demo")
@common_options
@pass_state
def demo(state: State, name: str) -> None:
    """Run two agents sharing memory NAME (default: demo).

    Shows each change, the conflict that stops a stale write, the change list a
    later run receives, and git's own log with the provenance trailers.
    """
    from gitmem.demo import run_demo

    lines: list[str] = []
    head = run_demo(state.root, name, emit=lines.append if state.json else say)
    emit({"memory": name, "head": head, "lines": lines})
