"""The quick path (gitmem.adapters.cli.quick) prints what click prints, byte for byte.

Each command line runs twice in this process: through :func:`quick.run` (and, when
it declines, nowhere) and through the click group, and the two must agree on
stdout, stderr and the exit code. The list holds the forms the quick path takes
(``ls``, ``cat``, ``--help``, with ``--json``, ``--root`` and ``--principal`` in every
place click accepts them, refusals of each kind, control characters) and forms it
must leave to click (usage errors, ``--run``, ``--rev``, odd option values);
``quick`` says which, so a form that silently fell back to click could not pass as
a quick one. Real processes check the entry point, the help at many widths, a
closed pipe and an interrupt.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gitmem.adapters.cli import cli, quick, roothelp
from gitmem.adapters.cli.commandtable import COMMANDS


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root holding a file memory ``user``, an empty one, a record memory, and a plain file beside them."""
    base = tmp_path_factory.mktemp("quick")
    root = base / "root"
    runner = CliRunner()

    def gm(*args: str, input: str | None = None) -> None:
        result = runner.invoke(cli, ["--root", str(root), *args], input=input, catch_exceptions=False)
        assert result.exit_code == 0, result.output

    gm("init", "user")
    gm("init", "empty")
    gm("records", "init", "recs")
    files = {
        "notes/a.md": "---\ndescription: tea and coffee\n---\nlikes tea\n",
        "notes/b.md": "---\ndescription: 'quoted: with a colon'\ntags: [x, y]\n---\nsecond\n",
        "notes/deep/c.md": "no frontmatter\n",
        "top.md": "---\ndescription: red \u202eevil\n---\n\x1b[31mred\x1b[0m text\r\nbell \x07 done\n",
        "unicode.md": "caf\u00e9 \u4e2d\u6587 \U0001f600\n",
        "empty.md": "",
    }
    for path, text in files.items():
        gm("write", "user", path, "--create", input=text)
    (base / "a-file").write_text("not a folder\n")
    (base / "other").mkdir()
    return base


#: (argv, whether the quick path runs it). ``{root}`` is the root, ``{base}`` its parent.
FORMS: list[tuple[tuple[str, ...], bool]] = [
    (("ls", "user"), True),
    (("ls", "user", "notes"), True),
    (("ls", "user", "notes/"), True),
    (("ls", "user", "/"), True),
    (("ls", "user", ""), True),
    (("ls", "user", "notes/deep"), True),
    (("ls", "user", "notes/deep/"), True),
    (("ls", "user", "notes/a.md"), True),  # a file, not a folder
    (("ls", "user", "notes/nothing"), True),
    (("--json", "ls", "user", "notes/deep"), True),
    (("ls", "user", "nothing-here"), True),
    (("ls", "user", "../up"), True),
    (("ls", "user", ".git"), True),
    (("ls", "empty"), True),
    (("ls", "nope"), True),
    (("ls", "Bad_Name"), True),
    (("ls", ""), True),
    (("ls", "recs"), True),
    (("--json", "ls", "user"), True),
    (("ls", "user", "--json"), True),
    (("ls", "--json", "user", "notes"), True),
    (("--json", "ls", "nope"), True),
    (("--json", "ls", "user", "zz"), True),
    (("--json", "--json", "ls", "recs", "--json"), True),
    (("cat", "user", "notes/a.md"), True),
    (("cat", "user", "top.md"), True),
    (("cat", "user", "unicode.md"), True),
    (("cat", "user", "empty.md"), True),
    (("cat", "user", "missing.md"), True),
    (("cat", "user", "notes"), True),
    (("cat", "user", "../etc/passwd"), True),
    (("cat", "user", "/abs.md"), True),
    (("cat", "user", "a\x00b"), True),
    (("cat", "nope", "a.md"), True),
    (("cat", "recs", "a.md"), True),
    (("--json", "cat", "user", "top.md"), True),
    (("cat", "user", "top.md", "--json"), True),
    (("--json", "cat", "user", "missing.md"), True),
    (("--root", "{root}", "ls", "user"), True),
    (("--root={root}", "cat", "user", "notes/a.md"), True),
    (("ls", "user", "--root", "{root}"), True),
    (("ls", "--root={root}", "user"), True),
    (("--root", "{base}/other", "ls", "user", "--root", "{root}"), True),
    (("--root", "{root}", "ls", "user", "--root", "{base}/other"), True),
    (("--root", "{root}", "--root", "{base}/other", "ls", "user"), True),
    (("--root", "{base}/absent", "ls", "user"), True),
    (("--root", "{base}/other", "cat", "user", "a.md"), True),
    (("--root", "{base}//root/./", "ls", "nope"), True),
    (("--root", "root", "ls", "nope"), True),  # relative: run from {base}
    (("--root", "root/../root", "ls", "user"), True),
    (("--principal", "bob", "ls", "user"), True),
    (("--principal=bob", "--json", "cat", "user", "notes/a.md"), True),
    (("--help",), True),
    (("-h",), True),
    (("grep", "user", "tea"), True),
    (("grep", "user", "TEA", "-s"), True),  # nothing matches: success, no output
    (("grep", "user", "t.a", "-E", "--json"), True),
    (("--json", "grep", "user", "e", "--path", "notes"), True),
    (("grep", "user", "e", "--limit", "2"), True),  # cut: a note on stderr
    (("grep", "user", "E", "--limit=1", "--case-sensitive", "--regex", "--json"), True),
    (("grep", "--root", "{root}", "user", "red", "--path=notes/deep/"), True),
    (("grep", "user", "red"), True),  # a line with escape sequences, shown visible
    (("grep", "user", "caf\u00e9 \u4e2d", "--json"), True),
    (("grep", "user", "tea", "--path", "/", "--limit", "10000"), True),
    (("grep", "user", "tea", "--path", "nothing"), True),
    (("grep", "user", "(", "-E"), True),
    (("--json", "grep", "user", "(", "--regex"), True),
    (("grep", "user", ""), True),
    (("grep", "user", "tea", "--path", "../up"), True),
    (("grep", "nope", "tea"), True),
    (("grep", "recs", "tea"), True),
    (("grep", "empty", "tea", "--json"), True),
    (("find", "user", "tea"), True),  # the first builds the small index (the store), the rest read it
    (("find", "user", "tea"), True),
    (("find", "user", "red tea", "--json"), True),
    (("--json", "find", "user", "tea", "--path", "notes", "--limit", "1"), True),
    (("find", "user", "tea", "--limit=1000", "--path=/"), True),
    (("find", "user", "caf\u00e9 \u4e2d"), True),
    (("find", "user", "   "), True),  # refused: no words
    (("find", "user", "the"), True),  # a stop word only: nothing to rank
    (("find", "user", "tea", "--path", "../up"), True),
    (("find", "user", "tea", "--path", "nothing"), True),
    (("find", "nope", "tea"), True),
    (("find", "recs", "tea", "--json"), True),
    (("find", "empty", "tea"), True),
    # Left to click: usage errors, other options, odd values.
    ((), False),
    (("ls",), False),
    (("cat", "user"), False),
    (("ls", "user", "a", "b"), False),
    (("cat", "user", "a.md", "b.md"), False),
    (("--json", "ls"), False),
    (("--json", "cat", "user"), False),
    (("ls", "user", "--bogus"), False),
    (("ls", "user", "-x"), False),
    (("ls", "user", "--run", "r1"), False),
    (("cat", "user", "notes/a.md", "--rev", "main"), False),
    (("--json", "cat", "user", "notes/a.md", "--rev", "nope"), False),
    (("ls", "--help"), False),
    (("cat", "user", "-h"), False),
    (("ls", "user", "--", "x"), False),
    (("ls", "-", "x"), False),
    (("--root",), False),
    (("ls", "user", "--root"), False),
    (("--root=", "ls", "user"), False),
    (("--root", "{base}/a-file", "ls", "user"), False),
    (("ls", "user", "--root", "{base}/a-file"), False),
    (("--root", "ls", "user"), False),
    (("--root", "~/nowhere", "ls", "nope"), False),
    (("--root", "./~/nowhere", "ls", "nope"), False),
    (("--principal", "-x", "ls", "user"), False),
    (("--principal", "ls", "user"), False),
    (("ls", "user", "--principal", "bob"), False),
    (("--json=1", "ls", "user"), False),
    (("--version",), False),
    (("--json", "--help"), False),
    (("--help", "ls"), False),
    (("--run", "r1", "ls", "user"), False),
    (("LS", "user"), False),
    (("grep", "user"), False),
    (("grep", "user", "tea", "x"), False),
    (("grep", "user", "tea", "--limit", "0"), False),
    (("grep", "user", "tea", "--limit", "10001"), False),
    (("grep", "user", "tea", "--limit", "07"), False),
    (("--json", "grep", "user", "tea", "--limit", "many"), False),
    (("grep", "user", "tea", "--limit"), False),
    (("grep", "user", "tea", "--path"), False),
    (("grep", "user", "tea", "--path="), False),
    (("grep", "user", "tea", "-Es"), False),
    (("grep", "user", "-x"), False),
    (("grep", "user", "--", "-tea"), False),
    (("grep", "user", "tea", "--run", "r1"), False),
    (("grep", "user", "tea", "--help"), False),
    (("grep", "user", "tea", "--regex=1"), False),
    (("find", "user"), False),
    (("find", "user", "tea", "--limit", "1001"), False),
    (("find", "user", "tea", "--limit", "0"), False),
    (("find", "user", "tea", "-E"), False),
    (("find", "user", "tea", "--run", "r1"), False),
    (("find", "user", "tea", "--help"), False),
    (("mounts",), False),
]


@pytest.fixture
def where(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run from the root's parent, with the root in ``$GITMEM_ROOT`` and no variable that changes the forms."""
    for name in ("GITMEM_RUN", "GITMEM_PRINCIPAL", "_GITMEM_COMPLETE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITMEM_ROOT", str(home / "root"))
    monkeypatch.chdir(home)
    yield home


def fill(argv: tuple[str, ...], base: Path) -> list[str]:
    return [a.replace("{root}", str(base / "root")).replace("{base}", str(base)) for a in argv]


def by_click(argv: list[str]) -> int:
    try:
        code = cli.main(argv, prog_name="gitmem")
    except SystemExit as exc:
        code = exc.code
    return 0 if code is None else int(code)


def both(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | None, tuple[int, str, str]]:
    """(what the quick path answered, and printed), and what click printed."""
    capsys.readouterr()
    answered = quick.run(list(argv))
    quick_out = capsys.readouterr()
    code = by_click(list(argv))
    click_out = capsys.readouterr()
    if answered is not None:
        assert (answered, quick_out.out, quick_out.err) == (code, click_out.out, click_out.err), argv
    else:
        assert (quick_out.out, quick_out.err) == ("", ""), f"the quick path printed before it declined: {argv}"
    return answered, (code, click_out.out, click_out.err)


@pytest.mark.parametrize(("argv", "is_quick"), FORMS, ids=[" ".join(f[0]) or "(none)" for f in FORMS])
def test_both_paths_print_the_same(
    argv: tuple[str, ...], is_quick: bool, where: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answered, _ = both(fill(argv, where), capsys)
    assert (answered is not None) == is_quick


def test_the_forms_cover_every_outcome(where: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The quick forms above exercise success and refusal, text and JSON, in both streams."""
    seen = set()
    for argv, is_quick in FORMS:
        if is_quick:
            _, (code, out, err) = both(fill(argv, where), capsys)
            seen.add((code, bool(out), bool(err)))
    assert {(0, True, False), (1, False, True), (1, True, False)} <= seen


def test_run_and_principal_from_the_environment(
    where: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITMEM_PRINCIPAL", "carol")  # a write's author: ls and cat read the same
    assert both(["ls", "user"], capsys)[0] == 0
    monkeypatch.setenv("GITMEM_RUN", "r1")  # reads then follow the run: the store's path
    assert both(["ls", "user"], capsys)[0] is None
    assert both(["cat", "user", "notes/a.md"], capsys)[0] is None
    assert both(["grep", "user", "tea"], capsys)[0] is None
    assert both(["find", "user", "tea"], capsys)[0] is None
    monkeypatch.delenv("GITMEM_RUN")
    monkeypatch.setenv("_GITMEM_COMPLETE", "bash_complete")  # shell completion is click's
    assert quick.run(["ls", "user"]) is None
    assert capsys.readouterr() == ("", "")


def test_an_interrupt_ends_as_click_ends_it(
    where: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gitmem import quickread

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(quickread, "list_files", interrupted)
    monkeypatch.setattr(quickread, "read_file", interrupted)
    monkeypatch.setattr(quickread, "search", interrupted)
    monkeypatch.setattr(quickread, "find", interrupted)
    for argv in (["ls", "user"], ["--json", "ls", "user"], ["cat", "user", "top.md", "--json"], ["grep", "user", "tea"], ["find", "user", "tea"]):
        answered, (code, _, err) = both(argv, capsys)
        assert answered == code == 1 and "Aborted!" in err, argv


def test_every_summary_is_its_commands_first_sentence() -> None:
    """The table the quick help lists from says what click would derive from each command's help."""
    names = cli.list_commands(click.Context(cli))
    summaries = {name: text for module in COMMANDS.values() for name, text in module.items()}
    assert sorted(summaries) == names
    for name in names:
        assert summaries[name] == cli.commands[name].get_short_help_str(limit=1_000_000), name


WIDTHS = ["1", "20", "49", "50", "51", "52", "60", "63", "64", "65", "66", "67", "70", "72", "75", "78", "79", "80"]


@pytest.mark.parametrize("columns", [*WIDTHS, "81", "100", "200", "0", "-5", "wide"])
def test_the_help_page_is_clicks_at_every_width(
    columns: str, where: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    answered, (code, out, _) = both(["--help"], capsys)
    assert answered == code == 0 and out.startswith("Usage: gitmem [OPTIONS] COMMAND [ARGS]...\n")


def test_the_help_layout_declines_what_it_does_not_cover() -> None:
    with pytest.raises(roothelp._Unsupported):
        roothelp._wrap("a " + "y" * 90, 40)  # a word too long for its line: click breaks it
    with pytest.raises(roothelp._Unsupported):
        roothelp._wrap("\b\nkept  as\nis", 40, paragraphs=True)  # a no-rewrap block
    assert roothelp._wrap("a b", 40) == "a b"
    assert roothelp._shorten("one two three", 2) == "..."


# --- real processes: the installed entry point -----------------------------------------------

ENTRY = [sys.executable, "-c", "from gitmem.adapters.cli import main; main()"]
CLICK = [sys.executable, "-c", "from gitmem.adapters.cli.app import main; main()"]


def real(cmd: list[str], home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    environ = {k: v for k, v in os.environ.items() if k not in ("GITMEM_RUN", "COLUMNS", "_GITMEM_COMPLETE")}
    environ.update(GITMEM_ROOT=str(home / "root"), **env)
    return subprocess.run([*cmd, *args], capture_output=True, env=environ, cwd=home, timeout=120)


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--help",), {"COLUMNS": "64"}),
        (("--help",), {}),
        (("ls", "user"), {}),
        (("cat", "user", "top.md"), {}),
        (("--json", "cat", "user", "unicode.md"), {}),
        (("cat", "user", "nope.md"), {}),
        (("cat", "user", "unicode.md"), {"PYTHONIOENCODING": "ascii"}),  # click re-wraps an ASCII stdout
        (("ls", "user"), {"PYTHONIOENCODING": "latin-1:backslashreplace"}),
    ],
)
def test_the_entry_point_prints_what_click_prints(home: Path, args: tuple[str, ...], env: dict[str, str]) -> None:
    quick_run, click_run = real(ENTRY, home, *args, **env), real(CLICK, home, *args, **env)
    assert (quick_run.returncode, quick_run.stdout, quick_run.stderr) == (
        click_run.returncode,
        click_run.stdout,
        click_run.stderr,
    )


def test_a_closed_pipe_ends_as_click_ends_it(home: Path) -> None:
    """The reader of stdout went away before the first line: exit 1, nothing on stderr, both ways."""
    outcomes = []
    for cmd in (ENTRY, CLICK):
        for args in (("ls", "user"), ("--help",), ("--json", "cat", "user", "top.md")):
            read_end, write_end = os.pipe()
            os.close(read_end)
            environ = {k: v for k, v in os.environ.items() if k != "GITMEM_RUN"}
            environ["GITMEM_ROOT"] = str(home / "root")
            try:
                done = subprocess.run([*cmd, *args], stdout=write_end, stderr=subprocess.PIPE, env=environ, timeout=120)
            finally:
                os.close(write_end)
            outcomes.append((args, done.returncode, done.stderr))
    assert outcomes[:3] == outcomes[3:]
    assert all(code == 1 for _, code, _ in outcomes)
