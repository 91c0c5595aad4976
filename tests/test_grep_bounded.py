"""Regex searches do bounded work and answer as Python's ``re`` would.

``(a|aa)+$`` against forty ``a`` and a ``b`` backtracks about 10^8 times, and
an agent can write that line itself. Every search path (Python ``search`` on
both stores, the tools' grep, the CLI) must stop with ``invalid_pattern``
instead of running for minutes. The timeouts here are hang guards, not speed
bounds: a search that is merely slow still passes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem import MemoryStoreError
from gitmem.grep import compile_pattern, scan

HOSTILE_PATTERN = "(a|aa)+$"
HOSTILE_LINE = "a" * 40 + "b"
HANG_GUARD = 300.0  # seconds: the default budget is 2 CPU seconds a search
# The processes below run with a default budget of 0.1 s instead (one search of the hostile line
# needs minutes, so a path without a budget still hangs): they wait 0.1 s, not 2, for each stop.
LOWER_BUDGET = 'import gitmem.grep; gitmem.grep.compile_pattern.__kwdefaults__["budget"] = 0.1\n'


def test_a_backtracking_pattern_stops_at_its_budget_with_invalid_pattern() -> None:
    matcher = compile_pattern(HOSTILE_PATTERN, regex=True, budget=0.05)
    with pytest.raises(MemoryStoreError) as caught:
        scan([("a.md", f"fine\n{HOSTILE_LINE}\n")], matcher, 10)
    assert caught.value.code == "invalid_pattern"
    assert "matching work" in caught.value.message


def test_the_budget_covers_a_whole_search_not_each_line() -> None:
    """Many lines that each take a little must add up to the same stop."""
    matcher = compile_pattern("(a|aa)+$", regex=True, budget=0.05)
    lines = "\n".join("a" * 18 + "b" for _ in range(5000))  # ~10^4 steps each
    with pytest.raises(MemoryStoreError) as caught:
        scan([("a.md", lines)], matcher, 10)
    assert caught.value.code == "invalid_pattern"


def test_a_fresh_matcher_has_a_fresh_budget() -> None:
    spent = compile_pattern(HOSTILE_PATTERN, regex=True, budget=0.05)
    with pytest.raises(MemoryStoreError):
        spent.test(HOSTILE_LINE)
    assert compile_pattern(HOSTILE_PATTERN, regex=True, budget=0.05).test("aaaa") is True


def test_patterns_re_rejects_stay_rejected_with_res_message() -> None:
    for pattern in ("(", "a{2,1}", r"\p{L}", "(?<name>x)(?P=other)"):
        with pytest.raises(MemoryStoreError) as caught:
            compile_pattern(pattern, regex=True)
        assert caught.value.code == "invalid_pattern"
        with pytest.raises(re.error) as by_re:
            re.compile(pattern)
        assert str(by_re.value) in caught.value.message


# The answers stay re's: patterns built from the constructs agents use, on lines
# drawn from a small alphabet so that matches are common. The dotless i (U+0131) is left
# out: it is the one known case-insensitive difference (re equates it with i).
ATOMS = [
    "a",
    "b",
    "A",
    "é",
    "ß",
    "k",
    "K",
    "s",
    "\u017f",  # long s: folds to s
    "1",
    " ",
    ".",
    r"\w",
    r"\W",
    r"\d",
    r"\s",
    r"\b",
    "[a-c]",
    "[^b]",
    "^",
    "$",
]
ALPHABET = "abABéÉßkKsS\u017f\u212a1 \t-.xyz中"  # with long s and the Kelvin sign


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 5 if depth < 2 else 0))
        if kind == 0:
            part = draw(st.sampled_from(ATOMS))
        elif kind == 1:
            part = f"(?:{draw(patterns(depth + 1))})"
        elif kind == 2:
            part = f"({draw(patterns(depth + 1))}|{draw(patterns(depth + 1))})"
        elif kind == 3:
            part = f"(?:{draw(patterns(depth + 1))}){draw(st.sampled_from(['*', '+', '?', '{1,2}', '*?', '+?']))}"
        elif kind == 4:
            part = f"(?={draw(patterns(depth + 1))})"
        else:
            part = f"(?!{draw(patterns(depth + 1))})"
        parts.append(part)
    return "".join(parts)


@given(pattern=patterns(), lines=st.lists(st.text(ALPHABET, max_size=12), min_size=1, max_size=6), case=st.booleans())
def test_answers_are_res_answers(pattern: str, lines: list[str], case: bool) -> None:
    matcher = compile_pattern(pattern, regex=True, case_sensitive=case)
    expected = re.compile(pattern, 0 if case else re.IGNORECASE)
    for line in lines:
        assert matcher.test(line) == (expected.search(line) is not None), (pattern, line, case)


def test_the_known_difference_is_the_dotless_i_only() -> None:
    dotless = "\u0131"
    assert re.search("i", dotless, re.IGNORECASE) is not None
    assert compile_pattern("i", regex=True).test(dotless) is False
    assert compile_pattern("k", regex=True).test("\u212a") is True  # the Kelvin sign: both engines agree


SEARCHES = r"""
import json, sys
from gitmem import GitFileStore, InMemoryFileStore, MemoryStoreError
from gitmem.tools import FileMemoryCapability, FileMount
""" + LOWER_BUDGET + r"""
pattern, line, repo = sys.argv[1], sys.argv[2], sys.argv[3]
text = "a memory\n" + line + "\n"

def outcome(call):
    try:
        call()
    except MemoryStoreError as exc:
        return exc.code
    return "answered"

store = GitFileStore.init(repo)
store.sync.write("notes/a.md", text, expected=None)
mem = InMemoryFileStore()
mem.write("notes/a.md", text, expected=None)
out = {
    "git_search": outcome(lambda: store.sync.search(pattern, regex=True)),
    "memory_search": outcome(lambda: mem.search(pattern, regex=True)),
}
capability = FileMemoryCapability([FileMount("user", store, "write")])
for name, args in (("grep_mount", {}), ("grep_file", {"path": "notes/a.md"})):
    result = capability.call("memory_file_grep", {"memory": "user", "pattern": pattern, "regex": True, **args})
    out[name] = result.get("error", "answered")
print(json.dumps(out))
"""


def test_every_search_path_stops_a_hostile_pattern(tmp_path: Path) -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", SEARCHES, HOSTILE_PATTERN, HOSTILE_LINE, str(tmp_path / "m.git")],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("a hostile regex ran without bound") from None
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "git_search": "invalid_pattern",
        "memory_search": "invalid_pattern",
        "grep_mount": "invalid_pattern",
        "grep_file": "invalid_pattern",
    }


def test_the_cli_grep_stops_a_hostile_pattern(tmp_path: Path) -> None:
    root = tmp_path / "root"
    cli = [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(root)]
    subprocess.run([*cli, "init", "user"], check=True, capture_output=True)
    subprocess.run(
        [*cli, "write", "user", "a.md", "--create"],
        input=HOSTILE_LINE + "\n",
        text=True,
        check=True,
        capture_output=True,
    )
    entry = LOWER_BUDGET + "from gitmem.adapters.cli import main\nmain()\n"  # what the console script runs
    try:
        done = subprocess.run(
            [sys.executable, "-c", entry, "--root", str(root), "grep", "user", HOSTILE_PATTERN, "--regex", "--json"],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("gitmem grep ran without bound") from None
    assert done.returncode != 0
    assert "invalid_pattern" in done.stdout + done.stderr, (done.stdout, done.stderr)
    assert "more than 0.1 s of matching work" in done.stdout, done.stdout  # the lowered budget was the one spent


def _memory_bound() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("pattern", ["a{20000000}", "(?:a{5000}){5000}", "(?:x|[^y]{3000}){3000}z"])
def test_a_pattern_whose_program_would_not_fit_in_memory_is_refused_before_it_is_built(
    tmp_path: Path, pattern: str
) -> None:
    # A counted repeat is written out by the regex engine once per count: "a{20000000}" (11
    # characters of a tool argument) asked for ~5 GB and "(?:a{8000}){8000}" for ~19 GB, before
    # a line was matched, which no time budget sees. Every search path refuses such a pattern with
    # invalid_pattern; the process here may not take more than 2 GiB.
    done = subprocess.run(
        [sys.executable, "-c", SEARCHES, pattern, "a" * 50, str(tmp_path / "m.git")],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        preexec_fn=_memory_bound,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert set(json.loads(done.stdout).values()) == {"invalid_pattern"}, done.stdout


@pytest.mark.parametrize("pattern", [r"\d{4}-\d{2}-\d{2}", r"(?:\w{3}\s){20}", r"[A-Z]{2,40}\d{1,1000}", "x{1000}"])
def test_ordinary_counted_repeats_still_search(pattern: str) -> None:
    compile_pattern(pattern, regex=True)
