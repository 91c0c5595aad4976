"""What the CLI prints, without click: lines, JSON documents, refusals and their hints.

Both ways a command runs print through here: the click commands (``app`` re-exports
these names) and the click-free quick path of ``ls``, ``cat`` and ``--help``
(:mod:`gitmem.adapters.cli.quick`), which so prints the same bytes by construction.
Every human-facing line goes through :func:`say`, which shows control, format and
other invisible characters as escapes (:func:`~gitmem.fileformat.visible`): memory
content, descriptions, commit text and run names come from agents, and must not move
an admin's cursor, retitle the terminal or hide text. JSON goes through
:func:`say_json` unchanged (the encoder escapes what could act on a terminal).
"""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Iterable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

    from gitmem.errors import MemoryStoreError
    from gitmem.model import FileText

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2

#: An ANSI style sequence, as ``click.echo`` strips them from output that is not a terminal.
_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def well_configured(stream: TextIO | None) -> bool:
    """Whether ``stream`` is written as it is: a stream whose encoding is missing or ASCII
    is re-wrapped by click (as UTF-8), and is left to click here too."""
    if stream is None:
        return True
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name != "ascii"
    except LookupError:  # an encoding click cannot name is used as it is
        return True


def echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    """Write ``text`` as ``click.echo`` writes a string on a POSIX system.

    The standard stream is looked up at each call (a test may have replaced it); a
    missing one swallows the text; style sequences are removed unless the stream is a
    terminal; the stream is flushed. A stream that click would re-wrap (an ASCII or
    missing encoding) is handed to click itself.
    """
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    if not well_configured(stream):
        import click

        click.echo(text, err=err, nl=nl)
        return
    out = text + "\n" if nl else text
    if not out:
        stream.flush()
        return
    if "\033" in out and _strips_styles(stream):
        out = _ANSI.sub("", out)
    stream.write(out)
    stream.flush()


def _strips_styles(stream: TextIO) -> bool:
    """Whether click would remove style sequences before writing to ``stream``."""
    if hasattr(stream, "color"):  # click's pager strips them itself
        return False
    try:
        terminal = stream.isatty()
    except Exception:  # click treats any failure as "not a terminal"
        terminal = False
    return not terminal and not stream.__class__.__module__.startswith("ipykernel.")


def say(text: str = "", *, err: bool = False, nl: bool = True, multiline: bool = False) -> None:
    """Print one human-facing line (or, with ``multiline``, a block of content) made :func:`visible`."""
    if not _plain(text, multiline):
        from gitmem.fileformat import visible  # the path rules: `gitmem --help` prints without them

        text = visible(text, multiline=multiline)
    echo(text, err=err, nl=nl)


def _plain(text: str, multiline: bool) -> bool:
    """Whether :func:`~gitmem.fileformat.visible` leaves ``text`` as it is: printable ASCII and
    tabs (with ``multiline``, newlines too). Then :func:`say` prints it without loading the path rules."""
    if not text.isascii():
        return False
    text = text.replace("\t", "")
    return (text.replace("\n", "") if multiline else text).isprintable()


def say_lines(lines: Iterable[str]) -> None:
    """Print human-facing lines as :func:`say` prints each, in one write (a listing of thousands)."""
    from gitmem.fileformat import visible

    text = "".join(visible(line) + "\n" for line in lines)
    if text:
        echo(text, nl=False)


def say_json(value: Any) -> None:
    """Print one JSON document (its encoder escapes every control character)."""
    import json

    echo(json.dumps(value, ensure_ascii=False))


#: The most bytes a command reads of stdin: far above any memory file or record; the store's own rules decide below it.
STDIN_LIMIT = 64 * 1024 * 1024


def stdin_bytes(size: int) -> bytes:
    """At most ``size`` bytes of stdin: the one read of it every command makes (``unavailable`` when there is none).

    A process started with its stdin closed has no ``sys.stdin`` at all, and one whose
    stdin cannot be read (a folder) fails the read: each is a refusal naming stdin, never
    a traceback. A stdin left non-blocking (the flag belongs to the pipe, which whoever
    started the command may have set) is read to its end all the same, waiting whenever
    it is empty: a buffered read returns what had arrived at the writer's first pause.
    """
    from gitmem.errors import MemoryStoreError

    stream = sys.stdin
    if stream is None:
        raise MemoryStoreError("unavailable", "stdin is closed; give the content on stdin (or name a file)")
    try:
        fd = _non_blocking_fd(stream)
        data = stream.buffer.read(size) if fd is None else _read_waiting(fd, size)
    except (OSError, ValueError) as exc:  # ValueError: a stream closed under us
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise MemoryStoreError("unavailable", f"cannot read stdin: {why}") from None
    if data is None:  # a non-blocking descriptor with nothing to read yet
        raise MemoryStoreError("unavailable", "cannot read stdin: it is non-blocking and had nothing to read")
    return data


def _non_blocking_fd(stream: object) -> int | None:
    """The descriptor of ``stream`` when it is one set non-blocking, else ``None`` (also for a stream without one)."""
    import os

    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
        return fd if isinstance(fd, int) and not os.get_blocking(fd) else None
    except (AttributeError, OSError, ValueError):  # a test runner's stream: no descriptor
        return None


def _read_waiting(fd: int, size: int) -> bytes:
    """At most ``size`` bytes of non-blocking ``fd``, up to its end: each time it is empty, wait until it is not."""
    import os
    import select

    chunks: list[bytes] = []
    got = 0
    while got < size:
        try:
            chunk = os.read(fd, min(size - got, 1 << 20))
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_stdin(*, errors: str = "strict", limit: int = STDIN_LIMIT, what: str = "stdin") -> str:
    """All of stdin as UTF-8 text, read bounded: a stream that does not end (``< /dev/zero``) is ``too_large``.

    The bound is checked before the bytes are decoded: one byte past it may cut a
    multi-byte character, and text that is only too long is refused as too long, never as
    "not UTF-8". ``errors="strict"``: bytes that are not UTF-8 are ``invalid_file``; a caller
    with its own check of the text (a record's) passes ``"surrogateescape"`` and refuses them
    there. ``what`` names the input in the refusals (``"the change set"``).
    """
    from gitmem.errors import MemoryStoreError

    data = stdin_bytes(limit + 1)
    if len(data) > limit:
        raise MemoryStoreError("too_large", f"{what} is longer than {limit} bytes; nothing was read into memory")
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        raise MemoryStoreError("invalid_file", f"{what} is not UTF-8 text (byte {exc.start})") from None


def short(version: str | None) -> str:
    return version[:12] if version else "-"


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def file_json(text: FileText | None) -> dict[str, Any] | None:
    if text is None:
        return None
    return {"path": text.path, "version": text.version, "size": text.size, "content": text.text}


def error_json(exc: MemoryStoreError, hint: str) -> dict[str, Any]:
    """The error shape, shared with the agent tools: ``{error, message, hint, current}``."""
    return {"error": exc.code, "message": exc.message, "hint": hint, "current": file_json(exc.current)}


def show_refusal(exc: MemoryStoreError, *, as_json: bool, command: str, params: Mapping[str, Any]) -> None:
    """Print a refused store call: one JSON document on stdout, or the code, message and hint on stderr."""
    from gitmem.errors import situation

    exc = situation(exc)  # the code every surface gives this situation
    what_to_do = hint(exc, command, params)
    if as_json:
        say_json(error_json(exc, what_to_do))
        return
    say(f"error [{exc.code}]: {exc.message}", err=True)
    if exc.current is not None:
        say(f"  current: {exc.current.path} version {exc.current.version} ({exc.current.size} B)", err=True)
    say(f"  what to do: {what_to_do}", err=True)


def hint(exc: MemoryStoreError, command: str, params: Mapping[str, Any]) -> str:
    """What the user can do about a refusal, phrased with the command's own arguments.

    A code names a situation, and some codes span several (``version_mismatch`` is a
    file that moved on, or a remote ahead of this memory): a hint about a file is only
    given when the refusal carries one or the command names one, one about a remote
    only to the remote commands. Anything else gets the code's own advice from
    :data:`gitmem.errors.CODES`, true in every situation the code is used for.
    """
    from gitmem.errors import CODES

    name = params.get("name") or "NAME"
    path = params.get("path") or params.get("source")
    code = exc.code
    if command in ("revoke", "rotate") and code in ("not_found", "ambiguous_match"):
        return "`gitmem token list --file FILE` shows each token's id and principal"
    current = exc.current
    remote = command in ("push", "pull", "clone", "fetch")
    if code == "version_mismatch" and command == "revert":
        where = current.path if current is not None else "a file it changed"
        return (
            f"a later change touched {where}; see `gitmem log {name} {where}` and put the old content back "
            f"with `gitmem restore {name} {where} --rev REV`, or edit it by hand"
        )
    if code == "version_mismatch" and remote:
        other = params.get("remote_name") or "origin"
        return f"nothing was pushed; run `gitmem pull {name} {other}`, then push again"
    if code == "version_mismatch" and current is not None:
        return (
            f"the file is now at version {current.version}; re-read it "
            f"(`gitmem cat {name} {current.path}`) and retry with --expect {current.version}"
        )
    if code == "already_exists" and current is not None:
        if command == "write":
            return (
                f"{current.path} is there (version {current.version}); change it with `gitmem edit {name} "
                f"{current.path}`, or replace it with `gitmem write {name} {current.path} --expect {current.version}`"
            )
        return (
            f"choose another path, or remove {current.path} first "
            f"(`gitmem rm {name} {current.path} --expect {current.version}`)"
        )
    if code == "unknown_memory":
        return "check the memory name with `gitmem mounts` (or create it with `gitmem init NAME`)"
    if code == "not_found":
        return _not_found_hint(exc.message, command, params, name, path)
    if code == "too_large":
        return (
            f"nothing was written; shorten the file, or raise the limit: `gitmem config {name}` shows the limits, "
            f"`gitmem config {name} gitmem.maxFileBytes 1m` raises the largest file"
        )
    if code == "invalid_file" and command == "config":
        return f"nothing was changed; `gitmem config {name}` lists the keys and the values in force"
    if code in ("invalid_path", "invalid_file"):
        return "nothing was written; fix the path or content and run the command again"
    if code == "invalid_pattern" and params.get("regex") is False:
        return "give the text to look for: not empty, and on one line (a literal matches within a line)"
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
        if lowered.startswith(("stdin ", "cannot read stdin")):  # first: "non-blocking" is not about a lock
            return "give the content on an open, readable stdin (a pipe, or a file redirected with <), or name a file"
        if "lock" in lowered or "timed out" in lowered or "busy" in lowered:
            return "another writer holds the memory's lock; retry shortly"
        if "config" in lowered:
            return f"fix the value named above (`gitmem config {name} KEY VALUE`, or `--unset`)"
        if remote and lowered.startswith(("git fetch", "git push", "git ls-remote")):
            return "the remote did not answer as git expects: check its URL (`gitmem remote list`), the network and your access"
        return "check the --root folder and the memory's files: do they exist, and may this user read and write them?"
    if code == "no_match" and path:
        return f"the --old text is not in the file; check it with `gitmem cat {name} {path}`"
    if code == "record_not_found":
        return f"list the namespace's records with `gitmem records list {name} -n NS` (ids are per namespace)"
    if code == "write_unconfirmed":
        return f"the change may or may not have happened; check with `gitmem records search {name} ...` before retrying"
    if code == "wrong_kind":
        return (
            "file memories use the file commands; record, session and durable memories "
            "`gitmem records|session|durable ...` (history: `gitmem log` works on every kind)"
        )
    _, what_to_do = CODES.get(code, ("", "see docs/errors.md"))
    return what_to_do


def _not_found_hint(message: str, command: str, params: Mapping[str, Any], name: str, path: object) -> str:
    """``not_found`` has many causes; the hint follows the one the message names."""
    lowered = message.lower()
    if command == "import" and params.get("history"):
        return "check --history REPO (a git repository: a folder or a URL) and --rev (one of its branches or tags)"
    if params.get("since") and ("since" in lowered or str(params.get("since")) in message):
        return "--since takes a date (2025-01-31, 2025-01-31T12:00), a relative one (yesterday, 2.weeks, '3 days ago') or a revision"
    if "proposal" in lowered or (command in ("approve", "reject", "show") and params.get("id")):
        return f"no such open proposal: it may be approved or rejected already; see `gitmem review list {name}`"
    if "revision" in lowered or "commit" in lowered or params.get("rev"):
        return f"check the revision with `gitmem log {name}` (a commit id of 7+ digits, main, main~3)"
    if "remote" in lowered:
        return f"check the remote's name with `gitmem remote list {name}`"
    if path:
        return f"check the path with `gitmem ls {name}`"
    from gitmem.errors import CODES

    _, what_to_do = CODES["not_found"]
    return what_to_do


def scrub_log_records() -> None:
    """From now on, every log record of this process says what it says with a URL's
    credentials hidden (:func:`gitmem.secrets.scrub_credentials`), its traceback too.

    Installed by the commands that serve (``serve``, ``mcp``, ``watch``): their logs
    are the server's, and a message from any library (an embedding service's error
    naming its URL and key) may repeat a credential. The CLI owns its process, so
    the record factory is its to set; gitmem used as a library leaves logging alone.
    """
    import logging

    from gitmem.secrets import scrub_credentials

    made = logging.getLogRecordFactory()
    if getattr(made, "scrubs_credentials", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = made(*args, **kwargs)
        try:
            said = record.getMessage()
        except Exception:  # a bad format string: logging itself reports it when the record is handled
            return record
        clean = scrub_credentials(said)
        if clean != said:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = scrub_credentials(text)  # what every Formatter prints for the traceback
        return record

    factory.scrubs_credentials = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
