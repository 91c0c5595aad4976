"""``gitmem token add|list|revoke|rotate`` on the token file of a running ``gitmem serve``.

The server is a real process, the edits are ``gitmem token`` processes, git is
the real client and MCP the official ``mcp`` client: what a team's admin does.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.mcp_http_client import HttpMcpClient, payload
from gitmem import Root
from gitmem.adapters.cli import cli
from gitmem.adapters.tokens import hash_token, load_tokens

from .support import GIT_ENV, GIT_TIMEOUT, GITMEM, fsck_clean, git, seed, serving


def gitmem(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [*GITMEM, *args, "--json"], capture_output=True, text=True, env=GIT_ENV, timeout=GIT_TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@dataclass
class Server:
    proc: subprocess.Popen[str]
    url: str

    def git_url(self, token: str, name: str = "team") -> str:
        return self.url.replace("http://", f"http://who:{token}@") + f"/{name}.git"

    def reads(self, token: str) -> bool:
        return git("ls-remote", self.git_url(token), check=False).returncode == 0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text("# the team's tokens: edit with `gitmem token`\ntoken = []\n", encoding="utf-8")
    with serving(root.path, tokens) as served:
        yield Server(served.proc, served.info["url"])
    fsck_clean(root.mount_path("team"))


def test_list_rotate_and_revoke_reach_a_running_server_from_its_next_request(server: Server, tmp_path: Path) -> None:
    tokens = str(tmp_path / "tokens.toml")
    alice = gitmem("token", "add", "alice", "--memory", "team", "--file", tokens, "--note", "laptop")
    bob = gitmem("token", "bob", "--memory", "team-*", "--memory", "team", "--access", "read", "--file", tokens)
    # Added while the server runs: accepted from its next request, over git and MCP.
    assert server.reads(alice["token"]) and server.reads(bob["token"])

    listed = subprocess.run([*GITMEM, "token", "list", "--file", tokens, "--json"], capture_output=True, text=True,
                            env=GIT_ENV, timeout=GIT_TIMEOUT, check=True).stdout  # fmt: skip
    rows = json.loads(listed)["tokens"]
    assert [(r["principal"], r["access"], r["memories"], r["note"]) for r in rows] == [
        ("alice", "write", ["team"], "laptop"),
        ("bob", "read", ["team-*", "team"], None),
    ]
    assert [r["id"] for r in rows] == [alice["id"], bob["id"]]
    for secret in (alice["token"], bob["token"]):  # never the token, never its whole hash
        assert secret not in listed and hash_token(secret) not in listed
        assert hash_token(secret) in Path(tokens).read_text()

    with HttpMcpClient(server.url + "/mcp", alice["token"]) as agent:
        assert "seed.md" in json.dumps(payload(agent.call("memory_file_view", memory="team", path="")))
        rotated = gitmem("token", "rotate", "alice", "--file", tokens)
        assert rotated["replaced"] == alice["id"] and rotated["id"] != alice["id"]
        assert (rotated["principal"], rotated["memories"], rotated["access"]) == ("alice", ["team"], "write")
        # The old token is refused from the next request: the open MCP session too.
        with pytest.raises(Exception):  # noqa: B017 (the client raises what its transport saw: a 401)
            agent.call("memory_file_view", memory="team", path="")
    assert not server.reads(alice["token"]) and server.reads(rotated["token"])
    with HttpMcpClient(server.url + "/mcp", rotated["token"]) as agent:
        made = agent.call("memory_file_create", memory="team", path="after-rotation.md", content="still alice\n")
        assert not made.is_error, made

    gone = gitmem("token", "revoke", bob["id"][:8], "--file", tokens)["revoked"]
    assert [g["principal"] for g in gone] == ["bob"]
    assert not server.reads(bob["token"]) and server.reads(rotated["token"])
    assert gitmem("token", "revoke", "alice", "--file", tokens)["revoked"][0]["id"] == rotated["id"]
    assert not server.reads(rotated["token"])
    # The last entry gone, the file still reads as a token file (with no tokens), comments kept.
    text = Path(tokens).read_text()
    assert text.startswith("# the team's tokens") and len(load_tokens(tokens, env={})) == 0


def test_edits_of_many_processes_at_once_all_land(tmp_path: Path) -> None:
    tokens = str(tmp_path / "tokens.toml")
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda i: gitmem("token", f"agent{i}", "--memory", "team", "--file", tokens), range(8)))
    rows = gitmem("token", "list", "--file", tokens)["tokens"]
    assert sorted(r["id"] for r in rows) == sorted(m["id"] for m in made)
    table = load_tokens(tokens, env={})
    assert all(table.grant(m["token"]) is not None for m in made)


def test_a_token_file_that_does_not_parse_is_left_as_it_is(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    broken = '[[token]]\nprincipal = "alice"\nsha256 = "not hex"\n'
    tokens.write_text(broken)
    runner = CliRunner()
    for args in (["token", "add", "bob", "--memory", "x"], ["token", "revoke", "alice"], ["token", "rotate", "alice"]):
        done = runner.invoke(cli, [*args, "--file", str(tokens)])
        assert done.exit_code == 1 and "invalid_file" in done.output, done.output
        assert tokens.read_text() == broken


def test_token_add_refuses_a_tenant_no_durable_namespace_takes(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    runner = CliRunner()
    for tenant in ("€" * 100, "acme\u2028x"):  # fits 128 characters, yet 300 bytes / a line separator
        done = runner.invoke(cli, ["token", "add", "bob", "--memory", "x", "--tenant", tenant, "--file", str(tokens)])
        assert done.exit_code == 1 and "invalid_file" in done.output and "tenant" in done.output, done.output
        assert not tokens.exists()


def test_a_plain_list_is_listed_and_revoked_by_id_but_not_rotated(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# old style\nfirst-token-0001\nsecond-token-0002\n")
    runner = CliRunner()
    rows = json.loads(runner.invoke(cli, ["token", "list", "--file", str(tokens), "--json"]).stdout)["tokens"]
    assert [(r["principal"], r["access"], r["memories"]) for r in rows] == [(None, "admin", ["*"])] * 2
    assert rows[0]["id"] == hash_token("first-token-0001")[:12]
    refused = runner.invoke(cli, ["token", "rotate", rows[0]["id"], "--file", str(tokens)])
    assert refused.exit_code == 1 and "invalid_file" in refused.output
    done = runner.invoke(cli, ["token", "revoke", rows[0]["id"], "--file", str(tokens), "--json"])
    assert done.exit_code == 0, done.output
    assert tokens.read_text() == "# old style\nsecond-token-0002\n"
    missing = runner.invoke(cli, ["token", "revoke", "nobody", "--file", str(tokens)])
    assert missing.exit_code == 1 and "not_found" in missing.output and "gitmem token list" in missing.output


def test_a_principal_with_two_tokens_is_rotated_by_id(tmp_path: Path) -> None:
    tokens = str(tmp_path / "tokens.json")
    Path(tokens).write_text('{"tokens": []}')
    runner = CliRunner()
    ids = []
    for _ in range(2):
        done = runner.invoke(cli, ["token", "add", "ci", "--memory", "team", "--file", tokens, "--json"])
        assert done.exit_code == 1 and "TOML" in done.output  # a new token goes to a TOML file
    Path(tokens).write_text(json.dumps({"tokens": [
        {"principal": "ci", "sha256": hash_token(f"ci-token-{i}-0123456789"), "memories": ["team"], "access": "propose"}
        for i in range(2)
    ]}))  # fmt: skip
    ids = [
        r["id"] for r in json.loads(runner.invoke(cli, ["token", "list", "--file", tokens, "--json"]).stdout)["tokens"]
    ]
    both = runner.invoke(cli, ["token", "rotate", "ci", "--file", tokens])
    assert both.exit_code == 1 and "ambiguous_match" in both.output
    one = json.loads(runner.invoke(cli, ["token", "rotate", ids[1], "--file", tokens, "--json"]).stdout)
    table = load_tokens(tokens, env={})
    assert table.grant("ci-token-1-0123456789") is None and table.grant("ci-token-0-0123456789") is not None
    grant = table.grant(one["token"])
    assert grant is not None and (grant.principal, grant.access) == ("ci", "propose")


def test_a_token_file_in_a_linked_folder_is_edited_where_the_server_follows_it(tmp_path: Path) -> None:
    # /etc/gitmem -> /srv/conf/gitmem: the server reads the token file through the folder's link
    # (only the file itself must not be one), but every edit locked the folder opened without
    # following links and was refused ("cannot open .../conf: Not a directory"): a leaked token
    # could not be revoked with `gitmem token` at all.
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    (tmp_path / "real").mkdir()
    (tmp_path / "conf").symlink_to(tmp_path / "real")
    tokens = str(tmp_path / "conf" / "tokens.toml")
    alice = gitmem("token", "add", "alice", "--memory", "team", "--file", tokens)
    bob = gitmem("token", "add", "bob", "--memory", "team", "--access", "read", "--file", tokens)
    assert (tmp_path / "real" / "tokens.toml").is_file() and (tmp_path / "conf").is_symlink()
    with serving(root.path, Path(tokens)) as served:
        server = Server(served.proc, served.info["url"])
        assert server.reads(alice["token"]) and server.reads(bob["token"])
        rotated = gitmem("token", "rotate", "alice", "--file", tokens)
        assert gitmem("token", "revoke", "bob", "--file", tokens)["revoked"][0]["id"] == bob["id"]
        assert not server.reads(alice["token"]) and not server.reads(bob["token"])
        assert server.reads(rotated["token"])
    assert (tmp_path / "conf").is_symlink()  # the edits replaced the file, never the folder's link
    fsck_clean(root.mount_path("team"))
