"""History commands: log, show, diff, blame, restore, revert.

All of them read commit metadata through the store's history API; ``restore``
and ``revert`` add one new commit each and never rewrite history.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import click

from gitmem.adapters.cli.app import (
    State,
    cli,
    common_options,
    emit,
    landed,
    landed_text,
    origin_options,
    pass_state,
    read_run_option,
    say,
    short,
)
from gitmem.adapters.cli.reads import file_payload
from gitmem.errors import if_found

MAX_LOG_LIMIT = 1_000_000

if TYPE_CHECKING:  # dataclass modules: building their classes costs start-up time
    from gitmem.gitstore import SyncGitFileStore
    from gitmem.history import LogEntry
    from gitmem.model import Origin


_UNIT_SECONDS = {
    "second": 1,
    "minute": 60,
    "hour": 3600,
    "day": 86400,
    "week": 7 * 86400,
    "month": 30 * 86400,  # as git's approxidate counts them
    "year": 365 * 86400,
}
_RELATIVE = re.compile(r"^(\d+)[.\s]*([a-z]+?)s?(?:[.\s]+ago)?$")


def relative_date(value: str, now: datetime | None = None) -> datetime | None:
    """A relative date as git takes it (``yesterday``, ``2.weeks``, ``3 days ago``, ``1.hour.ago``), else ``None``."""
    now = now or datetime.now().astimezone()
    text = value.strip().lower()
    if text == "now":
        return now
    if text in ("today", "midnight"):
        return now.replace(hour=0, minute=0, second=0, microsecond=0)
    if text == "yesterday":
        return now - timedelta(days=1)
    match = _RELATIVE.fullmatch(text)
    if match is None:
        return None
    unit = {"sec": "second", "min": "minute", "hr": "hour"}.get(match.group(2), match.group(2))
    if unit not in _UNIT_SECONDS:
        return None
    try:
        return now - timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[unit])
    except (OverflowError, ValueError):  # before the year 1 ("9999 years ago", or more digits than int() takes)
        return datetime.min.replace(tzinfo=UTC)


def when(value: str | None) -> datetime | str | None:
    """``--since``/``--until``: an ISO date or time, a relative date (``yesterday``, ``2.weeks``), else a revision."""
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        pass
    return relative_date(value) or value


def who(origin: Origin) -> str:
    parts = [origin.principal_id or "", f"run {origin.run_id}" if origin.run_id else ""]
    parts.append(f"via {origin.tool_call_id}" if origin.tool_call_id else "")
    return ", ".join(p for p in parts if p)


def _log_line(e: LogEntry) -> str:
    by = who(e.origin)
    if not e.origin.principal_id and e.author:  # made with plain git: its author is who
        by = ", ".join(p for p in (f"author {e.author}", by) if p)
    return f"{short(e.commit)}  {e.time:%Y-%m-%d %H:%M:%S %z}  {e.summary}" + (f"  ({by})" if by else "")


@cli.command()
@click.argument("name")
@click.argument("path", required=False)
@click.option("--run", "run", metavar="RUN_ID", help="Only changes made by this run, including those on its proposal under review.")
@click.option("--principal", "principal", metavar="WHO", help="Only changes made by this principal.")
@click.option(
    "--tool-call", "tool_call", metavar="ID", help="Only changes made by this tool call (`cli` for this CLI)."
)
@click.option(
    "--since",
    metavar="WHEN",
    help="Only changes after WHEN: an ISO date/time, a relative date (yesterday, 2.weeks, '3 days ago'), or a revision (excluded).",
)
@click.option(
    "--until", metavar="WHEN", help="Only changes up to WHEN: an ISO date/time, a relative date, or a revision."
)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1_000_000), help="Most changes to list.")
@common_options
@pass_state
def log(
    state: State,
    name: str,
    path: str | None,
    run: str | None,
    principal: str | None,
    tool_call: str | None,
    since: str | None,
    until: str | None,
    limit: int,
) -> None:
    """List changes newest first, with who made them.

    With PATH, only the changes of that file, followed across moves. The
    filters read the Gitmem-* trailers each commit carries.
    """
    store = state.store(name)
    if run:  # that run's changes, including those still on its proposal under review
        store = store.for_run(run)
    entries = store.log(
        path,
        run=run,
        principal=principal,
        tool_call=tool_call,
        since=when(since),
        until=when(until),
        limit=min(limit + 1, MAX_LOG_LIMIT),
    )
    truncated = len(entries) > limit
    entries = entries[:limit]

    def text() -> None:
        for e in entries:
            say(_log_line(e))  # one record per line: a newline in a run name cannot forge another
        if truncated:
            say(f"... more changes: pass --limit {limit * 10} to see them", err=True)

    emit({"memory": name, "path": path, "entries": entries, "truncated": truncated}, text)


@cli.command()
@click.argument("name")
@click.argument("rev")
@click.argument("path")
@read_run_option
@common_options
@pass_state
def show(state: State, name: str, rev: str, path: str) -> None:
    """Print file PATH as it was at revision REV.

    REV is a commit id (full or abbreviated), `main`, or `main~N`.
    """
    found = state.store(name).show(rev, path)
    emit(file_payload(name, found, rev), lambda: say(found.text, nl=False, multiline=True))


def _split_diff_args(store: SyncGitFileStore, rest: tuple[str, ...]) -> tuple[str | None, str | None]:
    """``[B] [PATH]``: with one word, it is B when it names a commit, else a path."""
    if len(rest) == 2:
        return rest[0], rest[1]
    if len(rest) == 1:
        return (rest[0], None) if store.repo.resolve(rest[0]) is not None else (None, rest[0])
    return None, None


@cli.command()
@click.argument("name")
@click.argument("a")
@click.argument("rest", nargs=-1, metavar="[B] [PATH]")
@read_run_option
@common_options
@pass_state
def diff(state: State, name: str, a: str, rest: tuple[str, ...]) -> None:
    """Show what changed from revision A to B (default: the head).

    PATH narrows the diff to one file (either side of a rename), or to a folder
    when it ends in '/'. With one word after A, it is B if it names a commit,
    otherwise PATH. The text is a git-style unified patch.
    """
    if len(rest) > 2:
        raise click.UsageError("expected at most: A [B] [PATH]")
    store = state.store(name)
    b, path = _split_diff_args(store, rest)
    files = store.diff(a, b, path)

    def text() -> None:
        for f in files:
            say(f.patch, nl=False, multiline=True)

    emit({"memory": name, "from": a, "to": b, "path": path, "files": files}, text)


@cli.command()
@click.argument("name")
@click.argument("path")
@click.option("--rev", metavar="REV", help="Blame the file as it was at REV (default: the head).")
@read_run_option
@common_options
@pass_state
def blame(state: State, name: str, path: str, rev: str | None) -> None:
    """Show which change last touched each line of PATH, and who made it."""
    lines = state.store(name).blame(path, rev)

    def text() -> None:
        # Lines from commits made with plain git carry no principal: name their git author.
        names = [b.origin.principal_id or b.author or "-" for b in lines]
        width = max(map(len, names), default=1)
        for b, author in zip(lines, names, strict=True):
            say(f"{short(b.commit)} ({author:{width}} {b.time:%Y-%m-%d} {b.line:4d}) {b.text}")

    emit({"memory": name, "path": path, "rev": rev, "lines": lines}, text)


@cli.command()
@click.argument("name")
@click.argument("path")
@click.option("--rev", metavar="REV", required=True, help="The revision whose content PATH gets back.")
@click.option("--expect", metavar="VERSION", help="Restore only if PATH is now at VERSION (default: as read now).")
@click.option("--delete", "delete", is_flag=True, help="Delete PATH when it did not exist at REV (else refused).")
@origin_options
@common_options
@pass_state
def restore(state: State, name: str, path: str, rev: str, expect: str | None, delete: bool) -> None:
    """Set PATH back to its content at REV, as one new commit.

    If PATH did not exist at REV the restore is refused (not_found) unless
    --delete asks for PATH to be deleted. History is never rewritten, so the
    restore itself can be undone the same way.
    """
    store = state.store(name)
    if expect is not None:
        # Here, not at the top: log, show, diff and blame need not build every file command's options.
        from gitmem.adapters.cli.files import full_version

        expected: str | None = full_version(store, path, expect)
    else:
        now = if_found(store.read, path)
        expected = None if now is None else now.version
    version = store.restore(path, rev, expected=expected, origin=state.origin, delete=delete)
    changed = version != expected
    where = landed(store, state) if changed else None
    payload = {
        "memory": name,
        "path": path,
        "rev": rev,
        "version": version,
        "previous": expected,
        "changed": changed,
        "proposal": where,
    }
    if not changed:
        message = f"unchanged: {path} already holds its content at {rev}"
    elif version is None:
        message = f"restored {path} to {rev}: it did not exist there, so it is deleted now"
    else:
        message = f"restored {path} to its content at {rev}: version {version}"
    emit(payload, message + landed_text(name, where))


@cli.command()
@click.argument("name")
@click.argument("commit")
@origin_options
@common_options
@pass_state
def revert(state: State, name: str, commit: str) -> None:
    """Undo the change COMMIT made, as one new commit.

    Refused (version_mismatch, naming the file) when a later change touched the
    same files; nothing is committed then.
    """
    store = state.store(name)
    made = store.revert(commit, origin=state.origin)
    where = landed(store, state) if made else None
    if made is None:
        message = f"nothing to undo: the files {commit} changed are already as before it"
    else:
        message = f"reverted {commit}: new commit {made}"
    payload = {"memory": name, "commit": commit, "reverted_by": made, "changed": made is not None, "proposal": where}
    emit(payload, message + landed_text(name, where))
