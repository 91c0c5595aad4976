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
  ``tests/cli/test_cli_visible.py`` checks that nothing else prints. The printing
  itself, and the refusal hints, live in the click-free :mod:`.output`, which the
  quick path of ``ls``, ``cat`` and ``--help`` (:mod:`.quick`) prints through too.
"""

from __future__ import annotations

import importlib
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

from gitmem.adapters.cli import roothelp
from gitmem.adapters.cli.commandtable import COMMANDS, LONG_RUNNING
from gitmem.adapters.cli.origin import cli_origin
from gitmem.adapters.cli.origin import login_name as login_name

# Re-exported for the command modules (``as``): what they print goes through gitmem.adapters.cli.output.
from gitmem.adapters.cli.output import EXIT_REFUSED as EXIT_REFUSED
from gitmem.adapters.cli.output import say as say
from gitmem.adapters.cli.output import say_json as say_json
from gitmem.adapters.cli.output import short as short
from gitmem.adapters.cli.output import show_refusal, stderr_is_tty
from gitmem.config import default_root
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import visible
from gitmem.model import Value

if TYPE_CHECKING:  # imported when a command opens a memory: `--help` and usage errors stay fast
    from gitmem.gitstore import SyncGitFileStore
    from gitmem.model import FileEntry, FileText, Origin
    from gitmem.root import Root

F = TypeVar("F", bound=Callable[..., Any])


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
        return cli_origin(self.principal, self.run)

    def store(self, name: str) -> SyncGitFileStore:
        """The sync store of mount ``name`` as ``--run`` sees it; ``unknown_memory`` when there is no such memory.

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


def acting_principal(state: State, doing: str) -> str:
    """Who approves, rejects or activates: ``--principal`` (or ``$GITMEM_PRINCIPAL``), else the login name.

    ``getpass.getuser`` reads ``$LOGNAME``/``$USER`` and then the password database;
    a container user with neither gets a usage error naming the option instead.
    """
    name = state.principal or login_name()
    if name is None:
        raise usage_error(
            f"cannot tell who {doing}: no login name here; pass --principal WHO (or set $GITMEM_PRINCIPAL)"
        )
    return name


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


def _state_option(*decls: str, attr: str, **attrs: Any) -> Callable[[F], F]:
    """An option that sets ``State.<attr>`` through :func:`_set` instead of becoming a parameter."""
    return click.option(*decls, expose_value=False, callback=_set(attr), **attrs)


#: ``--root DIR``: the folder of mounts (default ``$GITMEM_ROOT``, then ``~/.local/share/gitmem``).
root_option = _state_option("--root", attr="root_dir", type=FOLDER, help=roothelp.ROOT_DIR_HELP)
#: ``--json``: print one JSON document on stdout (errors too) instead of text.
json_option = _state_option("--json", "as_json", attr="json", is_flag=True, default=False, help=roothelp.JSON_HELP)
#: ``--run`` on a read: see the memory as that run does (its proposal while under review).
read_run_option = _state_option("--run", attr="run", metavar="RUN_ID", envvar="GITMEM_RUN", help=roothelp.READ_RUN_HELP)
_run_option = _state_option("--run", attr="run", metavar="RUN_ID", envvar="GITMEM_RUN", help=roothelp.RUN_HELP)
_principal_option = _state_option(
    "--principal", attr="principal", metavar="WHO", envvar="GITMEM_PRINCIPAL", help=roothelp.PRINCIPAL_HELP
)


def origin_options(f: F) -> F:
    """``--principal`` and ``--run``: who the change is attributed to (commit author and trailers)."""
    return _principal_option(_run_option(f))


def common_options(f: F) -> F:
    """``--json`` and ``--root``, which every command accepts."""
    return json_option(root_option(f))


# --- errors ----------------------------------------------------------------------


def _scrubbed_usage_errors(parse: Callable[[click.Context, list[str]], list[str]], ctx: click.Context, args: list[str]) -> list[str]:
    """Parse ``args``; a usage error repeating an argument (``Directory 'https://u:pw@…' does not
    exist``) is shown with a URL's credentials hidden, as every other message is."""
    try:
        return parse(ctx, args)
    except click.ClickException as exc:
        if "://" in exc.message:
            from gitmem.secrets import scrub_credentials

            vars(exc)["message"] = scrub_credentials(exc.message)  # click types it Final; it is a plain attribute
        raise


class GitmemCommand(click.Command):
    """A command whose store refusals become exit code 1 and an actionable message."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return _scrubbed_usage_errors(super().parse_args, ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        if self.name in LONG_RUNNING:
            from gitmem.adapters.cli.output import scrub_log_records

            scrub_log_records()  # what a server logs never holds a URL's credentials
        try:
            return super().invoke(ctx)
        except MemoryStoreError as exc:
            state = ctx.find_object(State) or State()
            show_refusal(exc, as_json=state.json, command=ctx.command.name or "", params=ctx.params)
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

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return _scrubbed_usage_errors(super().parse_args, ctx, args)

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
            ctx = getattr(exc, "ctx", None)
            hint = f"see `{ctx.command_path if ctx is not None else 'gitmem'} --help`"
            say_json({"error": "usage", "message": exc.format_message(), "hint": hint, "current": None})
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            say("Aborted!", err=True)
            say_json({"error": "usage", "message": "aborted", "hint": "", "current": None})
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def usage_error(message: str) -> click.UsageError:
    """A mistake in how the command was called: exit code 2, nothing touched."""
    return click.UsageError(visible(message), ctx=click.get_current_context(silent=True))


def confirm(yes: bool, what: str) -> None:
    """``--yes`` given for what cannot be undone; else a usage error asking for it."""
    if not yes:
        raise usage_error(f"{what} cannot be undone; pass --yes to go ahead")


# --- rendering -------------------------------------------------------------------


def to_json(value: Any) -> Any:
    """Plain JSON data from the core's frozen values (:class:`~gitmem.model.Value`s and dataclasses), tuples and mappings."""
    if isinstance(value, Value):
        return {name: to_json(getattr(value, name)) for name in value.__match_args__}
    if hasattr(value, "__dataclass_fields__"):
        return {k: to_json(v) for k, v in asdict(value).items()}
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def emit(payload: Mapping[str, Any], text: str | Callable[[], None] | None = None) -> None:
    """Render a command's result: ``payload`` as JSON, or ``text`` (a string or a printer)."""
    if click.get_current_context().ensure_object(State).json:  # found in the root group's context
        say_json(to_json(payload))
    elif callable(text):
        text()
    elif text is not None:
        say(text, multiline=True)


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


@click.group(cls=GitmemGroup, help=roothelp.ROOT_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version", is_flag=True, expose_value=False, is_eager=True, callback=_version, help=roothelp.VERSION_HELP
)
@origin_options
@common_options
@click.pass_context
def cli(ctx: click.Context) -> None:
    # The help text is roothelp.ROOT_HELP, which the quick path prints too.
    ctx.ensure_object(State)


cli.lazy = MappingProxyType(
    {name: f"gitmem.adapters.cli.{module}" for module, names in COMMANDS.items() for name in names}
)


def main() -> None:
    """The ``gitmem`` entry point through click (:func:`gitmem.adapters.cli.main` tries the quick path first)."""
    cli.main(prog_name="gitmem")
