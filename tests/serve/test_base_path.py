"""``gitmem serve --base-path /memories``: every route under the prefix, as a reverse proxy forwards it.

A real server process, the real git client (clone, push) and the official
``mcp`` client, all through the prefix; nothing answers outside it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from bench.mcp_http_client import HttpMcpClient, payload
from gitmem import Root
from gitmem.adapters.cli import cli
from gitmem.adapters.tokens import token_entry

from .support import GIT_TIMEOUT, fsck_clean, git, seed, serving, write

TOKEN = "tok-base-path-0123456789abcdef0123"


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=GIT_TIMEOUT) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def test_git_mcp_discovery_and_health_answer_under_the_base_path_only(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    store = root.mount("team", create=True)
    seed(store)
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(TOKEN, "alice", ["team"], "write"))
    with serving(root.path, tokens, "--base-path", "/memories/") as served:
        info = served.info
        url = info["url"]
        origin = url[: -len("/memories")]
        assert url.endswith("/memories") and info["mcp_url"] == url + "/mcp" and info["base_path"] == "/memories"
        assert info["clone_url"].endswith("/memories/<name>.git")

        # git: clone and push through the prefix.
        work = tmp_path / "work"
        git("clone", "-q", url.replace("http://", f"http://alice:{TOKEN}@") + "/team.git", str(work))
        write(work, "from-git.md", "pushed under a base path\n")
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", "under /memories", cwd=work, env={"GIT_AUTHOR_NAME": "alice"})
        pushed = git("rev-parse", "HEAD", cwd=work).stdout.strip()
        git("push", "-q", "origin", "main", cwd=work)
        assert store.sync.head() == pushed

        # MCP: the official client through the prefix sees what git pushed, and writes.
        with HttpMcpClient(info["mcp_url"], TOKEN) as agent:
            shown = payload(agent.call("memory_file_view", memory="team", path="from-git.md"))
            assert shown["content"] == "pushed under a base path\n"
            made = agent.call("memory_file_create", memory="team", path="from-mcp.md", content="hello\n")
            assert not made.is_error, made
        git("pull", "-q", cwd=work)
        assert (work / "from-mcp.md").read_text() == "hello\n"

        # Health and OAuth discovery under the prefix.
        assert get(url + "/health") == (200, b"ok\n")
        status, body = get(url + "/.well-known/oauth-protected-resource/mcp")
        assert status == 404 and "bearer tokens, not OAuth" in json.loads(body)["error_description"]
        # ... and where OAuth discovery looks for the resource /memories/mcp: at the host's root, the path after
        # the well-known name (RFC 9728 for the resource, RFC 8414 for an authorization server).
        for path in ("/.well-known/oauth-protected-resource/memories/mcp",
                     "/.well-known/oauth-protected-resource/memories",
                     "/.well-known/oauth-authorization-server/memories",
                     "/.well-known/oauth-authorization-server/memories/mcp",
                     "/.well-known/openid-configuration/memories"):  # fmt: skip
            status, body = get(origin + path)
            assert status == 404 and "bearer tokens, not OAuth" in json.loads(body)["error_description"], path

        # Outside the prefix nothing answers, not even with a good token.
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        for path in ("/health", "/team.git/info/refs?service=git-upload-pack", "/mcp", "/memoriesx/health",
                     "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/memoriesx/mcp",
                     "/.well-known/oauth-protected-resource/mcp"):  # fmt: skip
            status, body = get(origin + path, bearer)
            assert status == 404 and b"under /memories/" in body, (path, status, body)
        refused = git("ls-remote", origin.replace("http://", f"http://alice:{TOKEN}@") + "/team.git", check=False)
        assert refused.returncode != 0
    fsck_clean(root.mount_path("team"))


def test_a_base_path_that_is_not_a_prefix_is_a_usage_error(tmp_path: Path) -> None:
    for bad in ("/a/../b", "/a b", "/a?x=1"):
        done = CliRunner().invoke(cli, ["--root", str(tmp_path), "serve", "--base-path", bad])
        assert done.exit_code == 2 and "--base-path" in done.output, (bad, done.output)


def _raw_get(url: str, raw_path: str, token: str) -> tuple[int, bytes]:
    """GET ``raw_path`` sent exactly as written (no client normalizes or re-encodes it)."""
    import base64
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=GIT_TIMEOUT)
    try:
        basic = base64.b64encode(f"alice:{token}".encode()).decode()
        connection.request("GET", raw_path, headers={"Authorization": f"Basic {basic}"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_path_that_is_under_the_base_only_once_an_encoded_slash_is_decoded_is_outside_it(tmp_path: Path) -> None:
    """``/memories%2Fteam.git`` is one segment, ``memories/team.git``, not ``team.git`` under ``/memories``: a
    proxy that forwards ``/memories/`` alone never sends it, and the server answered it as under the base
    (the server decodes ``%2F`` before it looks at the path). ``%2F`` after the base stays the app's to refuse."""
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(TOKEN, "alice", ["team"], "write"))
    with serving(root.path, tokens, "--base-path", "/memories") as served:
        url = served.info["url"]
        refs = "/team.git/info/refs?service=git-upload-pack"
        assert _raw_get(url, "/memories" + refs, TOKEN)[0] == 200
        assert _raw_get(url, "/%6Demories" + refs, TOKEN)[0] == 200  # an unreserved letter escaped is the same
        for path in ("/memories%2Fteam.git/info/refs?service=git-upload-pack", "/memories%2fhealth",
                     "/.well-known/oauth-protected-resource/memories%2Fmcp"):  # fmt: skip
            status, body = _raw_get(url, path, TOKEN)
            assert status == 404 and b"under /memories/" in body, (path, status, body)


def test_a_route_that_is_no_repository_under_the_base_names_the_clone_url_with_the_base(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(TOKEN, "alice", ["team"], "write"))
    with serving(root.path, tokens, "--base-path", "/memories") as served:
        status, body = _raw_get(served.info["url"], "/memories/team", TOKEN)
        assert status == 404 and b"http://HOST:PORT/memories/<name>.git" in body, body
