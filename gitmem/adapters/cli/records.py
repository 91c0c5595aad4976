"""``gitmem records``: record memory from the command line.

Each command opens one record mount, binds a :class:`~gitmem.records.RecordStore`
to ``--namespace`` (default ``default``) and makes one call. Records are
files under the namespace's folder, so ``gitmem log`` / ``git log`` show every
change, and ``gitmem records log`` shows one record's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from gitmem.adapters.cli.app import State, cli, common_options, confirm, emit, origin_options, pass_state, say
from gitmem.adapters.cli.output import read_stdin

if TYPE_CHECKING:  # the record layer (and the store) load when a command opens a memory
    from gitmem.records import MemoryRecord, RecordStore

DEFAULT_NAMESPACE = "default"


def namespace_option(f: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--namespace",
        "-n",
        default=DEFAULT_NAMESPACE,
        show_default=True,
        help="Whose records: any text (a user id, a tenant); each namespace is kept apart.",
    )(f)


def _store(state: State, name: str, namespace: str) -> RecordStore:
    from gitmem.records import RecordStore

    return RecordStore(state.root.mount(name, kind="record").sync, namespace)


def _text(text: str) -> str:
    """``-`` reads the text from stdin (all of it, verbatim, bounded: the record's own rules refuse what is not text)."""
    return read_stdin(errors="surrogateescape") if text == "-" else text


def _line(record: MemoryRecord) -> str:
    when = record.updated_at.strftime("%Y-%m-%d %H:%M:%S") if record.updated_at else "-"
    score = f"  {record.score:.2f}" if record.score is not None else ""
    first = record.text.splitlines()[0] if record.text.strip() else record.text
    more = " …" if "\n" in record.text.strip() else ""
    return f"{record.id}  {when}{score}  {first}{more}"


@cli.group(name="records")
def records() -> None:
    """Record memory: short texts, recalled by what they say.

    A record mount holds the records of any number of namespaces; every record
    is one file and every change one commit.
    """


@records.command(name="init")
@click.argument("name")
@common_options
@pass_state
def init_records(state: State, name: str) -> None:
    """Create record memory NAME (a mount of kind "record")."""
    existed = (state.root.mount_path(name) / "HEAD").exists()
    store = state.root.mount(name, create=True, kind="record").sync
    payload = {"memory": name, "path": store.path, "kind": "record", "created": not existed}
    emit(payload, f"{'record memory' if existed else 'created record memory'} {name!r} at {store.path}")


@records.command(name="add")
@click.argument("name")
@click.argument("text")
@namespace_option
@origin_options
@common_options
@pass_state
def add_record(state: State, name: str, text: str, namespace: str) -> None:
    """Add a record holding TEXT ("-" reads it from stdin). Prints its id."""
    record = _store(state, name, namespace).add(_text(text), origin=state.origin)
    emit({"record": record}, record.id)


@records.command(name="list")
@click.argument("name")
@namespace_option
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True, help="Records per page.")
@click.option("--cursor", default=None, help="next_cursor of the previous page.")
@common_options
@pass_state
def list_records(state: State, name: str, namespace: str, limit: int, cursor: str | None) -> None:
    """List records oldest first, a page at a time."""
    page = _store(state, name, namespace).list(limit=limit, cursor=cursor)

    def show() -> None:
        for record in page.records:
            say(_line(record))
        if page.next_cursor:
            say(f"(more: --cursor {page.next_cursor})", err=True)

    emit({"records": page.records, "next_cursor": page.next_cursor}, show)


@records.command(name="search")
@click.argument("name")
@click.argument("query")
@namespace_option
@click.option("--limit", type=click.IntRange(1, 100), default=5, show_default=True, help="Most records to show.")
@common_options
@pass_state
def search_records(state: State, name: str, query: str, namespace: str, limit: int) -> None:
    """Records closest to QUERY, best first, with their scores."""
    found = _store(state, name, namespace).search(query, limit=limit)

    def show() -> None:
        for record in found:
            say(_line(record))

    emit({"records": found}, show)


@records.command(name="update")
@click.argument("name")
@click.argument("record_id", metavar="ID")
@click.argument("text")
@namespace_option
@origin_options
@common_options
@pass_state
def update_record(state: State, name: str, record_id: str, text: str, namespace: str) -> None:
    """Replace the text of record ID ("-" reads it from stdin); the last write wins."""
    record = _store(state, name, namespace).update(record_id, _text(text), origin=state.origin)
    emit({"record": record}, f"updated {record.id}")


@records.command(name="rm")
@click.argument("name")
@click.argument("record_id", metavar="ID")
@namespace_option
@origin_options
@common_options
@pass_state
def remove_record(state: State, name: str, record_id: str, namespace: str) -> None:
    """Delete record ID (its history stays; see `records purge` to erase that too)."""
    _store(state, name, namespace).delete(record_id, origin=state.origin)
    emit({"deleted": record_id}, f"deleted {record_id}")


@records.command(name="purge")
@click.argument("name")
@namespace_option
@click.option("--yes", is_flag=True, help="Confirm: every record of the namespace and all its history is erased.")
@origin_options
@common_options
@pass_state
def purge_records(state: State, name: str, namespace: str, yes: bool) -> None:
    """Erase every record of one namespace, with its history; other namespaces stay."""
    confirm(yes, f"purging namespace {namespace!r} of {name!r}")
    _store(state, name, namespace).purge(origin=state.origin)
    emit({"memory": name, "namespace": namespace, "purged": True}, f"purged namespace {namespace!r} of {name!r}")


@records.command(name="log")
@click.argument("name")
@click.argument("record_id", metavar="[ID]", required=False)
@namespace_option
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True, help="Most changes to show.")
@common_options
@pass_state
def log_records(state: State, name: str, record_id: str | None, namespace: str, limit: int) -> None:
    """Changes to record ID (or to the whole namespace), newest first, with their times."""
    entries = _store(state, name, namespace).log(record_id, limit=limit)

    def show() -> None:
        for e in entries:
            who = e.origin.principal_id or e.author or "-"
            say(f"{e.commit[:12]}  {e.time.isoformat(timespec='seconds')}  {who}  {e.summary}")

    emit({"entries": entries}, show)
