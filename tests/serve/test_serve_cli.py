"""``gitmem serve`` and ``gitmem hooks install`` as a user runs them."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from gitmem import Root
from gitmem.adapters.cli import cli

from .support import GIT_ENV, GIT_TIMEOUT, commit_all, git, seed, serving, write


def test_gitmem_serve_serves_clones_takes_token_pushes_and_stops_on_sigterm(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    store = root.mount("user", create=True)
    seed(store)
    tokens = tmp_path / "tokens"
    tokens.write_text("# the team's push token\nteam-token-1\n")
    env = {**GIT_ENV, "GITMEM_TOKENS": "ci-token-2"}
    with serving(root.path, tokens, env=env) as served:
        info = served.info
        assert info["mounts"] == ["user"] and info["tokens"] == 2 and info["public_read"] is False
        from gitmem.adapters.mcp_http import DEFAULT_MAX_SESSIONS

        assert info["mcp_sessions"] == DEFAULT_MAX_SESSIONS  # --mcp-sessions' default is the app's
        url = info["url"].replace("http://", "http://me:ci-token-2@") + "/user.git"
        work = tmp_path / "work"
        git("clone", "-q", url, str(work))
        write(work, "from-cli.md", "pushed through gitmem serve\n")
        pushed = commit_all(work, "via serve")
        git("push", "-q", "origin", "main", cwd=work)
        assert store.sync.head() == pushed


def test_gitmem_hooks_install_guards_file_path_pushes(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    head = seed(root.mount("user", create=True))
    runner = CliRunner()
    done = runner.invoke(cli, ["--root", str(root.path), "hooks", "install", "user", "--json"])
    assert done.exit_code == 0, done.output
    assert [Path(p).name for p in json.loads(done.stdout)["hooks"]] == ["pre-receive", "post-receive"]
    missing = runner.invoke(cli, ["--root", str(root.path), "hooks", "install", "nobody"])
    assert missing.exit_code == 1 and "unknown_memory" in missing.stderr

    work = tmp_path / "work"
    git("clone", "-q", str(root.mount_path("user")), str(work))
    write(work, "aws.md", "key id AKIAIOSFODNN7EXAMPLE\n")
    commit_all(work, "aws key")
    refused = git("push", "origin", "main", cwd=work, check=False)
    assert refused.returncode != 0 and "aws.md: secret:aws_access_key" in refused.stderr
    assert git("rev-parse", "main", cwd=root.mount_path("user")).stdout.strip() == head


def test_gitmem_token_then_serve_prints_urls_that_work_as_shown(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    seed(root.mount("user", create=True))
    tokens = tmp_path / "tokens.toml"
    runner = CliRunner()
    minted = runner.invoke(cli, ["token", "alice", "--memory", "user", "--file", str(tokens), "--json"])
    assert minted.exit_code == 0, minted.output
    token = json.loads(minted.stdout)["token"]
    assert token not in tokens.read_text() and "alice" in tokens.read_text()
    plain = tmp_path / "plain"
    plain.write_text("old-token\n")
    refused = runner.invoke(cli, ["token", "bob", "--memory", "user", "--file", str(plain)])
    assert refused.exit_code == 1 and plain.read_text() == "old-token\n"

    with serving(root.path, tokens, json_output=False) as served:
        proc = served.proc
        assert proc.stdout is not None
        lines: list[str] = []
        while not any("MCP" in line for line in lines) and len(lines) < 20:
            lines.append(proc.stdout.readline())  # the banner is flushed as a whole
        assert any("MCP" in line for line in lines), lines
        clone = next(line.split()[-1] for line in lines if "git clone" in line)
        assert "<principal>:<token>@" in clone and clone.endswith("/user.git")
        git("clone", "-q", clone.replace("<principal>", "alice").replace("<token>", token), str(tmp_path / "w"))
        mcp_url = next(word for line in lines if "MCP" in line for word in line.split() if word.startswith("http"))
        assert mcp_url.endswith("/mcp")
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        request = urllib.request.Request(mcp_url, data=json.dumps(hello).encode(), method="POST")
        for key, value in {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }.items():
            request.add_header(key, value)
        with urllib.request.urlopen(request, timeout=GIT_TIMEOUT) as response:
            answer = json.loads(response.read())
            assert response.headers["mcp-session-id"]
        assert answer["result"]["serverInfo"]["name"] == "gitmem"
