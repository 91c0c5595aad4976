"""The root ``gitmem`` group and what every command shares.

Shared here, so each command module stays a list of "parse, call the core once,
render" functions:

- :class:`State`, the per-invocation settings (root, ``--json``, origin), filled by
  the shared option decorators wherever the user put the option (before or after
  the command name);
- :class:`GitmemCommand`, which turns a refused store call
  (:class:`~gitmem.errors.MemoryStoreError`) into a message that names the code and
  says what to do next, and into exit code 1; click itself answers usage errors
  with exit code 2;
- rendering helpers (one JSON document on stdout with ``--json``, plain text
  otherwise) and a progress display that only appears when stderr is a terminal.
  Every human-facing line goes through :func:`say`, which shows control, format
  and other invisible characters as escapes (:func:`visible`): memory content,
  descriptions, commit text and run names come from agents, and must not move an
  admin's cursor, retitle the terminal or hide text. JSON goes through
  :func:`say_json` unchanged (the encoder escapes what could act on a terminal).
  ``tests/cli/test_cli_visible.py`` checks that nothing else prints.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from gitmem.config import default_root
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import visible

if TYPE_CHECKING:  # imported when a command opens a memory: `--help` and usage errors stay fast
    from gitmem.gitstore import SyncGitFileStore
    from gitmem.model import FileEntry, FileText, Origin
    from gitmem.root import Root

F = TypeVar("F", bound=Callable[..., Any])

#: The tool call id the CLI records on every change it makes.
CLI_TOOL_CALL = "cli"

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2


@dataclass
class State:
    """Settings of one invocation, shared by the root group and the command."""

    root_dir: Path | None = None
    json: bool = False
    principal: str | None = None
    run: str | None = None
    _root: Root | None = field(default=None, repr=False)
    _given: set[str] = field(default_factory=set, repr=False)  # set on the command line, not from the env

    @property
    def root(self) -> Root:
        if self._root is None:
            from gitmem.root import Root

            self._root = Root(self.root_dir or default_root())
        return self._root

    @property
    def origin(self) -> Origin:
        """Who a change is by: ``--principal``, else ``$GITMEM_PRINCIPAL``, else the login name."""
        from gitmem.model import Origin

        return Origin(run_id=self.run, principal_id=self.principal or login_name(), tool_call_id=CLI_TOOL_CALL)

    def store(self, name: str) -> SyncGitFileStore:
        """The sync store of mount ``name`` as ``--run`` sees it; ``not_found`` when there is no such memory.

        With a run id the store reads (and writes) that run's proposal while the
        review gate holds one, as the run's agent does; everyone else reads ``main``.
        """
        store = self.root.mount(name).sync
        return store.for_run(self.run) if self.run else store

    def files(self, name: str) -> SyncGitFileStore:
        """Like :meth:`store`, for the file commands: ``wrong_kind`` when NAME holds records,
        session items or durable nodes (their files follow their own rules, as the tools say)."""
        from gitmem.quickread import require_file_memory

        store = self.store(name)
        require_file_memory(name, store.kind)
        return store

    def listing(self, name: str) -> list[FileEntry]:
        """The files of file memory ``name`` as ``--run`` sees them; ``main`` is read without opening the store."""
        if self.run:
            return self.files(name).list()
        from gitmem import quickread

        return quickread.list_files(self.root, name)

    def read(self, name: str, path: str, rev: str | None = None) -> FileText:
        """File ``path`` of file memory ``name`` (at ``rev``) as ``--run`` sees it; ``main`` is read without the store."""
        if self.run or rev is not None:
            return self.files(name).read(path, rev)
        from gitmem import quickread

        return quickread.read_file(self.root, name, path)


def login_name() -> str | None:
    """The login name (``$LOGNAME``, ``$USER``, then the password database), or ``None`` when there is none.

    The one default principal of every CLI change, approval and rejection.
    """
    import getpass

    try:
        return getpass.getuser() or None
    except (KeyError, OSError):
        return None


def landed(store: SyncGitFileStore, state: State) -> dict[str, str] | None:
    """Where a change just went: ``{run, ref}`` when the review gate sent it to a proposal, else ``None``."""
    if state.run is None:
        return None
    from gitmem import review as review_api

    if not review_api.enabled(store):
        return None
    return {"run": state.run, "ref": review_api.PROPOSALS + state.run}


def landed_text(name: str, where: dict[str, str] | None) -> str:
    """The words that say a change is waiting for review, and how to see it ('' when it went to main)."""
    if where is None:
        return ""
    return f" (under review on {where['ref']}: `gitmem review show {name} {where['run']}`)"


def get_state() -> State:
    ctx = click.get_current_context()
    state = ctx.find_object(State)
    if state is None:  # a command invoked on its own, outside the root group
        state = ctx.ensure_object(State)
    return state


pass_state = click.make_pass_decorator(State, ensure=True)


# --- shared option decorators ----------------------------------------------------


def _set(attr: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        # An option left out must not undo the same option given before the command name,
        # and a value from the environment must not override one typed on the command line.
        if value is None or value is False:
            return
        state = ctx.ensure_object(State)
        typed = param.name is not None and ctx.get_parameter_source(param.name) is ParameterSource.COMMANDLINE
        if typed:
            state._given.add(attr)
        elif attr in state._given:
            return
        setattr(state, attr, value)

    return callback


#: One parameter type for every folder option (``--root`` on each command, ``--workspace``...):
#: click looks a new type's name up in the gettext catalogues, a dozen file checks each time,
#: which cost every CLI call ~1 ms per command (under load) before the type was shared.
FOLDER = click.Path(file_okay=False, path_type=Path)


def root_option(f: F) -> F:
    """``--root DIR``: the folder of mounts (default ``$GITMEM_ROOT``, then ``~/.local/share/gitmem``)."""
    return click.option(
        "--root",
        type=FOLDER,
        expose_value=False,
        callback=_set("root_dir"),
        help="Folder of mounts (default: $GITMEM_ROOT, else $XDG_DATA_HOME/gitmem or ~/.local/share/gitmem).",
    )(f)


def json_option(f: F) -> F:
    """``--json``: print one JSON document on stdout (errors too) instead of text."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        default=False,
        expose_value=False,
        callback=_set("json"),
        help="Print one JSON document on stdout (see docs/cli.md for the shapes).",
    )(f)


def origin_options(f: F) -> F:
    """``--principal`` and ``--run``: who the change is attributed to (commit author and trailers)."""
    f = click.option(
        "--run",
        metavar="RUN_ID",
        envvar="GITMEM_RUN",
        expose_value=False,
        callback=_set("run"),
        help="Run id recorded in the Gitmem-Run trailer (default: $GITMEM_RUN).",
    )(f)
    return click.option(
        "--principal",
        metavar="WHO",
        envvar="GITMEM_PRINCIPAL",
        expose_value=False,
        callback=_set("principal"),
        help="Principal recorded as the commit author and Gitmem-Principal trailer (default: $GITMEM_PRINCIPAL, else your login name).",
    )(f)


def read_run_option(f: F) -> F:
    """``--run`` on a read: see the memory as that run does (its proposal while under review)."""
    return click.option(
        "--run",
        metavar="RUN_ID",
        envvar="GITMEM_RUN",
        expose_value=False,
        callback=_set("run"),
        help="Read as run RUN_ID sees the memory: its proposal while under review (default: $GITMEM_RUN).",
    )(f)


def common_options(f: F) -> F:
    """``--json`` and ``--root``, which every command accepts."""
    return json_option(root_option(f))


# --- errors ----------------------------------------------------------------------


def _hint(exc: MemoryStoreError, command: str, params: Mapping[str, Any]) -> str:
    """What the user can do about a refusal, phrased with the command's own arguments."""
    name = params.get("name") or "NAME"
    path = params.get("path") or params.get("source") or "PATH"
    code = exc.code
    if code == "version_mismatch" and command == "revert":
        where = exc.current.path if exc.current is not None else "a file it changed"
        return (
            f"a later change touched {where}; see `gitmem log {name} {where}` and put the old content back "
            f"with `gitmem restore {name} {where} --rev REV`, or edit it by hand"
        )
    if code == "version_mismatch":
        if exc.current is None:
            return f"the file does not exist now; create it with `gitmem write {name} {path} --create`"
        return (
            f"the file is now at version {exc.current.version}; re-read it "
            f"(`gitmem cat {name} {exc.current.path}`) and retry with --expect {exc.current.version}"
        )
    if code == "already_exists":
        where = exc.current.path if exc.current is not None else "the destination"
        version = f" --expect {exc.current.version}" if exc.current is not None else ""
        return f"choose another path, or remove {where} first (`gitmem rm {name} {where}{version}`)"
    if code == "not_found":
        return _not_found_hint(exc.message, command, params, name)
    if code == "too_large":
        return (
            f"nothing was written; shorten the file, or raise the limit: `gitmem config {name}` shows the limits, "
            f"`gitmem config {name} gitmem.maxFileBytes 1m` raises the largest file"
        )
    if code == "invalid_file" and command == "config":
        return f"nothing was changed; `gitmem config {name}` lists the keys and the values in force"
    if code in ("invalid_path", "invalid_file"):
        return "nothing was written; fix the path or content and run the command again"
    if code == "invalid_pattern":
        return "fix the regular expression, or drop -E to search for the text literally"
    if code == "memory_full":
        return (
            f"delete or shorten files first, or raise the limit: `gitmem config {name}` shows the limits, "
            f"`gitmem config {name} gitmem.maxFiles N` and `gitmem.maxMemoryBytes N` raise them"
        )
    if code == "memory_deleted":
        return f"the memory was removed; create it again with `gitmem init {name}`"
    if code == "unavailable":
        lowered = exc.message.lower()
        if "lock" in lowered or "timed out" in lowered or "busy" in lowered:
            return "another writer holds the memory's lock; retry shortly"
        if "config" in lowered:
            return f"fix the value named above (`gitmem config {name} KEY VALUE`, or `--unset`)"
        return "check the --root folder and the memory's files: do they exist, and may this user read and write them?"
    if code == "forbidden":
        return "this memory does not allow that change"
    if code == "no_match":
        return f"the --old text is not in the file; check it with `gitmem cat {name} {path}`"
    if code == "ambiguous_match":
        return "the --old text occurs more than once; include more surrounding text so it is unique"
    if code == "conflict_retries_exhausted":
        return "other writers keep changing this file; wait and run the command again"
    if code == "record_not_found":
        return f"list the namespace's records with `gitmem records list {name} -n NS` (ids are per namespace)"
    if code in ("invalid_text", "invalid_cursor"):
        return "nothing was written; fix the text (1-8000 characters, no credentials) or list again without --cursor"
    if code == "write_unconfirmed":
        return f"the change may or may not have happened; check with `gitmem records search {name} ...` before retrying"
    if code == "wrong_kind":
        return (
            "file memories use the file commands; record, session and durable memories "
            "`gitmem records|session|durable ...` (history: `gitmem log` works on every kind)"
        )
    return "see docs/cli.md"


def _not_found_hint(message: str, command: str, params: Mapping[str, Any], name: str) -> str:
    """``not_found`` has many causes; the hint follows the one the message names."""
    lowered = message.lower()
    if "no memory named" in lowered:
        return "check the memory name with `gitmem mounts` (or create it with `gitmem init NAME`)"
    if params.get("since") and ("since" in lowered or str(params.get("since")) in message):
        return "--since takes a date (2025-01-31, 2025-01-31T12:00), a relative one (yesterday, 2.weeks, '3 days ago') or a revision"
    if "proposal" in lowered or (command in ("approve", "reject", "show") and params.get("id")):
        return f"no such open proposal: it may be approved or rejected already; see `gitmem review list {name}`"
    if "revision" in lowered or "commit" in lowered or params.get("rev"):
        return f"check the revision with `gitmem log {name}` (a commit id of 7+ digits, main, main~3)"
    return f"check the path with `gitmem ls {name}`"


def file_json(text: FileText | None, *, content: bool = True) -> dict[str, Any] | None:
    if text is None:
        return None
    out: dict[str, Any] = {"path": text.path, "version": text.version, "size": text.size}
    if content:
        out["content"] = text.text
    return out


def error_json(exc: MemoryStoreError, hint: str) -> dict[str, Any]:
    """The error shape, shared with the agent tools: ``{error, message, hint, current}``."""
    return {"error": exc.code, "message": exc.message, "hint": hint, "current": file_json(exc.current)}


def report_error(exc: MemoryStoreError, ctx: click.Context) -> None:
    state = ctx.find_object(State) or State()
    hint = _hint(exc, ctx.command.name or "", ctx.params)
    if state.json:
        say_json(error_json(exc, hint))
        return
    say(f"error [{exc.code}]: {exc.message}", err=True)
    if exc.current is not None:
        say(f"  current: {exc.current.path} version {exc.current.version} ({exc.current.size} B)", err=True)
    say(f"  what to do: {hint}", err=True)


class GitmemCommand(click.Command):
    """A command whose store refusals become exit code 1 and an actionable message."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemoryStoreError as exc:
            report_error(exc, ctx)
            raise click.exceptions.Exit(EXIT_REFUSED) from None


class GitmemGroup(click.Group):
    """Groups whose commands (and sub-groups) all map errors the same way.

    ``lazy`` names, for commands not registered yet, the module that registers
    each: it is imported when the command is asked for, and every such module
    when all commands are listed (``--help``, completion). A call of ``gitmem ls``
    so builds the options of ``ls``'s module only, not of some eighty commands.
    """

    command_class = GitmemCommand
    group_class = type  # sub-groups are GitmemGroups too
    lazy: Mapping[str, str] = MappingProxyType({})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = self.lazy.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            importlib.import_module(module)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        for module in dict.fromkeys(self.lazy.values()):
            importlib.import_module(module)
        return super().list_commands(ctx)

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """As click's, but with ``--json`` a usage error is also one JSON document on stdout."""
        argv = sys.argv[1:] if args is None else list(args)
        if not standalone_mode or "--json" not in argv:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(argv, prog_name, complete_var, False, **extra)
        except click.ClickException as exc:
            exc.show()
            say_json({"error": "usage", "message": exc.format_message(), "hint": _usage_hint(exc), "current": None})
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            say("Aborted!", err=True)
            say_json({"error": "usage", "message": "aborted", "hint": "", "current": None})
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _usage_hint(exc: click.ClickException) -> str:
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        return f"see `{ctx.command_path} --help`"
    return "see `gitmem --help`"


def usage_error(message: str) -> click.UsageError:
    """A mistake in how the command was called: exit code 2, nothing touched."""
    return click.UsageError(visible(message), ctx=click.get_current_context(silent=True))


# --- rendering -------------------------------------------------------------------


def to_json(value: Any) -> Any:
    """Plain JSON data from the core's frozen dataclasses, tuples and mappings."""
    if hasattr(value, "__dataclass_fields__"):
        return {k: to_json(v) for k, v in asdict(value).items()}
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def say(text: str = "", *, err: bool = False, nl: bool = True, multiline: bool = False) -> None:
    """Print one human-facing line (or, with ``multiline``, a block of content) made :func:`visible`."""
    click.echo(visible(text, multiline=multiline), err=err, nl=nl)


def say_json(value: Any) -> None:
    """Print one JSON document (its encoder escapes every control character)."""
    click.echo(json.dumps(value, ensure_ascii=False))


def emit(payload: Mapping[str, Any], text: str | Callable[[], None] | None = None) -> None:
    """Render a command's result: ``payload`` as JSON, or ``text`` (a string or a printer)."""
    if get_state().json:
        say_json(to_json(payload))
    elif callable(text):
        text()
    elif text is not None:
        say(text, multiline=True)


def short(version: str | None) -> str:
    return version[:12] if version else "-"


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress(label: str, total: int | None = None) -> Iterator[Callable[[int, int | None], None]]:
    """A progress bar on stderr for long work, shown only on a terminal.

    Yields ``update(done, total)``; calling it when nothing is shown is free. Without
    a total the bar is an activity spinner, which suits calls that report nothing.
    """
    if not stderr_is_tty():

        def ignore(done: int, new_total: int | None = None) -> None:
            return None

        yield ignore
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(escape(visible(label)), total=total)

        def update(done: int, new_total: int | None = None) -> None:
            bar.update(task, completed=done, total=new_total if new_total is not None else total)

        yield update


# --- the root group --------------------------------------------------------------


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from gitmem.config import DISTRIBUTION

    try:
        from importlib.metadata import PackageNotFoundError, version

        number = version(DISTRIBUTION)
    except PackageNotFoundError:
        number = "unknown (not installed)"
    say(f"gitmem {number} (distribution {DISTRIBUTION}, Python {sys.version.split()[0]})")
    ctx.exit()


@click.group(cls=GitmemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version", is_flag=True, expose_value=False, is_eager=True, callback=_version, help="Print the version and exit."
)
@origin_options
@common_options
@click.pass_context
def cli(ctx: click.Context) -> None:
    """gitmem: versioned memory for AI agents, stored as bare git repositories.

    Each memory (a mount) is <root>/<name>.git. Every change is one commit; a
    file's version is its blob id, and writes name the version they expect.
    Exit codes: 0 done, 1 refused (the message names the error code), 2 usage.
    """
    ctx.ensure_object(State)


def main() -> None:
    """The ``gitmem`` entry point."""
    cli.main(prog_name="gitmem")
