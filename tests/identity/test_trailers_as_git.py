"""gitmem reads a commit's trailers exactly as ``git log --format=%(trailers)`` does.

Thousands of crafted messages (separators with and without blanks, key case,
continuation lines, comments, ``Signed-off-by`` blocks with prose, scissors and
``Conflicts:`` tails, a ``---`` line, CR, NUL, leading blank lines) are written as
real commits; one ``git log`` reads them all, and :func:`parse_trailers` must give
the same keys and values for each, so what gitmem reports as a commit's principal
is what the documented audit shows.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pygit2

from gitmem.model import Origin
from gitmem.provenance import IDENTITY_TRAILERS, T_PRINCIPAL, identity_claims, parse_message, parse_trailers

_LINES = [
    "Gitmem-Principal: alice",
    "Gitmem-Principal:bob",
    "gitmem-principal: carol",
    "GITMEM-PRINCIPAL :dave",
    "Gitmem-Principal\t: erin",
    "Gitmem-Principal = frank",
    "Gitmem-Approved-By: carol",
    "Gitmem-Approved-By:carol",
    "Gitmem-Op: edit",
    "Gitmem-Path: notes/a.md",
    "Signed-off-by: Someone <s@example.com>",
    "(cherry picked from commit 0123456789abcdef)",
    "Reviewed-by: x",
    "Key With Space: v",
    "Bug #42",
    "  continued value",
    "\tmore",
    "plain prose line",
    "prose: with a colon later",
    "# a comment",
    "---",
    "--- patch",
    "Conflicts:",
    "\tnotes/a.md",
    "# ------------------------ >8 ------------------------",
    "",
    " ",
    "Gitmem-Principal: bob\r",
    ":no key",
    "Gitmem-Principal:",
    "Gitmem-Principal: \u00e9l\u00e8ve",
]


def _message(rng: random.Random) -> str:
    parts = []
    if rng.random() < 0.1:
        parts.append("")
    parts.append(rng.choice(["summary", "Gitmem-Principal: mallory", "fix: things"]))
    for _ in range(rng.randint(0, 3)):
        parts.append("")
        parts.extend(rng.choice(_LINES) for _ in range(rng.randint(1, 5)))
    text = "\n".join(parts) + rng.choice(["\n", "", "\n\n", "\n# trailing comment\n"])
    if rng.random() < 0.03:
        text += "\x00Gitmem-Principal: hidden\n"
    return text


def test_parse_trailers_agrees_with_git_log(tmp_path: Path) -> None:
    rng = random.Random(40)
    repo = pygit2.init_repository(str(tmp_path / "r.git"), bare=True)
    tree = repo.TreeBuilder().write()
    messages: dict[str, str] = {}
    for _ in range(1500):
        text = _message(rng)
        raw = (
            f"tree {tree}\nauthor x <x@example.com> 1 +0000\ncommitter x <x@example.com> 1 +0000\n\n".encode()
            + text.encode("utf-8")
        )
        oid = repo.odb.write(pygit2.enums.ObjectType.COMMIT, raw)
        messages[str(oid)] = text
    fmt = "%H%x03%(trailers:only,unfold,separator=%x02,key_value_separator=%x01)%x04"
    done = subprocess.run(
        ["git", "--git-dir", str(tmp_path / "r.git"), "log", "--no-walk=unsorted", "--stdin", f"--format={fmt}"],
        input="\n".join(messages).encode(),
        capture_output=True,
        check=True,
    )
    seen = 0
    for record in done.stdout.decode("utf-8").split("\x04"):
        record = record.lstrip("\n")
        if not record:
            continue
        oid, _, body = record.partition("\x03")
        want = tuple(tuple(pair.split("\x01", 1)) for pair in body.split("\x02")) if body else ()
        got = parse_trailers(messages[oid])
        assert got == want, repr((messages[oid], got, want))
        principals = [v for k, v in want if k.lower() == T_PRINCIPAL.lower()]
        # gitmem's origin fields are one line without <, > (Origin cleans them); the first value is the one
        expected = Origin(principal_id=principals[0]).principal_id if principals else None
        assert parse_message(messages[oid]).origin.principal_id == expected
        seen += 1
    assert seen == len(messages)


def test_identity_claims_flag_every_reading_but_the_canonical_one() -> None:
    for key in IDENTITY_TRAILERS:
        assert identity_claims(f"s\n\n{key}: alice\n").problems == ()
        assert identity_claims(f"s\n\nGitmem-Op: edit\n{key}: alice\nSigned-off-by: a <a@b>\n").problems == ()
        ambiguous = [
            f"s\n\n{key}:alice\n",
            f"s\n\n{key.lower()}: alice\n",
            f"s\n\n{key} : alice\n",
            f"s\n\n{key}: alice\n{key}: alice\n",
            f"s\n\n{key}: alice\n{key}: bob\n",
            f"s\n\n{key}: alice\n  bob\n",
            f"s\n\n{key}: alice\r\n",
            f"s\n\n{key}:\n",
            f"{key}: alice\n",
            f"s\n\n{key}: bob\nprose\n\nGitmem-Op: edit\n",
            f"s\n\nGitmem-Op: edit\n  {key}: bob\n",
            f"s\n\n{key}: alice\x00\n{key}: bob\n",
            f"s\n\n{key} = bob\n",
        ]
        for text in ambiguous:
            assert identity_claims(text).problems, text


def test_a_declared_encoding_cannot_hide_a_name_git_log_would_show() -> None:
    from gitmem.git.claims import identity_problems

    head = b"tree " + b"0" * 40 + b"\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n"
    text = "sum\n\nGitmem-Approved-By: carol\n"
    assert identity_problems(head + b"\n" + text.encode()) == []
    assert identity_problems(head + b"encoding ISO-8859-1\n\n" + text.encode("latin-1")) == []
    # Bytes that read as nothing in UTF-8 but as an approval once re-encoded from EBCDIC.
    assert identity_problems(head + b"encoding IBM037\n\n" + text.encode("cp037"))
    assert identity_problems(head + b"encoding no-such-charset\n\n" + text.encode())


def test_a_trailer_of_many_continuation_lines_is_read_in_time_proportional_to_it() -> None:
    # A pushed or pulled commit's message is read by the identity gate (under the writer lock in a
    # quick pull): folding a trailer's continuation lines cost time quadratic in them (a 4 MB
    # message: minutes of CPU). Four times the lines must cost about four times the CPU, not sixteen.
    import time

    def cpu(lines: int) -> float:
        started = time.process_time()
        claims = identity_claims("summary\n\nGitmem-Run: x\n" + " y\n" * lines)
        assert not claims.problems
        return time.process_time() - started

    small = min(cpu(1 << 16) for _ in range(2))
    assert cpu(1 << 18) < 7 * small
