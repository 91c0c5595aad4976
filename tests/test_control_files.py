"""Control files fail closed: every file that tells gitmem who may do what, or how a mount behaves.

The class, not the examples: each control file gitmem reads (a ``gitmem serve``
token file in its three formats, a mount's git ``config`` and its
``objects/info/alternates``, an import's ``.gitignore``, a hook ``gitmem hooks
install`` would replace) has each hostile variant planted in its place: a FIFO,
a link to ``/dev/zero``, a 100 MB file, JSON saved with a byte-order mark, a
``[[tokens]]`` typo, garbage bytes, an empty file. Each must, within seconds,
grant nothing or refuse with a clear code (never hang on the FIFO, never load
the device or the big file, never read a broken file as more access), and a
mount must be left exactly as it was.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from gitmem import Root
from gitmem.adapters.tokens import FULL_ACCESS, TokenFile, hash_token, load_tokens, token_entry
from gitmem.errors import MemoryStoreError
from gitmem.exchange import scan_folder
from gitmem.fileformat import DEFAULT_FORMAT
from gitmem.hooks import install_hooks

T = TypeVar("T")
GITMEM = [sys.executable, "-c", "from gitmem.adapters.cli import main; main()"]

ALICE = "gm_alice-token-0123456789abcdef0123456789abcdef"
#: A liveness bound for one read of a control file, far above what any takes; a FIFO waited on never returns.
SECONDS = 10.0


def _bom_json() -> bytes:
    entry = {"principal": "alice", "sha256": hash_token(ALICE), "memories": ["*"], "access": "admin"}
    return b"\xef\xbb\xbf" + json.dumps({"tokens": [entry]}, indent=1).encode()


def _typo() -> bytes:
    return f'[[tokens]]\nprincipal = "alice"\nsha256 = "{hash_token(ALICE)}"\nmemories = ["*"]\naccess = "read"\n'.encode()


def plant(path: Path, variant: str) -> None:
    """Put ``variant`` where the control file ``path`` is (replacing it)."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if variant == "fifo":
        os.mkfifo(path)
    elif variant == "link_to_dev_zero":
        path.symlink_to("/dev/zero")
    elif variant == "100mb":
        with path.open("wb") as out:
            out.truncate(100 << 20)  # sparse: the size is what a reader must refuse, not the disk
    elif variant == "bom_json":
        path.write_bytes(_bom_json())
    elif variant == "tokens_typo":
        path.write_bytes(_typo())
    elif variant == "garbage":
        path.write_bytes(bytes(range(256)) * 16)
    elif variant == "empty":
        path.write_bytes(b"")
    else:
        raise AssertionError(variant)


VARIANTS = ["fifo", "link_to_dev_zero", "100mb", "bom_json", "tokens_typo", "garbage", "empty"]
#: Variants that are not a regular file of bounded size: refused before their content is looked at.
NOT_A_FILE = {"fifo", "link_to_dev_zero", "100mb"}


def within(seconds: float, call: Callable[[], T]) -> T:
    """``call()`` in a daemon thread; fails the test if it has not returned in ``seconds`` (a hang)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still reading after {seconds}s: it blocked or loaded the planted file"
    assert time.monotonic() - started < seconds
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def every_line_of(path: Path) -> list[str]:
    """Every line of what was planted, as a client could present it as a token (what the old guess granted)."""
    if not path.is_file() or path.is_symlink() or path.stat().st_size > 1 << 20:
        return []
    text = path.read_bytes().decode("utf-8", errors="replace")
    return [line.strip() for line in text.splitlines() if line.strip()] + [text.strip()]


# -- the token file of `gitmem serve`, in each of its formats ------------------------------------


TOKEN_FILES = {
    "tokens.toml": token_entry(ALICE, "alice", ["notes"], "write"),
    "tokens.json": json.dumps(
        {"tokens": [{"principal": "alice", "sha256": hash_token(ALICE), "memories": ["notes"], "access": "write"}]}
    ),
    "tokens": f"# the plain list\n{ALICE}\n",
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", list(TOKEN_FILES))
def test_a_token_file_planted_with_anything_grants_nothing_and_says_why_once(
    tmp_path: Path, name: str, variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / name
    path.write_text(TOKEN_FILES[name], encoding="utf-8")
    live = load_tokens(path, env={})
    assert isinstance(live, TokenFile) and live.grant(ALICE) is not None

    plant(path, variant)
    guesses = [ALICE, *every_line_of(path), "{", 'access = "read"', "[[tokens]]"]
    with caplog.at_level(logging.ERROR, logger="gitmem.adapters.tokens"):
        for _ in range(3):  # a request after request: each is refused, the log says why once
            assert within(SECONDS, lambda: [g for g in guesses if live.grant(g) is not None]) == []
        assert within(SECONDS, live.principals) == []
    said = [r.getMessage() for r in caplog.records if "no longer reads" in r.getMessage()]
    if variant == "empty" and name == "tokens":
        assert said == [] and len(live) == 0  # an empty plain list: no tokens, which is what it says
    else:
        assert len(said) == 1, said  # once per change, not per request
        assert str(path) in said[0]

    # A server started on it refuses to start, saying why (an empty plain list starts with no tokens).
    if variant == "empty" and name == "tokens":
        assert len(within(SECONDS, lambda: load_tokens(path, env={}))) == 0
        return
    with pytest.raises(MemoryStoreError) as caught:
        within(SECONDS, lambda: load_tokens(path, env={}))
    assert caught.value.code in ("invalid_file", "too_large")
    message = caught.value.message
    if variant == "fifo":
        assert "not a regular file (a FIFO)" in message
    elif variant == "link_to_dev_zero":
        assert "symbolic link" in message
    elif variant == "100mb":
        assert caught.value.code == "too_large"
    elif variant == "bom_json":
        assert "byte-order mark" in message
    elif variant == "tokens_typo" and name == "tokens.toml":
        assert "tokens" in message and "[[token]]" in message


def test_a_fixed_token_file_grants_again(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    good = token_entry(ALICE, "alice", ["notes"], "write")
    path.write_text(good, encoding="utf-8")
    live = load_tokens(path, env={})
    for variant in VARIANTS:
        plant(path, variant)
        assert within(SECONDS, lambda: live.grant(ALICE)) is None, variant
        path.unlink()
        path.write_text(good, encoding="utf-8")
        grant = within(SECONDS, lambda: live.grant(ALICE))
        assert grant is not None and grant.access == "write", variant


def test_the_format_is_named_by_the_extension_never_guessed(tmp_path: Path) -> None:
    """TOML or JSON under another name is refused whole, not read as a plain list of admin tokens."""
    toml = token_entry(ALICE, "alice", ["notes"], "read")
    for name, text in [("tokens.txt", toml), ("tokens", '{"tokens": []}'), ("tokens.conf", "[[tokens]]\n")]:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(MemoryStoreError) as caught:
            load_tokens(path, env={})
        assert caught.value.code == "invalid_file" and "*.toml" in caught.value.message
        assert ALICE not in caught.value.message and "sha256" not in caught.value.message  # lines are not echoed
    plain = tmp_path / "tokens.list"
    plain.write_text(f"# comment\n{ALICE}\n\nanother-token_0123+/==\n", encoding="utf-8")
    tokens = load_tokens(plain, env={})
    assert tokens.grant(ALICE) == FULL_ACCESS and tokens.grant("another-token_0123+/==") == FULL_ACCESS
    as_json = tmp_path / "tokens.JSON"
    as_json.write_text(TOKEN_FILES["tokens.json"], encoding="utf-8")
    grant = load_tokens(as_json, env={}).grant(ALICE)
    assert grant is not None and grant.principal == "alice"


def test_a_token_file_given_as_a_link_is_refused_at_start(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text(token_entry(ALICE, "alice", ["notes"], "write"), encoding="utf-8")
    link = tmp_path / "tokens.toml"
    link.symlink_to(real)
    with pytest.raises(MemoryStoreError) as caught:
        load_tokens(link, env={})
    assert caught.value.code == "invalid_file" and "symbolic link" in caught.value.message


# -- a mount's own control files: its git config and its alternates ------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", ["config", "objects/info/alternates"])
def test_a_mount_control_file_planted_with_anything_is_refused_or_harmless(
    tmp_path: Path, name: str, variant: str
) -> None:
    root = Root(tmp_path / "root")
    store = root.mount("notes", create=True)
    store.sync.write("a.md", "a\n", expected=None)
    head = store.sync.head()
    mount = Path(store.path)
    path = mount / name
    saved = path.read_bytes() if path.exists() else None
    plant(path, variant)

    def read_and_write() -> str:
        fresh = Root(tmp_path / "root").mount("notes")  # a new process's view: nothing cached
        assert fresh.sync.read("a.md").text == "a\n"
        fresh.sync.write("b.md", "b\n", expected=None)
        return fresh.sync.head()

    # A config git cannot parse, and garbage anywhere, is refused; so is anything that is not a file.
    refused = (name == "config" and variant != "empty") or variant in (*NOT_A_FILE, "garbage")
    if refused:
        with pytest.raises(MemoryStoreError) as caught:
            within(SECONDS, read_and_write)
        assert caught.value.code == "unavailable" and str(path) in caught.value.message
        quick = subprocess.run(
            [*GITMEM, "--root", str(tmp_path / "root"), "ls", "notes"], capture_output=True, text=True, timeout=60
        )
        assert quick.returncode != 0 and "unavailable" in quick.stderr, quick.stdout + quick.stderr
    else:
        # An empty config is git's defaults; alternates naming folders that do not exist borrow nothing.
        assert within(SECONDS, read_and_write) != head
    path.unlink()
    if saved is not None:
        path.write_bytes(saved)
    if refused:
        assert _git_head(mount) == head  # nothing was written
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=mount, check=True, capture_output=True)


def _git_head(mount: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "refs/heads/main"], cwd=mount, check=True, capture_output=True, text=True
    ).stdout.strip()


# -- an import's .gitignore, and a hook gitmem would replace --------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_import_gitignore_planted_with_anything_never_leaves_out_less(tmp_path: Path, variant: str) -> None:
    folder = tmp_path / "vault"
    (folder / "sub").mkdir(parents=True)
    (folder / "top.md").write_text("top\n", encoding="utf-8")
    (folder / "sub" / "secret.md").write_text("what sub/.gitignore leaves out\n", encoding="utf-8")
    plant(folder / "sub" / ".gitignore", variant)
    scan = within(SECONDS, lambda: scan_folder(folder, DEFAULT_FORMAT, gitignore=True))
    accepted = [path for path, _ in scan.accepted]
    assert "top.md" in accepted
    if variant in NOT_A_FILE or variant == "garbage":
        refusal = next(r for r in scan.refused if r.path == "sub/.gitignore")
        assert refusal.error in ("invalid_file", "too_large") and "nothing under sub/ is imported" in refusal.message
        assert not any(path.startswith("sub/") for path in accepted)
    else:  # a text file: its lines are patterns, as git reads them (none of these matches secret.md)
        assert "sub/secret.md" in accepted
        assert not any(r.path == "sub/.gitignore" for r in scan.refused)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_hook_planted_with_anything_is_someone_elses(tmp_path: Path, variant: str) -> None:
    store = Root(tmp_path / "root").mount("notes", create=True)
    hooks = Path(store.path) / "hooks"
    hooks.mkdir(exist_ok=True)
    plant(hooks / "pre-receive", variant)
    with pytest.raises(MemoryStoreError) as caught:
        within(SECONDS, lambda: install_hooks(store.path))
    assert caught.value.code == "already_exists"
    assert (hooks / "pre-receive").is_symlink() == (variant == "link_to_dev_zero")  # left as it was
