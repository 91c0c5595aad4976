"""What ``ls``, ``cat``, ``grep`` and ``find`` do once their arguments are known, without click.

The click commands (:mod:`gitmem.adapters.cli.files`) and the quick path
(:mod:`gitmem.adapters.cli.quick`) both call these, so a listing or a file prints the
same bytes whichever parsed the command line. A refusal is raised as
:class:`~gitmem.errors.MemoryStoreError` for the caller to show.
"""

from __future__ import annotations

from gitmem.adapters.cli.output import say, say_json, say_lines, short, stderr_is_tty
from gitmem.errors import MemoryStoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from gitmem.index import FindHit
    from gitmem.model import FileEntry, FileText, SearchResult
    from gitmem.root import Root

    class Reader(Protocol):
        """Where the files come from: the CLI's ``State`` (``--run`` and ``--rev`` included),
        or the quick path's view of ``main``."""

        def listing(self, name: str) -> list[FileEntry]: ...

        def read(self, name: str, path: str, rev: str | None = None) -> FileText: ...


def directory_arg(directory: str | None) -> str:
    """``prefs``, ``prefs/`` and ``/`` are all accepted; the store wants ``prefs/`` or ``""``."""
    if not directory or directory == "/":
        return ""
    from gitmem.fileformat import validate_directory

    return validate_directory(directory.rstrip("/") + "/")


def ls(reader: Reader, name: str, directory: str, *, as_json: bool) -> None:
    """Print the files of memory ``name`` (under ``directory``): one line each, or one JSON document."""
    prefix = directory_arg(directory)
    entries = [e for e in reader.listing(name) if e.path.startswith(prefix)]
    if prefix and not entries:
        raise MemoryStoreError("not_found", f"no files under {prefix} in memory {name!r}")
    if as_json:
        files = [{"path": e.path, "version": e.version, "size": e.size, "description": e.description} for e in entries]
        say_json({"memory": name, "directory": prefix, "files": files})
        return
    width = max((len(e.path) for e in entries), default=0)
    say_lines(f"{e.path:{width}}  {e.size:6d} B  {short(e.version)}  {e.description or ''}".rstrip() for e in entries)


def grep(
    root: Root, name: str, pattern: str, regex: bool, case_sensitive: bool, directory: str, limit: int, *, as_json: bool
) -> None:
    """Print the lines of memory ``name``'s ``main`` that match ``pattern`` (``gitmem grep`` without ``--run``)."""
    from gitmem import quickread

    where = directory_arg(directory)
    result = quickread.search(root, name, pattern, regex=regex, case_sensitive=case_sensitive, path=where, limit=limit)
    print_matches(name, result, limit, as_json=as_json)


def find(root: Root, name: str, query: str, directory: str, limit: int, *, as_json: bool) -> None:
    """Print the files of memory ``name``'s ``main`` that best match ``query`` (``gitmem find`` without ``--run``)."""
    from gitmem import quickread

    hits = quickread.find(root, name, query, path=directory_arg(directory), limit=limit)
    print_hits(name, query, hits, as_json=as_json)


def print_hits(name: str, query: str, hits: list[FindHit], *, as_json: bool) -> None:
    """A find's answer: ``score  path  snippet`` lines, or one JSON document."""
    if as_json:
        from dataclasses import asdict

        say_json({"memory": name, "query": query, "hits": [asdict(h) for h in hits]})
        return
    width = max((len(h.path) for h in hits), default=0)
    say_lines(f"{h.score:7.2f}  {h.path:{width}}  {h.snippet}".rstrip() for h in hits)


def print_matches(name: str, result: SearchResult, limit: int, *, as_json: bool) -> None:
    """A grep's answer: ``path:line:text`` lines (and a note on stderr when cut at ``limit``), or one JSON document."""
    if as_json:
        matches = [{"path": m.path, "line": m.line, "text": m.text} for m in result.matches]
        say_json({"memory": name, "matches": matches, "truncated": result.truncated})
        return
    say_lines(f"{m.path}:{m.line}:{m.text}" for m in result.matches)
    if result.truncated:
        say(f"(more lines matched; raise --limit above {limit} to see them)", err=True)


def cat(reader: Reader, name: str, path: str, rev: str | None, *, as_json: bool) -> None:
    """Print file ``path`` of memory ``name`` (at ``rev``): its content, or one JSON document."""
    found = reader.read(name, path, rev)
    if as_json:
        say_json(file_payload(name, found, rev))
        return
    say(found.text, nl=False, multiline=True)
    if stderr_is_tty():
        say(f"\n-- {found.path} version {found.version}", err=True, multiline=True)


def file_payload(name: str, found: FileText, rev: str | None) -> dict[str, Any]:
    """The JSON document of one file of memory ``name`` (``cat --json``, ``show --json``)."""
    return {"memory": name, "path": found.path, "version": found.version, "size": found.size, "rev": rev, "content": found.text}
