"""``gitmem --help`` without click: the root group's texts, and its page laid out as click lays it out.

The root group (:data:`gitmem.adapters.cli.app.cli`) takes its help and its options'
help from the constants here, and the quick path renders the page from the same
constants and the command summaries of :data:`gitmem.adapters.cli.commandtable.COMMANDS`:
one source for both. The layout follows click's help formatter (a terminal
width clamped to 50-78 columns, paragraphs re-wrapped, a two-column list for
options and commands, each command's first sentence shortened to fit);
``tests/cli/test_cli_quick.py`` compares the page with click's own at many widths.
Anything the layout here does not cover (a word too long for its column, a
no-rewrap block) makes :func:`page` answer ``None``, and click prints the page.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

#: The root group's help (its docstring, as click shows it).
ROOT_HELP = """gitmem: versioned memory for AI agents, stored as bare git repositories.

Each memory (a mount) is <root>/<name>.git. Every change is one commit; a
file's version is its blob id, and writes name the version they expect.
Exit codes: 0 done, 1 refused (the message names the error code), 2 usage."""

VERSION_HELP = "Print the version and exit."
PRINCIPAL_HELP = (
    "Principal recorded as the commit author and Gitmem-Principal trailer "
    "(default: $GITMEM_PRINCIPAL, else your login name)."
)
RUN_HELP = "Run id recorded in the Gitmem-Run trailer (default: $GITMEM_RUN)."
READ_RUN_HELP = "Read as run RUN_ID sees the memory: its proposal while under review (default: $GITMEM_RUN)."
JSON_HELP = "Print one JSON document on stdout (see docs/cli.md for the shapes)."
ROOT_DIR_HELP = "Folder of mounts (default: $GITMEM_ROOT, else $XDG_DATA_HOME/gitmem or ~/.local/share/gitmem)."
HELP_HELP = "Show this message and exit."

#: The root group's options as its help lists them, in declaration order.
ROOT_OPTIONS: tuple[tuple[str, str], ...] = (
    ("--version", VERSION_HELP),
    ("--principal WHO", PRINCIPAL_HELP),
    ("--run RUN_ID", RUN_HELP),
    ("--json", JSON_HELP),
    ("--root DIRECTORY", ROOT_DIR_HELP),
    ("-h, --help", HELP_HELP),
)
USAGE_ARGS = "[OPTIONS] COMMAND [ARGS]..."

_INDENT = 2  # each section's body is indented this far
_FIRST_COLUMN_MAX = 30
_COLUMN_GAP = 2


class _Unsupported(Exception):
    """A layout case left to click."""


def terminal_columns() -> int:
    """The terminal's width as :func:`shutil.get_terminal_size` gives it (``$COLUMNS`` first, then stdout, else 80)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size((80, 24))
        columns = size.columns or 80
    return columns


def page(prog: str, summaries: Iterable[tuple[str, str]], columns: int | None = None) -> str | None:
    """The help page of the root group as click prints it (without the final newline), or ``None``.

    ``summaries`` are (command, first sentence of its help) pairs, listed in name
    order; ``columns`` is the terminal width (read from the terminal when ``None``).
    """
    width = max(min(terminal_columns() if columns is None else columns, 80) - 2, 50)
    try:
        return _page(prog, sorted(summaries), width)
    except _Unsupported:
        return None


def _page(prog: str, commands: list[tuple[str, str]], width: int) -> str:
    indent = " " * _INDENT
    prefix = f"Usage: {prog} "
    if width < len(prefix) + 20:
        raise _Unsupported("the usage line would not fit beside its prefix")
    out = [_wrap(USAGE_ARGS, width, prefix, " " * len(prefix)), "\n"]
    out += ["\n", _wrap(ROOT_HELP, width, indent, indent, paragraphs=True), "\n"]
    out += ["\n", "Options:\n", _columns(ROOT_OPTIONS, width)]
    if commands:
        limit = width - 6 - max(len(name) for name, _ in commands)
        rows = [(name, _shorten(summary, limit)) for name, summary in commands]
        out += ["\n", "Commands:\n", _columns(rows, width)]
    return "".join(out).rstrip("\n")


def _shorten(summary: str, limit: int) -> str:
    """A command's summary cut to ``limit`` characters at a word, with ``...``."""
    text = " ".join(summary.split())
    if len(text) <= limit:
        return text
    if limit < 3:
        return "..."
    import textwrap

    return textwrap.shorten(text, limit, placeholder="...", break_on_hyphens=False).strip()


def _columns(rows: Iterable[tuple[str, str]], width: int) -> str:
    """Terms and their texts in two columns; a term too wide for the first column gets a line of its own."""
    rows = list(rows)
    first = min(max(len(term) for term, _ in rows), _FIRST_COLUMN_MAX) + _COLUMN_GAP
    text_width = max(width - first - 2, 10)
    out: list[str] = []
    for term, text in rows:
        out.append(" " * _INDENT + term)
        if not text:
            out.append("\n")
            continue
        if len(term) <= first - _COLUMN_GAP:
            out.append(" " * (first - len(term)))
        else:
            out.append("\n" + " " * (first + _INDENT))
        lines = _wrap(text, text_width, paragraphs=True).splitlines() or [""]
        out.append(lines[0] + "\n")
        out.extend(" " * (first + _INDENT) + line + "\n" for line in lines[1:])
    return "".join(out)


def _wrap(text: str, width: int, first: str = "", rest: str = "", *, paragraphs: bool = False) -> str:
    """``text`` filled to ``width``; with ``paragraphs``, each blank-line-separated paragraph on its own,
    keeping the indent of its first line."""
    import textwrap

    text = text.expandtabs()
    if "\b" in text or "\033" in text:
        raise _Unsupported("no-rewrap blocks and styled text")
    blocks: list[tuple[int, str]] = []
    if not paragraphs:
        blocks.append((0, text))
    else:
        lines: list[str] = []
        lead = 0
        for line in [*text.splitlines(), ""]:
            if line:
                if not lines:
                    lead = len(line) - len(line.lstrip())
                    line = line.lstrip()
                lines.append(line)
            elif lines:
                blocks.append((lead, " ".join(lines)))
                lines = []
    filled = []
    for lead, block in blocks:
        head, tail = first + " " * lead, rest + " " * lead
        if any(len(word) > width - max(len(head), len(tail)) for word in block.split()):
            raise _Unsupported("a word longer than its line")
        wrapper = textwrap.TextWrapper(width, initial_indent=head, subsequent_indent=tail, replace_whitespace=False)
        filled.append(wrapper.fill(block))
    return "\n\n".join(filled)
