"""The real git client, a real ``gitmem serve`` process, and the bad pushes every path into a mount must refuse.

Shared by the HTTP server tests (``tests/serve``) and the hook tests
(``tests/hooks``): each bad push is made in a working clone, pushed, and must be
rejected with its rule named on git's stderr while the mount stays as it was.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem import GitFileStore, Root
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp
from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, IDENTITY_TRAILERS, commit_message

TOKEN = "tok-3f9a1c2e"


@dataclass
class Served:
    """A running ``gitmem serve`` on 127.0.0.1."""

    root: Root
    app: GitHttpApp
    server: GitHttpServer

    def url(self, name: str, token: str | None = TOKEN) -> str:
        auth = f"agent:{token}@" if token else ""
        return f"http://{auth}127.0.0.1:{self.server.port}/{name}.git"


@dataclass
class Mount:
    name: str
    store: GitFileStore
    path: Path


# A liveness guard for one git command over loopback, not a performance bound.
GIT_TIMEOUT = 60.0

GIT_ENV = {
    **os.environ,
    "GIT_TERMINAL_PROMPT": "0",  # a 401 must fail, not wait for a password
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_PROTOCOL_FROM_USER": "1",
    "LC_ALL": "C",
}


def git(
    *args: str, cwd: Path | str | None = None, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


#: The ``gitmem`` command line of the Python running the tests (no installed script needed).
GITMEM = [sys.executable, "-c", "from gitmem.adapters.cli import main; main()"]


def start_serve(
    root: Path,
    tokens: Path,
    *options: str,
    json_output: bool = True,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Start ``gitmem serve`` on a free loopback port and wait until it says where it listens.

    With ``json_output`` its first line (the ``--json`` banner) comes back parsed;
    without, the human banner is left on stdout for the test to read. A server
    that stays silent or exits first fails the test with its stderr.
    """
    args = ["serve", "--root", str(root), "--port", "0", "--token-file", str(tokens), *options]
    if json_output:
        args.append("--json")
    proc = subprocess.Popen(
        [*GITMEM, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or GIT_ENV
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], GIT_TIMEOUT)
    if not ready:
        proc.kill()
        raise AssertionError(f"gitmem serve did not say where it listens in {GIT_TIMEOUT}s:\n{proc.communicate()[1]}")
    if not json_output:
        return proc, {}
    line = proc.stdout.readline()
    info: dict[str, Any] = json.loads(line) if line.startswith("{") else {}
    if "url" not in info:  # it exited first, or said why it cannot serve (an error as JSON)
        err = proc.communicate(timeout=GIT_TIMEOUT)[1]
        raise AssertionError(f"gitmem serve exited ({proc.returncode}) before it listened:\n{line}{err}")
    return proc, info


def stop_serve(proc: subprocess.Popen[str]) -> str:
    """Stop a server with SIGTERM, as a service manager does, and return its stderr (the server's log).

    One still running ``GIT_TIMEOUT`` later is killed and fails the test.
    """
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=GIT_TIMEOUT)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("gitmem serve ignored SIGTERM") from None


@dataclass
class Serving:
    """A running ``gitmem serve``: its process, its ``--json`` banner, and its log once stopped."""

    proc: subprocess.Popen[str]
    info: dict[str, Any]
    err: str = ""


@contextmanager
def serving(
    root: Path, tokens: Path, *options: str, json_output: bool = True, env: dict[str, str] | None = None
) -> Iterator[Serving]:
    """``gitmem serve`` for the block (see ``start_serve``), stopped on the way out (see ``stop_serve``).

    A block that ends without an error also asserts the server exited 0 on
    SIGTERM; ``err`` then holds its stderr for the test's own checks.
    """
    proc, info = start_serve(root, tokens, *options, json_output=json_output, env=env)
    served = Serving(proc, info)
    try:
        yield served
    finally:
        served.err = stop_serve(proc)
    assert proc.returncode == 0, served.err


def hosted(tmp_path: Path, files: dict[str, str], *, hooks: bool = True) -> tuple[Root, GitFileStore, Path]:
    """A memory ``user`` of ``files`` under ``tmp_path/mem``, pushed to a plain bare repository
    (``tmp_path/hosting.git``, a forge that checks nothing) recorded as its ``origin``."""
    from gitmem import remotes

    root = Root(tmp_path / "mem")
    store = root.mount("user", create=True, hooks=hooks)
    for path, text in files.items():
        store.sync.write(path, text, expected=None)
    hosting = tmp_path / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    remotes.add(store, "origin", str(hosting))
    remotes.push(store, "origin")
    return root, store, hosting


def clone_as(url: str, memory: str, who: str, token: str, work: Path) -> Path:
    """A clone of ``memory`` served at ``url``, made with ``who``'s token, committing as ``who``."""
    git("clone", "-q", url.replace("://", f"://{who}:{token}@", 1) + f"/{memory}.git", str(work))
    git("config", "user.name", who, cwd=work)
    git("config", "user.email", f"{who}@example.com", cwd=work)
    return work


def commit_all(work: Path, message: str) -> str:
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", message, cwd=work)
    return git("rev-parse", "HEAD", cwd=work).stdout.strip()


def write(work: Path, path: str, data: bytes | str) -> None:
    target = work / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def fsck_clean(mount: Path | str) -> None:
    done = git("fsck", "--strict", "--no-dangling", cwd=mount, check=False)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def has_object(mount: Path | str, oid: str) -> bool:
    return git("cat-file", "-e", oid, cwd=mount, check=False).returncode == 0


@dataclass(frozen=True)
class BadPush:
    """A change a memory must refuse: ``make`` prepares it in a clone and returns the refspec."""

    id: str
    rule: str
    shown: str  # text git's stderr must contain besides the rule (usually the file)
    make: Callable[[Path], str]
    flags: tuple[str, ...] = field(default=())


def _one_file(path: str, data: bytes | str) -> Callable[[Path], str]:
    def make(work: Path) -> str:
        write(work, path, data)
        commit_all(work, f"add {path}")
        return "main"

    return make


def _secret_then_removed(work: Path) -> str:
    write(work, "notes/deploy.md", "deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    commit_all(work, "add the deploy notes")
    write(work, "notes/deploy.md", "deploy key: ask the admin\n")
    commit_all(work, "oops, drop the key")
    return "main"


def _rewrite_history(work: Path) -> str:
    git("commit", "-q", "--amend", "-m", "rewritten seed", cwd=work)
    return "main"


def _symlink(work: Path) -> str:
    os.symlink("seed.md", work / "link.md")
    commit_all(work, "add a symlink")
    return "main"


def _forged_trailers(message: str) -> Callable[[Path], str]:
    """A commit under gitmem's own committer identity whose trailers do not tell what it changed."""

    def make(work: Path) -> str:
        write(work, "prefs/language.md", "Reply in Klingon.\n")
        write(work, "innocent.md", "nothing to see here\n")
        git("add", "-A", cwd=work)
        who = {"GIT_COMMITTER_NAME": COMMITTER_NAME, "GIT_COMMITTER_EMAIL": COMMITTER_EMAIL}
        git("commit", "-q", "-m", message, cwd=work, env=who)
        return "main"

    return make


_ALICE = Origin(principal_id="alice")
_HIDES_A_CHANGE = commit_message("edit", ("innocent.md", "notes/harmless.md"), _ALICE)
_FORGED_MOVE = commit_message("move", ("seed.md", "innocent.md"), _ALICE).replace(
    "Gitmem-Path: innocent.md", "Gitmem-Path: innocent.md\nGitmem-Path: prefs/language.md"
)


def _identity_message(message: str) -> Callable[[Path], str]:
    """A plain commit whose message names someone in a way git and a reader could see differently."""

    def make(work: Path) -> str:
        write(work, "who.md", "who did this?\n")
        git("add", "-A", cwd=work)
        git("commit", "-q", "--cleanup=verbatim", "-m", message, cwd=work)
        return "main"

    return make


# Every identity trailer, written the ways a reader could take for a name other than the one trailer.
IDENTITY_PUSHES = [
    BadPush(f"{variant}-{key.lower()}", "identity", key, _identity_message(text))
    for key in IDENTITY_TRAILERS
    for variant, text in (
        ("duplicated", f"who\n\nGitmem-Op: edit\nGitmem-Path: who.md\n{key}: agent\n{key}: agent\n"),
        ("no-space", f"who\n\nGitmem-Op: edit\nGitmem-Path: who.md\n{key}:agent\n"),
        ("case-variant", f"who\n\nGitmem-Op: edit\nGitmem-Path: who.md\n{key.upper()}: agent\n"),
        ("in-the-body", f"who\n\n{key}: mallory\nsaid so\n\nGitmem-Op: edit\nGitmem-Path: who.md\n"),
    )
]

LONG_PATH = "/".join(["a-rather-long-folder-name-" + str(i) for i in range(10)]) + "/note.md"

BAD_PUSHES = [
    BadPush("backslash-path", "invalid_path", "notes\\evil.md", _one_file("notes\\evil.md", "text\n")),
    BadPush(
        "control-character",
        "invalid_path",
        "notes/tab\\x09and\\x0anewline.md",
        _one_file("notes/tab\tand\nnewline.md", "x\n"),
    ),
    BadPush("path-over-limit", "invalid_path", "note.md", _one_file(LONG_PATH, "text\n")),
    BadPush("reserved-name", "invalid_path", ".gitattributes", _one_file(".gitattributes", "* text\n")),
    BadPush("binary", "invalid_file", "blob.md", _one_file("blob.md", b"PNG\x00\x01\x02binary\n")),
    BadPush("not-utf8", "invalid_file", "latin1.md", _one_file("latin1.md", "caf\xe9\n".encode("latin-1"))),
    BadPush("too-large", "too_large", "big.md", _one_file("big.md", "x" * 70_000 + "\n")),
    BadPush("bad-frontmatter", "invalid_file", "fm.md", _one_file("fm.md", "---\ndescription: never closed\n")),
    BadPush(
        "private-key",
        "secret:private_key",
        "keys/id.md",
        _one_file("keys/id.md", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"),
    ),
    BadPush("secret-in-history", "secret:private_key", "notes/deploy.md", _secret_then_removed),
    BadPush("symlink", "file_mode", "link.md", _symlink),
    BadPush("non-fast-forward", "non_fast_forward", "does not build on it", _rewrite_history, ("--force",)),
    BadPush("delete-main", "delete_main", "cannot be deleted", lambda work: ":main"),
    BadPush("trailers-hide-a-change", "provenance", "prefs/language.md", _forged_trailers(_HIDES_A_CHANGE)),
    BadPush("forged-move-trailer", "provenance", "seed.md moved here", _forged_trailers(_FORGED_MOVE)),
    *IDENTITY_PUSHES,
]


def seed(store: GitFileStore) -> str:
    """Give a fresh mount one file and return its head."""
    store.sync.write("seed.md", "---\ndescription: the seed\n---\nhello\n", expected=None)
    return store.sync.head()


def check_refused(
    bad: BadPush, done: subprocess.CompletedProcess[str], mount: Path, head_before: str, pushed: str
) -> None:
    """The push failed, git showed the rule and the file, and the mount did not change."""
    assert done.returncode != 0, done.stderr
    assert "[remote rejected]" in done.stderr, done.stderr
    assert bad.rule in done.stderr and bad.shown in done.stderr, done.stderr
    assert git("rev-parse", "refs/heads/main", cwd=mount).stdout.strip() == head_before
    if pushed != head_before:
        assert not has_object(mount, pushed), "a refused commit was left in the mount"
    fsck_clean(mount)


def _literal(work: Path, kind: str, data: bytes) -> str:
    done = subprocess.run(
        ["git", "hash-object", "-t", kind, "--literally", "-w", "--stdin"],
        cwd=work, input=data, capture_output=True, check=True, timeout=GIT_TIMEOUT,
    )  # fmt: skip
    return done.stdout.decode().strip()


MALFORMED_KINDS = ("duplicate-entries", "unsorted-entries", "zero-padded-mode", "bad-time-zone", "nul-in-message")


def malformed_commit(work: Path, kind: str) -> str:
    """A commit on top of the clone's ``main`` that git's fsck refuses, made with plain git; returns it."""
    head = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    write(work, "new.md", f"new note for {kind}\n")
    git("add", "new.md", cwd=work)
    blob = git("rev-parse", ":new.md", cwd=work).stdout.strip()
    seed_blob = git("rev-parse", "HEAD:seed.md", cwd=work).stdout.strip()

    def entry(mode: bytes, name: bytes, ident: str) -> bytes:
        return mode + b" " + name + b"\0" + bytes.fromhex(ident)

    entries = {
        "duplicate-entries": [entry(b"100644", b"new.md", blob), entry(b"100644", b"new.md", blob)],
        "unsorted-entries": [entry(b"100644", b"seed.md", seed_blob), entry(b"100644", b"new.md", blob)],
        "zero-padded-mode": [entry(b"0100644", b"new.md", blob), entry(b"100644", b"seed.md", seed_blob)],
    }.get(kind, [entry(b"100644", b"new.md", blob), entry(b"100644", b"seed.md", seed_blob)])
    tree = _literal(work, "tree", b"".join(entries))
    stamp = b"+00000" if kind == "bad-time-zone" else b"+0000"
    who = b"Mallory <m@example.com> 1700000000 " + stamp
    message = b"hidden\0text\n" if kind == "nul-in-message" else b"malformed\n"
    raw = f"tree {tree}\nparent {head}\n".encode() + b"author " + who + b"\ncommitter " + who + b"\n\n" + message
    new = _literal(work, "commit", raw)
    git("update-ref", "refs/heads/main", new, cwd=work)
    return new


@contextmanager
def book_workers(
    tmp_path: Path, token: str, principal: str, access: str, **app_options: Any
) -> Iterator[tuple[Root, Any, Path, list[Any], list[str]]]:
    """Two "workers" (two apps on two ports) over one session book, as ``--workers 2`` has.

    A memory ``notes`` (seeded) reached by ``token`` of ``principal`` at ``access``.
    Yields the root, the book, the token file, the two :class:`McpHttpApp` and their ``/mcp`` URLs.
    """
    from gitmem.adapters.http_server import load_tokens
    from gitmem.adapters.mcp_book import SessionBook
    from gitmem.adapters.mcp_http import McpHttpApp, WithMcp
    from gitmem.adapters.tokens import token_entry

    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    token_file = tmp_path / "tokens.toml"
    token_file.write_text(token_entry(token, principal, ["notes"], access), encoding="utf-8")
    tokens = load_tokens(token_file, env={})
    book = SessionBook(tmp_path / "book")
    apps = [McpHttpApp(root, tokens, book=book, **app_options) for _ in range(2)]
    servers = [GitHttpServer(WithMcp(GitHttpApp(root, tokens=tokens), app), "127.0.0.1", 0).start() for app in apps]
    try:
        yield root, book, token_file, apps, [f"http://127.0.0.1:{s.port}/mcp" for s in servers]
    finally:
        for server in servers:
            server.stop()
