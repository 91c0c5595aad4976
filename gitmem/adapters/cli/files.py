"""Commands on a memory's files: init, mounts, ls, cat, write, edit, mv, rm, changes.

Every write names the version it expects, exactly like the store API: ``write
--expect`` and ``rm --expect`` take it from the user, ``mv`` and ``edit`` take the
version they just read, so a change made meanwhile by someone else is never
overwritten silently.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from gitmem.adapters.cli import reads
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
    usage_error,
)
from gitmem.adapters.cli.output import read_stdin
from gitmem.errors import MemoryStoreError

if TYPE_CHECKING:
    from gitmem.gitstore import SyncGitFileStore

#: How many times ``edit`` re-reads and re-checks after another writer got in first.
EDIT_RETRIES = 3
_MIN_ABBREV = 7


def full_version(store: SyncGitFileStore, path: str, given: str) -> str:
    """Expand an abbreviated version (as ``ls`` prints it) when it names the current blob.

    The store still compares the full id, so this never weakens the check: a prefix
    that does not match the current version is passed on as-is and refused.
    """
    if len(given) >= 40 or len(given) < _MIN_ABBREV:
        return given
    try:
        current = store.read(path)
    except MemoryStoreError:
        return given
    return current.version if current.version.startswith(given.lower()) else given


@cli.command()
@click.argument("name")
@click.option("--no-hooks", "no_hooks", is_flag=True, help="Do not install gitmem's pre-receive/post-receive hooks.")
@common_options
@pass_state
def init(state: State, name: str, no_hooks: bool) -> None:
    """Create memory NAME.

    NAME becomes the bare repository <root>/NAME.git with an empty first commit,
    and gets gitmem's pre-receive and post-receive hooks, so a push to it over a
    file path or ssh meets the memory's rules (--no-hooks: without them).
    Running it again on an existing memory changes nothing.
    """
    existed = (state.root.mount_path(name) / "HEAD").exists()
    store = state.root.mount(name, create=True, hooks=not no_hooks).sync
    payload = {"memory": name, "path": store.path, "head": store.head(), "created": not existed, "kind": store.kind}
    emit(payload, f"{'memory' if existed else 'created memory'} {name!r} at {store.path}")


@cli.command()
@common_options
@pass_state
def mounts(state: State) -> None:
    """List the memories under the root."""
    names = state.root.mounts()
    emit({"root": str(state.root.path), "mounts": names}, "\n".join(names) if names else None)


@cli.command()
@click.argument("name")
@click.argument("directory", required=False, default="")
@read_run_option
@common_options
@pass_state
def ls(state: State, name: str, directory: str) -> None:
    """List the files of memory NAME, or of one DIRECTORY.

    Each line: path, size, abbreviated version, description. Any abbreviation of
    7 or more digits is accepted wherever a VERSION is asked for.
    """
    reads.ls(state, name, directory, as_json=state.json)


@cli.command()
@click.argument("name")
@click.argument("path")
@click.option("--rev", metavar="REV", help="Read the file as it was at this commit (id, prefix, main~N).")
@read_run_option
@common_options
@pass_state
def cat(state: State, name: str, path: str, rev: str | None) -> None:
    """Print file PATH of memory NAME.

    The content goes to stdout with characters that could act on a terminal
    (escape sequences, bidi overrides, zero-width characters) shown as escapes;
    on a terminal the version is also shown on stderr. Use --json to get the
    exact text and the version in scripts.
    """
    reads.cat(state, name, path, rev, as_json=state.json)


@cli.command()
@click.argument("name")
@click.argument("path")
@click.option("--expect", metavar="VERSION", help="Replace the file only if it is still at VERSION.")
@click.option("--create", is_flag=True, help="Create the file; refused if it exists.")
@origin_options
@common_options
@pass_state
def write(state: State, name: str, path: str, expect: str | None, create: bool) -> None:
    """Write stdin to file PATH of memory NAME.

    Pass --create for a new file, or --expect VERSION to replace the file only
    while it is still at the version you read. Writing the content the file
    already holds makes no commit.
    """
    if create == (expect is not None):
        raise usage_error("pass exactly one of --create (new file) or --expect VERSION (replace that version)")
    if sys.stdin is not None and sys.stdin.isatty():  # no stdin at all: read_stdin says so
        say("reading the new content from stdin; end it with Ctrl-D", err=True)
    text = read_stdin()
    store = state.files(name)
    expected = None if create else full_version(store, path, expect or "")
    version = store.write(path, text, expected=expected, origin=state.origin)
    changed = version != expected
    where = landed(store, state) if changed else None
    payload = {
        "memory": name,
        "path": path,
        "version": version,
        "previous": expected,
        "changed": changed,
        "proposal": where,
    }
    if not changed:
        message = f"unchanged: {path} already holds this content (version {version})"
    else:
        message = f"{'created' if create else 'wrote'} {path}: version {version}"
    emit(payload, message + landed_text(name, where))


@cli.command()
@click.argument("name")
@click.argument("path")
@click.option("--old", "old", required=True, help="Text that occurs exactly once in the file.")
@click.option("--new", "new", required=True, help="Replacement text (may be empty).")
@origin_options
@common_options
@pass_state
def edit(state: State, name: str, path: str, old: str, new: str) -> None:
    """Replace the one occurrence of --old with --new in PATH.

    The file is read, the --old text must occur exactly once, and the result is
    written expecting the version read. When another writer got in first the file
    is read again and re-checked, up to 3 more times.
    """
    if old == "":
        raise usage_error("--old must not be empty")
    from gitmem.tools import ops  # imported here: it loads the tool schemas, which other commands never need

    store = state.files(name)
    # The agents' edit tool, so a person and an agent editing one file follow the same rule.
    try:
        done = ops.edit(store, path, old, new, fmt=store.format, retries=EDIT_RETRIES, origin=state.origin)
    except MemoryStoreError as exc:
        if "old_string" not in exc.message:
            raise
        # The shared tool speaks of its own parameter; here the user typed --old.
        exc.message = exc.message.replace("old_string", "the --old text")
        exc.args = (f"{exc.code}: {exc.message}",)
        raise
    where = landed(store, state)
    payload = {
        "memory": name,
        "path": done["path"],
        "version": done["version"],
        "size": done["size"],
        "proposal": where,
    }
    emit(payload, f"edited {done['path']}: version {done['version']}" + landed_text(name, where))


@cli.command()
@click.argument("name")
@click.argument("source")
@click.argument("destination")
@click.option("--expect", metavar="VERSION", help="Move only if SOURCE is at VERSION (default: the version read now).")
@origin_options
@common_options
@pass_state
def mv(state: State, name: str, source: str, destination: str, expect: str | None) -> None:
    """Rename file SOURCE to DESTINATION.

    One commit; DESTINATION must not exist. SOURCE must still be at --expect
    VERSION, or by default at the version read when the command starts.
    """
    store = state.files(name)
    expected = full_version(store, source, expect) if expect else store.read(source).version
    version = store.move(source, destination, expected=expected, origin=state.origin)
    where = landed(store, state)
    payload = {"memory": name, "source": source, "destination": destination, "version": version, "proposal": where}
    emit(payload, f"moved {source} -> {destination} (version {version})" + landed_text(name, where))


@cli.command()
@click.argument("name")
@click.argument("path")
@click.option("--expect", metavar="VERSION", required=True, help="Delete only if the file is at VERSION.")
@origin_options
@common_options
@pass_state
def rm(state: State, name: str, path: str, expect: str) -> None:
    """Delete file PATH if it is still at --expect VERSION."""
    store = state.files(name)
    expected = full_version(store, path, expect)
    store.delete(path, expected=expected, origin=state.origin)
    where = landed(store, state)
    payload = {"memory": name, "path": path, "version": expected, "deleted": True, "proposal": where}
    emit(payload, f"deleted {path}" + landed_text(name, where))


@cli.command()
@click.argument("name")
@click.option("--since", metavar="CURSOR", help="A cursor printed by an earlier `changes` (omit for the first call).")
@read_run_option
@common_options
@pass_state
def changes(state: State, name: str, since: str | None) -> None:
    """List the paths changed since a cursor.

    Prints the cursor to pass next time, then the changed paths. Without --since,
    or when the cursor is no longer in history (after purge or forget), it says
    "full resync": re-read everything.
    """
    from gitmem.model import Changes

    delta = state.files(name).changes(since)
    payload: dict[str, object]
    if isinstance(delta, Changes):
        payload = {"kind": "changes", "cursor": delta.cursor, "paths": list(delta.paths)}
        lines = [f"cursor {delta.cursor}", *delta.paths]
    else:
        payload = {"kind": "full_resync", "cursor": delta.cursor, "paths": None}
        lines = [f"cursor {delta.cursor}", "full resync: no cursor, or it is no longer in history; re-read everything"]
    emit(payload, "\n".join(lines))
