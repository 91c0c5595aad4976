"""Every command is documented in docs/cli.md and has help text (walks the click tree)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click

from gitmem.adapters.cli import cli

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
SHARED = {"--json", "--root", "--principal", "--run", "--help", "-h"}


def walk(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        full = f"{prefix}{name}"
        yield full, command
        if isinstance(command, click.Group):
            yield from walk(command, full + " ")


def sections() -> dict[str, str]:
    """``### `gitmem NAME ...` `` headings to the text under them."""
    text = DOCS.read_text(encoding="utf-8")
    heads = list(re.finditer(r"^#+ (?:`gitmem ([a-z -]+?)(?: [A-Z\[(].*)?`)?.*$", text, flags=re.M))
    out = {}
    for head, following in zip(heads, [*heads[1:], None], strict=True):
        if head.group(1):
            out[head.group(1).strip()] = text[head.start() : following.start() if following else len(text)]
    return out


def test_the_walk_sees_nested_groups() -> None:
    @click.group()
    def top() -> None: ...

    @top.group()
    def sub() -> None: ...

    @sub.command()
    def leaf() -> None: ...

    assert [name for name, _ in walk(top)] == ["sub", "sub leaf"]
    assert "write" in [name for name, _ in walk(cli)]


def test_every_command_has_help_and_a_section_in_the_docs() -> None:
    documented = sections()
    for name, command in walk(cli):
        assert (command.help or "").strip(), f"`gitmem {name}` has no help text"
        assert name in documented, f"`gitmem {name}` is missing from docs/cli.md"
        if isinstance(command, click.Group):
            continue
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"`gitmem {name}` option {param.opts} has no help"
                flags = set(param.opts) | set(param.secondary_opts)
                if flags & SHARED:
                    continue
                assert any(flag in documented[name] for flag in flags), f"{param.opts} of `gitmem {name}` not in docs"


def test_docs_describe_no_command_that_does_not_exist() -> None:
    commands = {name for name, _ in walk(cli)}
    assert set(sections()) <= commands


def _tools_in_row(label: str) -> list[str]:
    """The tool names the ``| label | ...`` row of the MCP table in docs/cli.md lists (``_x`` is short for the first's prefix)."""
    text = DOCS.read_text(encoding="utf-8")
    row = re.search(rf"^\| {re.escape(label)} \| (.*)$", text, flags=re.M)
    assert row is not None, f"docs/cli.md has no `{label}` row"
    names = re.findall(r"`(memory_[a-z]+_[a-z]+|_[a-z]+)`", row.group(1))
    prefix = names[0].rsplit("_", 1)[0]
    return [name if name.startswith("memory_") else prefix + name for name in names]


def test_the_mcp_table_lists_every_tool_of_the_registry(tmp_path: Path) -> None:
    from gitmem.records import RecordStore
    from gitmem.root import Root
    from gitmem.tools import FileMemoryCapability, FileMount
    from gitmem.tools.records import RecordMemoryCapability, RecordMount

    root = Root(tmp_path)
    files = FileMemoryCapability([FileMount("user", root.mount("user", create=True).sync, "write")])
    records = RecordMemoryCapability(
        [RecordMount("facts", RecordStore(root.mount("facts", create=True, kind="record").sync, "alice"), "write")]
    )
    assert _tools_in_row("tools") == [t.name for t in files.offered()]
    assert _tools_in_row("record tools") == [t.name for t in records.offered()]
