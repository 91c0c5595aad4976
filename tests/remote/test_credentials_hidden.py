"""A remote's credentials never show: not in output, errors, git's messages passed on, or logs.

One rule (:func:`gitmem.secrets.scrub_credentials`) hides the user part and the query
values of every URL; every store error passes through it when it is made, the CLI's
reports and usage errors and a server's log records too. The class is tested here by
real ``gitmem`` processes against a real ``gitmem serve`` whose token is the URL's
password, on every path that names a URL: ``import --history``, ``remote add`` and
``list``, ``push`` and ``pull``, each as it succeeds and as it fails.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitmem import Root, exchange, remotes
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp
from gitmem.errors import MemoryStoreError
from gitmem.git.merge import MergeRefused
from gitmem.secrets import scrub_credentials

PASSWORD = "pw-7c1d9e0b44"
QUERY_TOKEN = "qt-55e0a9b3f2"
WRONG = "wrong-pw-81f2aa"
SECRETS = (PASSWORD, QUERY_TOKEN, WRONG)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://me:s3cret@git.example.com/user.git", "https://***@git.example.com/user.git"),
        ("https://ghp_abcdefghijklmnop@github.com/o/r.git", "https://***@github.com/o/r.git"),
        ("https://tok123456:x-oauth-basic@github.com/o/r", "https://***@github.com/o/r"),
        ("http://u:p@ss/w@rd@host:8080/r.git", "http://***@host:8080/r.git"),  # '@' and '/' unencoded
        ("https://host/r.git?access_token=abc&private_token=def", "https://host/r.git?access_token=***&private_token=***"),
        ("https://host/r.git?abc#frag", "https://host/r.git?***#frag"),
        ("fatal: unable to access 'https://u:p@h/x.git?t=abc/': 403", "fatal: unable to access 'https://***@h/x.git?t=***': 403"),
        ("from (HTTPS://U:P@H/x) and git+https://a:b@c/d", "from (HTTPS://***@H/x) and git+https://***@c/d"),
        ("ssh://git@host/team/notes.git", "ssh://git@host/team/notes.git"),  # a login name, never a password
        ("ssh://git:pw@host/x", "ssh://***@host/x"),
        ("git@github.com:o/r.git and /srv/notes and C:\\notes", "git@github.com:o/r.git and /srv/notes and C:\\notes"),
        ("http://127.0.0.1:8765/user.git", "http://127.0.0.1:8765/user.git"),
    ],
)
def test_the_rule_hides_every_user_part_and_query_value_and_nothing_else(text: str, shown: str) -> None:
    assert scrub_credentials(text) == shown
    assert scrub_credentials(shown) == shown  # twice changes nothing more


def test_every_store_error_is_scrubbed_when_it_is_made() -> None:
    url = f"https://alice:{PASSWORD}@git.example.com/x.git?token={QUERY_TOKEN}"
    for exc in (
        MemoryStoreError("unavailable", f"git fetch from {url} failed: fatal: '{url}' not found"),
        MergeRefused("forbidden", f"the history of {url} breaks the memory's rules"),
    ):
        for seen in (exc.message, str(exc), repr(exc), str(pickle.loads(pickle.dumps(exc)))):
            assert not any(s in seen for s in SECRETS), seen
        assert "https://***@git.example.com/x.git?token=***" in exc.message


# --- real processes --------------------------------------------------------------------


@dataclass
class Hosting:
    """A running ``gitmem serve`` whose token is :data:`PASSWORD`, holding memory ``src``."""

    root: Root
    port: int

    def url(self, name: str, password: str = PASSWORD, query: str = "") -> str:
        return f"http://alice:{password}@127.0.0.1:{self.port}/{name}.git{query}"


@pytest.fixture
def hosting(tmp_path: Path) -> Iterator[Hosting]:
    root = Root(tmp_path / "hosted")
    src = root.mount("src", create=True).sync
    src.write("people/bob.md", "likes tea\n", expected=None)
    src.write("a.md", "alpha\n", expected=None)
    server = GitHttpServer(GitHttpApp(root, tokens=frozenset({PASSWORD})), "127.0.0.1", 0).start()
    try:
        yield Hosting(root, server.port)
    finally:
        server.stop()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Gitmem:
    """``gitmem --root ROOT ...`` as a new process; every output is kept to be searched."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: list[str] = []

    def __call__(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
        done = subprocess.run(
            [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(self.root), *args],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        self.seen.append(done.stdout + done.stderr)
        assert (done.returncode == 0) == ok, (args, done.stdout, done.stderr)
        return done


def _holds_no_secret(folder: Path) -> None:
    """No file under ``folder`` (a mount: objects, refs, logs, state) holds a secret."""
    for top, _dirs, files in os.walk(folder):
        for name in files:
            data = (Path(top) / name).read_bytes()
            assert not any(s.encode() in data for s in SECRETS), Path(top) / name


def test_import_history_names_its_source_without_the_password_when_it_lands_and_when_it_fails(
    hosting: Hosting, tmp_path: Path
) -> None:
    gm = Gitmem(tmp_path / "mem")
    done = gm("import", "team", "--history", hosting.url("src"), "--create")
    assert f"of http://***@127.0.0.1:{hosting.port}/src.git into 'team'" in done.stdout
    as_json = gm("import", "team", "--history", hosting.url("src"), "--json")
    assert f'"source": "http://***@127.0.0.1:{hosting.port}/src.git"' in as_json.stdout
    gm("cat", "team", "people/bob.md")  # the history did land
    failing = [
        hosting.url("src", WRONG, f"?access_token={QUERY_TOKEN}"),  # refused by the server
        hosting.url("nothing-here"),  # no such memory there
        f"http://alice:{PASSWORD}@127.0.0.1:{_closed_port()}/src.git?token={QUERY_TOKEN}",  # nobody answers
        f"https://{PASSWORD}@/broken",
    ]
    for url in failing:
        for extra in ((), ("--json",)):
            refused = gm("import", "team", "--history", url, *extra, ok=False)
            assert "error" in refused.stdout + refused.stderr
    # A URL given where a folder belongs: click repeats the argument in its usage error.
    gm("import", "team", hosting.url("src", query=f"?t={QUERY_TOKEN}"), ok=False)
    gm("import", "team", hosting.url("src", query=f"?t={QUERY_TOKEN}"), "--json", ok=False)
    assert not any(s in out for out in gm.seen for s in SECRETS), "\n".join(gm.seen)
    _holds_no_secret(tmp_path / "mem" / "team.git")
    assert subprocess.run(["git", "-C", str(tmp_path / "mem" / "team.git"), "fsck", "--strict"]).returncode == 0


def test_remotes_push_and_pull_never_show_the_password(hosting: Hosting, tmp_path: Path) -> None:
    gm = Gitmem(tmp_path / "mem")
    gm("import", "team", "--history", hosting.url("src"), "--create")  # src's history: push and pull fit
    hub = hosting.url("src", query=f"?access_token={QUERY_TOKEN}")
    gm("remote", "add", "team", "hub", hosting.url("src"))
    gm("remote", "add", "team", "bad", hosting.url("src", WRONG))
    gm("remote", "add", "team", "gone", f"http://alice:{PASSWORD}@127.0.0.1:{_closed_port()}/src.git")
    gm("remote", "add", "team", "query", hub, "--json")
    gm("remote", "add", "team", "hub", hosting.url("src"), ok=False)  # already_exists
    listed = gm("remote", "list", "team").stdout
    assert f"hub\thttp://***@127.0.0.1:{hosting.port}/src.git" in listed
    gm("remote", "list", "team", "--json")
    gm("pull", "team", "hub")
    gm("pull", "team", "hub", "--json")
    written = subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(tmp_path / "mem"), "write", "team", "c.md", "--create"],
        input="gamma\n", capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert written.returncode == 0
    gm("push", "team", "hub")
    gm("push", "team", "hub", "--json")
    for name in ("bad", "gone", "query"):
        gm("pull", "team", name, ok=False)
        gm("push", "team", name, ok=False)
        gm("push", "team", name, "--json", ok=False)
    assert not any(s in out for out in gm.seen for s in SECRETS), "\n".join(gm.seen)
    store = hosting.root.mount("src").sync
    assert store.read("c.md").text == "gamma\n"  # the push with the password in the URL did land


def test_errors_raised_to_a_library_caller_hold_no_secret(hosting: Hosting, tmp_path: Path) -> None:
    store = Root(tmp_path / "lib").mount("team", create=True).sync
    head = store.head()
    for url in (hosting.url("src", WRONG, f"?access_token={QUERY_TOKEN}"), hosting.url("missing")):
        with pytest.raises(MemoryStoreError) as failed:
            exchange.import_history(store, url)
        assert not any(s in str(failed.value) for s in SECRETS), failed.value
        remotes.add(store, "r", url)
        for call in (remotes.pull, remotes.push):
            with pytest.raises(MemoryStoreError) as refused:
                call(store, "r")
            assert not any(s in str(refused.value) for s in SECRETS), refused.value
        shown = remotes.list_remotes(store)
        assert not any(s in repr(shown) for s in SECRETS)
        remotes.remove(store, "r")
    assert store.head() == head  # nothing refused changed the memory
    report = exchange.import_history(store, hosting.url("src"), strict=True)
    assert report.source == f"http://***@127.0.0.1:{hosting.port}/src.git" and not report.refused
    assert store.read("a.md").text == "alpha\n"


def test_a_server_process_logs_no_credential(tmp_path: Path) -> None:
    """What ``gitmem serve``, ``mcp`` and ``watch`` install: every record, traceback included, scrubbed."""
    program = f"""
import logging
from gitmem.adapters.cli.output import scrub_log_records
scrub_log_records()
scrub_log_records()  # once is enough; twice does no harm
log = logging.getLogger("gitmem.recall")
log.warning("embeddings from %s failed", "https://api.example.com/v1?key={QUERY_TOKEN}")
try:
    raise RuntimeError("POST https://u:{PASSWORD}@api.example.com/embed returned 401")
except RuntimeError:
    log.exception("the embedder failed")
logging.getLogger("other.library").error("fetch of https://x:{PASSWORD}@h/r failed")
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert "embeddings from https://api.example.com/v1?key=***" in done.stderr
    assert "RuntimeError: POST https://***@api.example.com/embed returned 401" in done.stderr
    assert "fetch of https://***@h/r failed" in done.stderr
    assert not any(s in done.stderr for s in SECRETS), done.stderr


@pytest.mark.parametrize("command", ["serve", "mcp", "watch"])
def test_the_serving_commands_install_the_log_scrub(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    import click
    from click.testing import CliRunner

    from gitmem.adapters.cli import cli
    from gitmem.adapters.cli.commandtable import LONG_RUNNING

    assert command in LONG_RUNNING
    found = cli.get_command(click.Context(cli), command)
    assert found is not None
    monkeypatch.setattr(found, "callback", lambda *args, **kwargs: None)  # start, but serve nothing
    made = logging.getLogRecordFactory()
    try:
        extra = {"serve": [], "mcp": ["--mount", "x"], "watch": ["x"]}[command]
        done = CliRunner().invoke(cli, ["--root", str(tmp_path), command, *extra])
        assert done.exit_code == 0, done.output
        installed = logging.getLogRecordFactory()
        assert getattr(installed, "scrubs_credentials", False)
        record = installed("gitmem.x", logging.WARNING, __file__, 1, "from %s", (f"https://a:{PASSWORD}@h/r",), None)
        assert record.getMessage() == "from https://***@h/r"
    finally:
        logging.setLogRecordFactory(made)


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        (f"https://alice:{PASSWORD}@forge.invalid", PASSWORD),  # no path: the name was what follows the last ':'
        (f"https://{PASSWORD}@forge.invalid/", PASSWORD),  # a token as the user name
        (f"https://alice:{PASSWORD[:4]}/{PASSWORD[4:]}@forge.invalid", PASSWORD[4:]),  # a password holding a '/'
    ],
)
def test_clone_names_its_memory_without_the_urls_credentials(url: str, secret: str, tmp_path: Path) -> None:
    gm = Gitmem(tmp_path / "mem")
    gm("clone", url, ok=False)
    gm("clone", url, "--json", ok=False)
    assert not any(secret in out for out in gm.seen), "\n".join(gm.seen)
    assert secret not in remotes.clone_name(url)
