"""The quick path: ``gitmem ls``, ``cat``, ``grep``, ``find``, ``push``, ``pull`` and ``gitmem --help`` without click.

Every CLI call is a new process. Importing click (with ``inspect``, ``uuid`` and its
parameter types), building a command's options and running click's parser cost
more than listing a memory of a few hundred files, and agents and scripts make
these calls in loops. So the simple forms of these are recognised here::

    gitmem --help                                  (or -h)
    gitmem [GROUP OPTIONS] ls NAME [DIRECTORY]     (options also among the arguments)
    gitmem [GROUP OPTIONS] cat NAME PATH
    gitmem [GROUP OPTIONS] grep NAME PATTERN [-E|--regex] [-s|--case-sensitive] [--path DIR] [--limit N]
    gitmem [GROUP OPTIONS] find NAME QUERY [--path DIR] [--limit N]
    gitmem [GROUP OPTIONS] push NAME [REMOTE] [--proposals]
    gitmem [GROUP OPTIONS] pull NAME [REMOTE] [--propose] [--principal WHO]

where the group options are ``--json``, ``--root DIR`` and ``--principal WHO``, and
the commands take ``--json`` and ``--root DIR`` (a pull also ``--principal``, the last one typed winning, else ``$GITMEM_PRINCIPAL``). ``grep`` is here because a grep of
a fresh clone, or of a memory with a small index, is answered by ``git grep`` in about
the time click takes to start (docs/benchmarks.md, "Cold starts and growth"), and
``find`` because a current index is read without the store; ``push`` and ``pull``
because their own work (one ``git push``, one fetch and its checks) costs about what
starting click does, and teams run them in loops against a forge (docs/benchmarks.md,
"Teams on a plain forge"); what they run and print is :mod:`.pushpull`'s, which the
click commands call too. A ``--limit`` that is not a
plain number in the command's range (1 to 10000, 1 to 1000) goes to click, which says why. Everything else goes to click:
any other option (``--run``, ``--rev``, ``--help`` after a command, ``--``), a
missing or extra argument, an option value that starts with ``-`` or is empty, a
``--root`` that click would refuse (an existing file or an unreadable folder) or
that starts with ``~``, ``$GITMEM_RUN`` set (reads then follow a run; a pull's merge names it), or a shell
completion request. :func:`run` decides that before it reads or prints anything, so
click's parsing, usage errors and messages stay the one reference.

What the commands print is printed by the code the click commands call
(:mod:`.reads`, :mod:`.output`; the help page from the same texts, see
:mod:`.roothelp`), and a refusal, an interrupt or a closed pipe ends as click ends
it (same stderr, same JSON document, same exit code). ``tests/cli/test_cli_quick.py``
and ``tests/cli/test_cli_quick_sync.py`` run many command lines both ways and compare
stdout, stderr and exit codes.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable, Mapping

from gitmem.adapters.cli.output import EXIT_OK, EXIT_REFUSED, echo, say, say_json, show_refusal
from gitmem.errors import MemoryStoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from gitmem.model import FileEntry, FileText
    from gitmem.root import Root

#: Commands of the quick path, with how many arguments each takes (fewest, most).
_ARGUMENTS = {"ls": (1, 2), "cat": (2, 2), "grep": (2, 2), "find": (2, 2), "push": (1, 2), "pull": (1, 2)}
#: Each command's flags, by the parameter click gives them to.
_FLAGS = {
    "grep": {"-E": "regex", "--regex": "regex", "-s": "case_sensitive", "--case-sensitive": "case_sensitive"},
    "push": {"--proposals": "proposals"},
    "pull": {"--propose": "propose"},
}
#: Each command's own options that take a value (besides ``--root``).
_VALUED = {"grep": ("--path", "--limit"), "find": ("--path", "--limit"), "pull": ("--principal",)}
#: The most lines or files ``--limit`` may ask for (the click options' IntRange), and its default.
_LIMITS = {"grep": (10_000, 100), "find": (1_000, 10)}
#: Options that take a value: the group accepts both, the commands only ``--root``.
_VALUED_GROUP = ("--root", "--principal")
_VALUED_COMMAND = ("--root",)
#: The environment variable click reads for shell completion of ``gitmem``.
_COMPLETE = "_GITMEM_COMPLETE"


class Call:
    """One understood quick command: its arguments, and the options that change what it does or prints."""

    __slots__ = ("arguments", "as_json", "command", "options", "principal", "root")

    def __init__(
        self,
        command: str,
        arguments: list[str],
        as_json: bool,
        root: str | None,
        options: dict[str, Any] | None = None,
        principal: str | None = None,
    ) -> None:
        self.command = command
        self.arguments = arguments
        self.as_json = as_json
        self.root = root
        self.principal = principal  # the last --principal typed (only a pull uses it)
        self.options: dict[str, Any] = {"regex": False, "case_sensitive": False, "directory": ""}
        self.options.update({"proposals": False, "propose": False})
        self.options["limit"] = _LIMITS[command][1] if command in _LIMITS else 100
        self.options.update(options or {})

    def params(self) -> dict[str, Any]:
        """The command's parameters as click names them (what a refusal's hint is phrased with)."""
        if self.command == "ls":
            directory = self.arguments[1] if len(self.arguments) > 1 else ""
            return {"name": self.arguments[0], "directory": directory}
        if self.command == "grep":
            return {"name": self.arguments[0], "pattern": self.arguments[1], **self.options}
        if self.command == "find":
            o = self.options
            return {"name": self.arguments[0], "query": self.arguments[1], "directory": o["directory"], "limit": o["limit"]}
        if self.command in ("push", "pull"):
            flag = "proposals" if self.command == "push" else "propose"
            return {"name": self.arguments[0], "remote_name": self.remote, flag: self.options[flag]}
        return {"name": self.arguments[0], "path": self.arguments[1], "rev": None}

    @property
    def remote(self) -> str:
        """A push's or pull's remote: its second argument, else ``origin`` (click's default)."""
        return self.arguments[1] if len(self.arguments) > 1 else "origin"


def run(argv: list[str], *, entry: bool = False) -> int | None:
    """Run ``gitmem ARGV`` when it is one of the quick forms and answer its exit code;
    ``None`` (having done nothing) when click must run it. ``entry`` (the ``gitmem``
    entry point, nothing else): a push or a pull ends the process (:func:`leave`)."""
    if _COMPLETE in os.environ:
        return None
    if len(argv) == 1 and argv[0] in ("--help", "-h"):
        return _help()
    call = parse(argv, os.environ)
    if call is None:
        return None
    code = _finish(call.as_json, lambda: _read(call))
    if entry and call.command in ("push", "pull"):
        leave(code)
    return code


def leave(code: int) -> NoReturn:
    """End this process with ``code`` once stdout and stderr are flushed, without the interpreter's teardown.

    A push or a pull has finished everything by then (the quarantine is deleted, the
    locks are let go, the output written); tearing down every module it loaded (libgit2
    for a pull) would cost a ``gitmem push`` about a tenth of what git's own push does.
    A stream that cannot be flushed (the reader went away) is left as click leaves it.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def parse(argv: list[str], environ: Mapping[str, str]) -> Call | None:
    """The quick command ``argv`` asks for, or ``None`` for anything else."""
    if "GITMEM_RUN" in environ:
        return None
    as_json = False
    root: str | None = None
    principal: str | None = None
    at = 0
    while at < len(argv):  # options before the command name: the group's
        arg = argv[at]
        if arg == "--json":
            as_json, at = True, at + 1
            continue
        taken = _value(argv, at, _VALUED_GROUP)
        if taken is None:
            break
        name, value, at = taken
        if value is None:
            return None
        if name == "--root":
            root = value
        else:
            principal = value
    if at >= len(argv) or argv[at] not in _ARGUMENTS:
        return None
    command = argv[at]
    flags = _FLAGS.get(command, {})
    valued = _VALUED.get(command, ())
    arguments: list[str] = []
    options: dict[str, Any] = {}
    at += 1
    while at < len(argv):
        arg = argv[at]
        if arg == "--json":
            as_json, at = True, at + 1
            continue
        taken = _value(argv, at, _VALUED_COMMAND)
        if taken is not None:
            _, root, at = taken
            if root is None:
                return None
            continue
        if arg in flags:
            options[flags[arg]], at = True, at + 1
            continue
        taken = _value(argv, at, valued) if valued else None
        if taken is not None:
            name, value, at = taken
            if value is None:
                return None
            if name == "--principal":
                principal = value
                continue
            if name == "--path":
                options["directory"] = value
                continue
            if not (value.isascii() and value.isdigit() and value[0] != "0" and int(value) <= _LIMITS[command][0]):
                return None  # click's to convert or refuse
            options["limit"] = int(value)
            continue
        if arg.startswith("-"):
            return None
        arguments.append(arg)
        at += 1
    fewest, most = _ARGUMENTS[command]
    if not fewest <= len(arguments) <= most:
        return None
    return Call(command, arguments, as_json, root, options, principal)


def _value(argv: list[str], at: int, names: tuple[str, ...]) -> tuple[str, str | None, int] | None:
    """``--name VALUE`` or ``--name=VALUE`` at ``argv[at]``: (name, value, next index); the value is
    ``None`` when click may read it otherwise (missing, empty, or like an option), and the
    whole answer ``None`` when ``argv[at]`` is none of ``names``."""
    name, equals, value = argv[at].partition("=")
    if name not in names:
        return None
    if not equals:
        if at + 1 >= len(argv):
            return name, None, at + 1
        value, at = argv[at + 1], at + 1
    if not value or value.startswith("-") or (name == "--root" and not _plain_folder(value)):
        return name, None, at + 1
    return name, value, at + 1


def _plain_folder(value: str) -> bool:
    """Whether click takes ``--root VALUE`` as it is: a folder that is absent, or present and
    readable; not a file. A path that starts with ``~`` is left to click too (home may be unknown)."""
    first = next((part for part in value.split("/") if part and part != "."), "")
    if not value.startswith("/") and first.startswith("~"):
        return False
    try:
        found = os.stat(value)
    except OSError:
        return True
    except ValueError:
        return False
    return not stat.S_ISREG(found.st_mode) and os.access(value, os.R_OK)


class _Main:
    """What ``ls`` and ``cat`` read without ``--run`` or ``--rev``: a memory's ``main``; an ``ls``
    of one folder reads only that folder (``reads.ls`` keeps the files under it, and has
    refused a bad folder before it asks)."""

    def __init__(self, root: Root, directory: str = "") -> None:
        self.root = root
        self.directory = directory

    def listing(self, name: str) -> list[FileEntry]:
        from gitmem import quickread
        from gitmem.adapters.cli.reads import directory_arg

        return quickread.list_files(self.root, name, directory_arg(self.directory))

    def read(self, name: str, path: str, rev: str | None = None) -> FileText:
        from gitmem import quickread

        return quickread.read_file(self.root, name, path)


def _read(call: Call) -> int:
    from gitmem.config import default_root_folder
    from gitmem.root import Root

    try:
        root = Root(default_root_folder() if call.root is None else call.root)
        if call.command in ("push", "pull"):
            return _sync(call, root)
        from gitmem.adapters.cli import reads

        if call.command == "ls":
            params = call.params()
            reads.ls(_Main(root, params["directory"]), params["name"], params["directory"], as_json=call.as_json)
        elif call.command == "grep":
            o = call.options
            name, pattern = call.arguments
            reads.grep(root, name, pattern, o["regex"], o["case_sensitive"], o["directory"], o["limit"], as_json=call.as_json)
        elif call.command == "find":
            o = call.options
            name, query = call.arguments
            reads.find(root, name, query, o["directory"], o["limit"], as_json=call.as_json)
        else:
            reads.cat(_Main(root), call.arguments[0], call.arguments[1], None, as_json=call.as_json)
    except MemoryStoreError as exc:
        show_refusal(exc, as_json=call.as_json, command=call.command, params=call.params())
        return EXIT_REFUSED
    return EXIT_OK


def _sync(call: Call, root: Root) -> int:
    """A push or a pull (:mod:`.pushpull`, which the click commands run too)."""
    from gitmem.adapters.cli import pushpull

    name, remote = call.arguments[0], call.remote
    if call.command == "push":
        return pushpull.push(root, name, remote, proposals=call.options["proposals"], as_json=call.as_json)
    from gitmem.adapters.cli.origin import cli_origin

    principal = call.principal or os.environ.get("GITMEM_PRINCIPAL") or None
    origin = cli_origin(principal, None)
    return pushpull.pull(root, name, remote, origin=origin, propose=call.options["propose"], as_json=call.as_json)


def _help() -> int | None:
    from gitmem.adapters.cli import roothelp
    from gitmem.adapters.cli.commandtable import COMMANDS

    text = roothelp.page("gitmem", (item for names in COMMANDS.values() for item in names.items()))
    if text is None:
        return None

    def show() -> int:
        echo(text)
        return EXIT_OK

    return _finish(False, show)


def _finish(as_json: bool, action: Callable[[], int]) -> int:
    """Run ``action`` and end as click ends a command: an interrupt prints ``Aborted!`` (and,
    with ``--json``, a usage document) and exits 1; a closed stdout exits 1 quietly."""
    try:
        return action()
    except (EOFError, KeyboardInterrupt):
        echo("", err=True)  # closes the terminal's ^C echo
        say("Aborted!", err=True)
        if as_json:
            say_json({"error": "usage", "message": "aborted", "hint": "", "current": None})
        return EXIT_REFUSED
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        sys.stdout = _Pacified(sys.stdout)
        sys.stderr = _Pacified(sys.stderr)
        return EXIT_REFUSED


class _Pacified:
    """A standard stream whose flush at exit ignores a closed pipe (the reader went away)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)
