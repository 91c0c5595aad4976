"""Edits of a token file whatever its entries hold: notes of any text, a principal named like an id, a file
shared with the server's user. A leaked token must be revocable in each case, and an edit must never leave a
file the server cannot read.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gitmem import Root
from gitmem.adapters.tokenadmin import add_token, list_tokens, revoke_tokens, rotate_token
from gitmem.adapters.tokens import Grant, TokenEntry, hash_token, load_tokens, token_entries, toml_table
from gitmem.errors import MemoryStoreError

from .support import GIT_ENV, GIT_TIMEOUT, GITMEM, fsck_clean, git, seed, serving

#: Text a note may hold that a JSON-style quoting gets wrong in TOML: beyond the BMP, DEL, quotes, escapes.
NOTES = [
    "laptop \U0001f4bb",
    "carol \U0001f511",
    "del\x7fhere",
    'say "hi"',
    "back\\slash \\u0041 \\n",
    "two\nlines\r\n\ttabbed",
    "".join(chr(c) for c in range(0x20)),
    "\u2028\u2029\ufeff\ud7ff\ue000\uffff\U00010000\U0010ffff",
    "",
    "'''\"\"\"",
]


@pytest.mark.parametrize("note", NOTES)
def test_an_entry_is_written_as_toml_the_server_reads_back_to_the_same_entry(note: str) -> None:
    entry = TokenEntry(hash_token("tok-" + note), Grant("a.b@c+d=e-f", ("team-*", "x[!y]?", "n.o_p"), "propose"), note)
    text = toml_table(entry)
    assert "\\ud8" not in text.lower()  # no surrogate escapes: TOML refuses them
    assert token_entries(text, "t", "toml") == [entry]
    assert token_entries(text + "\n" + toml_table(entry).replace(entry.sha256, "0" * 64), "t", "toml")[0] == entry


def test_a_note_that_is_not_text_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text("token = []\n")
    with pytest.raises(MemoryStoreError) as refused:
        add_token(tokens, "carol", ["team"], "read", "bytes \udcff from argv")
    assert refused.value.code == "invalid_arguments"
    assert tokens.read_text() == "token = []\n"


def gitmem(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [*GITMEM, *args, "--json"], capture_output=True, text=True, env=GIT_ENV, timeout=GIT_TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_any_note_is_added_rotated_and_revoked_on_a_running_server(tmp_path: Path) -> None:
    """Inline tables are rewritten whole on each edit: alice's emoji note must not block revoking bob."""
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    tokens = tmp_path / "tokens.toml"
    alice, bob = "alice-token-0123456789abcdef0123", "bob-token-0123456789abcdef012345"
    tokens.write_text(
        "token = [\n"
        f'  {{principal = "alice", sha256 = "{hash_token(alice)}", memories = ["team"], access = "read", '
        'note = "laptop \\U0001F4BB \\u007F \\"q\\" \\\\ \\n"},\n'
        f'  {{principal = "bob", sha256 = "{hash_token(bob)}", memories = ["team"], access = "read"}},\n'
        "]\n",
        encoding="utf-8",
    )
    alice_note = 'laptop \U0001f4bb \x7f "q" \\ \n'
    with serving(root.path, tokens) as served:

        def reads(token: str) -> bool:
            url = served.info["url"].replace("http://", f"http://who:{token}@") + "/team.git"
            return git("ls-remote", url, check=False).returncode == 0

        assert reads(alice) and reads(bob)
        gone = gitmem("token", "revoke", "bob", "--file", str(tokens))["revoked"]
        assert [g["principal"] for g in gone] == ["bob"]
        assert not reads(bob) and reads(alice)

        carol = gitmem("token", "add", "carol", "--memory", "team", "--file", str(tokens), "--note", "carol \U0001f511")
        assert carol["note"] == "carol \U0001f511" and reads(carol["token"])

        rotated = gitmem("token", "rotate", "alice", "--file", str(tokens))
        assert rotated["note"] == alice_note
        assert not reads(alice) and reads(rotated["token"])

        rows = gitmem("token", "list", "--file", str(tokens))["tokens"]
        assert [(r["principal"], r["note"]) for r in rows] == [("alice", alice_note), ("carol", "carol \U0001f511")]
        assert "\U0001f511" in tokens.read_text(encoding="utf-8")  # written as UTF-8, not escaped
    assert "refus" not in served.err and "invalid_file" not in served.err, served.err
    fsck_clean(root.mount_path("team"))


def test_a_principal_named_like_an_id_does_not_shadow_revoking_that_id(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text("token = []\n")
    leaked, victim = add_token(tokens, "alice", ["team"], "write")
    add_token(tokens, victim.id, ["team"], "read", "named like alice's id")
    with pytest.raises(MemoryStoreError) as refused:
        revoke_tokens(tokens, victim.id)
    assert refused.value.code == "ambiguous_match"
    assert f"principal:{victim.id}" in refused.value.message and f"id:{victim.id}" in refused.value.message
    with pytest.raises(MemoryStoreError):
        rotate_token(tokens, victim.id)
    assert len(list_tokens(tokens)) == 2  # nothing changed

    assert revoke_tokens(tokens, f"id:{victim.id}") == [victim]
    assert [e.grant.principal for e in list_tokens(tokens)] == [victim.id]
    assert load_tokens(tokens, env={}).grant(leaked) is None
    assert [e.note for e in revoke_tokens(tokens, f"principal:{victim.id}")] == ["named like alice's id"]
    with pytest.raises(MemoryStoreError) as missing:
        revoke_tokens(tokens, "id:zz")
    assert missing.value.code == "not_found"


def test_a_replaced_file_keeps_its_mode(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    add_token(tokens, "alice", ["team"], "read")
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600  # the edit made the file: private
    tokens.chmod(0o640)  # the server reads it through its group
    add_token(tokens, "bob", ["team"], "read")
    revoke_tokens(tokens, "alice")
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o640
    assert [e.grant.principal for e in list_tokens(tokens)] == ["bob"]


NOBODY = 65534


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing owners needs root")
def test_root_edits_keep_the_owner_and_others_edits_keep_going() -> None:
    """Root's edit of the server user's file leaves it that user's; a user who may not give the owner back
    (``fchown`` refused) still edits, with the mode kept."""
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o777)
        tokens = Path(folder) / "tokens.toml"
        tokens.write_text("token = []\n")
        add_token(tokens, "alice", ["team"], "read")
        os.chown(tokens, NOBODY, NOBODY)
        tokens.chmod(0o640)
        add_token(tokens, "bob", ["team"], "read")
        info = tokens.stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (NOBODY, NOBODY, 0o640)

        os.chown(tokens, 0, 0)
        tokens.chmod(0o644)
        pid = os.fork()  # a process of another user, without exec (this checkout may be closed to it)
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                revoke_tokens(tokens, "alice")
            except BaseException:  # the parent sees the exit code
                os._exit(1)
            os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
        info = tokens.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (NOBODY, 0o644)
        assert [e.grant.principal for e in list_tokens(tokens)] == ["bob"]
