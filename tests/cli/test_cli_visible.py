"""What an agent writes cannot act on the terminal of a person reading it with the CLI.

Content, descriptions, commit messages, run and principal names carrying terminal
escape sequences (clear screen, retitle, cursor moves, OSC 8 links), C1 controls,
bidi overrides and zero-width characters are printed as visible escapes by every
human-facing command; ``--json`` output keeps the exact text. Every print of the
CLI goes through one helper, which the last test holds the package to.
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest

from gitmem import GitFileStore, Origin, review
from gitmem.adapters.cli.app import visible

from .conftest import Run

ESC_CLEAR = "\x1b[2J\x1b[H"  # clear the screen, cursor home
TITLE = "\x1b]0;owned\x07"  # retitle the terminal window
HIDE = "\x1b[8m"  # concealed text
C1_CSI = "\x9b31m"  # CSI as one C1 character
BIDI = "\u202e"  # right-to-left override: "txt.exe" shown as "exe.txt"
ZERO_WIDTH = "\u200b"
PAYLOADS = (ESC_CLEAR, TITLE, HIDE, C1_CSI, BIDI, ZERO_WIDTH, "\x08\x08\x7f", "\rforged line")
RAW = ("\x1b", "\x9b", "\x07", "\x08", "\x7f", "\u202e", "\u200b")
EVIL = "".join(PAYLOADS)


def assert_inert(text: str) -> None:
    """No character of ``text`` acts on a terminal (a CR only ends a CRLF line)."""
    for ch in RAW:
        assert ch not in text, (ch, text)
    assert "\r" not in text.replace("\r\n", "\n")


@pytest.fixture
def mem(root: Path, gm: Run) -> GitFileStore:
    """A memory whose content, description, commit text and origins carry escape payloads."""
    assert gm("init", "user").exit_code == 0
    store = GitFileStore.open(root / "user.git")
    eve = Origin(run_id=f"run{ESC_CLEAR}", principal_id=f"eve{TITLE}{BIDI}", tool_call_id=f"call{C1_CSI}")
    # YAML's own escapes put ESC into the description (raw control characters are not YAML).
    body = f'---\ndescription: "tea \\e[2J\\e[H\\e[8mhidden"\n---\nline one {EVIL}\nsecond\tline\r\n'
    version = store.sync.write("notes.md", body, expected=None, origin=eve)
    store.sync.write("notes.md", body.replace("second", f"2nd {TITLE}"), expected=version, origin=eve)
    # A commit pushed with plain git can say anything in its message.
    git = ["git", "-C", store.path]
    head = subprocess.run([*git, "rev-parse", "main"], capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run([*git, "rev-parse", "main^{tree}"], capture_output=True, text=True, check=True).stdout
    commit = subprocess.run(
        [*git, "commit-tree", tree.strip(), "-p", head, "-m", f"fix {ESC_CLEAR}{TITLE}\n\nbody {HIDE}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run([*git, "update-ref", "refs/heads/main", commit, head], check=True)
    return store


@pytest.mark.parametrize(
    "args",
    [
        ("ls", "user"),
        ("cat", "user", "notes.md"),
        ("log", "user"),
        ("log", "user", "notes.md"),
        ("show", "user", "main", "notes.md"),
        ("diff", "user", "main~2"),
        ("blame", "user", "notes.md"),
        ("grep", "user", "line"),
        ("find", "user", "line"),
        ("changes", "user"),
    ],
    ids=lambda a: " ".join(a[:1] + a[2:]),
)
def test_human_output_shows_escapes_instead_of_running_them(mem: GitFileStore, gm: Run, args: tuple[str, ...]) -> None:
    result = gm(*args)
    assert result.exit_code == 0, result.output
    assert_inert(result.stdout)
    assert_inert(result.stderr)


def test_what_the_escapes_look_like(mem: GitFileStore, gm: Run) -> None:
    shown = gm("cat", "user", "notes.md").stdout_bytes.decode()  # .stdout would turn CRLF into LF
    assert "line one \\x1b[2J\\x1b[H\\x1b]0;owned\\x07\\x1b[8m\\x9b31m\\u202e\\u200b\\x08\\x08\\x7f\\rforged line" in shown
    assert "\t" in shown and shown.endswith("line\r\n")  # tabs and CRLF line ends are text, kept as they are
    listed = gm("ls", "user").stdout
    assert "tea \\x1b[2J\\x1b[H\\x1b[8mhidden" in listed
    logged = gm("log", "user").stdout
    assert "fix \\x1b[2J\\x1b[H\\x1b]0;owned\\x07" in logged
    assert "eve\\x1b]0;owned\\x07\\u202e, run run\\x1b[2J\\x1b[H, via call\\x9b31m" in logged


def test_json_output_keeps_the_exact_text(mem: GitFileStore, gm: Run) -> None:
    result = gm("--json", "cat", "user", "notes.md")
    assert json.loads(result.stdout)["content"] == mem.sync.read("notes.md").text
    entries = json.loads(gm("--json", "log", "user").stdout)["entries"]
    assert entries[0]["summary"].startswith(f"fix {ESC_CLEAR}{TITLE}")
    assert "\x1b" not in result.stdout  # the encoder writes \u001b, which no terminal runs


def test_review_output_and_errors_are_inert(root: Path, gm: Run) -> None:
    assert gm("init", "team").exit_code == 0
    store = GitFileStore.open(root / "team.git")
    review.enable(store)
    bot = Origin(principal_id=f"bot{ESC_CLEAR}{BIDI}")
    store.sync.for_run("run-1").write("idea.md", f"an idea {TITLE}\n", expected=None, origin=bot)
    [proposal] = review.proposals(store)
    for args in (("review", "list", "team"), ("review", "show", "team", proposal.run)):
        result = gm(*args)
        assert result.exit_code == 0, result.output
        assert_inert(result.stdout)
        assert "\\x1b" in result.stdout
    # A refusal names the path it was given; the path cannot act on the terminal either.
    refused = gm("cat", "team", f"no{BIDI}such.md")
    assert refused.exit_code == 1
    assert_inert(refused.stderr) and "\\u202e" in refused.stderr


def test_visible_keeps_real_text() -> None:
    text = "tabs\tand\nlines\r\nhé 漢字 👨\u200d👩\u200d👧 ❤\ufe0f \u0641\u0627\u0631\u0633\u06cc\u200c\u0647\u0627"
    assert visible(text, multiline=True) == text
    assert visible("one\nrecord") == "one\\nrecord"
    assert visible("a\u200db") == "a\\u200db"  # a joiner between ASCII letters only hides
    assert visible("\U000e0041\U000e0042") == "\\U000e0041\\U000e0042"  # tag characters (hidden prompts)


CLI = Path(__file__).resolve().parents[2] / "gitmem" / "adapters" / "cli"
PRINTERS = {("click", "echo"), ("click", "secho"), ("sys.stdout", "write"), ("sys.stderr", "write")}


def test_nothing_in_the_cli_prints_but_say_and_say_json() -> None:
    found = []
    for path in sorted(CLI.glob("*.py")):
        tree = ast.parse(path.read_text())
        allowed: set[int] = set()
        if path.name == "output.py":
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef) and node.name in ("echo", "say", "say_lines", "say_json"):
                    allowed.update(n.lineno for n in ast.walk(node) if hasattr(n, "lineno"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.lineno not in allowed:
                func = node.func
                if isinstance(func, ast.Name) and func.id == "print":
                    found.append(f"{path.name}:{node.lineno} print")
                if isinstance(func, ast.Attribute) and (ast.unparse(func.value), func.attr) in PRINTERS:
                    found.append(f"{path.name}:{node.lineno} {ast.unparse(func)}")
            if isinstance(node, ast.Attribute) and ast.unparse(node) in ("click.echo", "click.secho"):
                if node.lineno not in allowed:
                    found.append(f"{path.name}:{node.lineno} {ast.unparse(node)} passed around")
            # The unescaped echo prints only click's own texts: the quick path's help page and the
            # blank line of an interrupt.
            if isinstance(node, ast.Name) and node.id == "echo" and path.name not in ("output.py", "quick.py"):
                found.append(f"{path.name}:{node.lineno} echo")
    assert found == []
