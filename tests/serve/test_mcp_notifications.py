"""Change notifications over ``/mcp`` (the GET event stream), one proposal per principal and topic.

A real ``gitmem serve`` process; agents are the official ``mcp`` client, whose
streamable HTTP transport opens the GET stream after the handshake. A memory
moved by anyone (an agent over ``/mcp``, a git push, a local ``gitmem write``)
reaches every agent subscribed to it, as it would over stdio.
"""

from __future__ import annotations

import json
import queue
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.mcp_http_client import HttpMcpClient, payload
from gitmem import Root
from gitmem.adapters.tokenadmin import revoke_tokens
from gitmem.adapters.tokens import token_entry
from gitmem.git.review import PROPOSALS

from .support import GIT_ENV, GIT_TIMEOUT, GITMEM, fsck_clean, git, seed, serving, write

CONTEXT = "memory://team/context"
#: A liveness bound for one notification on a loaded machine (the bench measures the latency).
WAIT = 20.0


def token_of(who: str) -> str:
    return f"tok-{who}-notify-0123456789abcdef"


@dataclass
class Served:
    url: str
    root: Root
    tokens: Path

    def client(self, who: str, **headers: str) -> HttpMcpClient:
        return HttpMcpClient(self.url + "/mcp", token_of(who), headers)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module (a start costs more than most tests here): each test uses its own
    files and principals (``rex`` is the one whose token is revoked; carol alone makes proposals)."""
    tmp_path = tmp_path_factory.mktemp("notify")
    root = Root(tmp_path / "mem")
    seed(root.mount("team", create=True))
    tokens = tmp_path / "tokens.toml"
    people = {"alice": "write", "bob": "write", "carol": "propose", "rob": "read", "rex": "read"}
    tokens.write_text("".join(token_entry(token_of(w), w, ["team"], a) for w, a in people.items()))  # type: ignore[arg-type]
    with serving(root.path, tokens) as server:
        yield Served(server.info["url"], root, tokens)
    fsck_clean(root.mount_path("team"))


def next_update(agent: HttpMcpClient) -> str:
    uri, _ = agent.updates.get(timeout=WAIT)
    return uri


def drain(agent: HttpMcpClient) -> None:
    while True:
        try:
            agent.updates.get(timeout=0.3)
        except queue.Empty:
            return


def test_an_agent_reading_a_memory_is_told_whoever_moves_it(served: Served, tmp_path: Path) -> None:
    with served.client("rob") as reader, served.client("alice") as writer:
        assert reader.init.capabilities.resources.subscribe is True
        reader.subscribe(CONTEXT)
        # Another agent over /mcp.
        made = writer.call("memory_file_create", memory="team", path="plan.md", content="step one\n")
        assert not made.is_error, made
        assert next_update(reader) == CONTEXT
        drain(reader)
        # A git push to the same server.
        work = tmp_path / "work"
        git("clone", "-q", served.url.replace("http://", f"http://bob:{token_of('bob')}@") + "/team.git", str(work))
        write(work, "pushed.md", "from git\n")
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", "from git", cwd=work, env={"GIT_AUTHOR_NAME": "bob"})
        git("push", "-q", "origin", "main", cwd=work)
        assert next_update(reader) == CONTEXT
        drain(reader)
        # A local process writing the mount directly.
        done = subprocess.run(
            [*GITMEM, "--root", str(served.root.path), "write", "team", "local.md", "--create"],
            input="from the shell\n", capture_output=True, text=True, env=GIT_ENV, timeout=GIT_TIMEOUT, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert next_update(reader) == CONTEXT
        # What the reader then reads is the memory as it moved.
        shown = payload(reader.call("memory_file_view", memory="team", path="local.md"))
        assert shown["content"] == "from the shell\n"


def test_a_revoked_token_hears_nothing_more(served: Served) -> None:
    with served.client("rex") as reader, served.client("rob") as other, served.client("alice") as writer:
        reader.subscribe(CONTEXT)
        other.subscribe(CONTEXT)
        writer.call("memory_file_create", memory="team", path="one.md", content="1\n")
        assert next_update(reader) == CONTEXT and next_update(other) == CONTEXT
        revoke_tokens(served.tokens, "rex")
        drain(reader)  # the stream checks the token every second
        drain(other)
        writer.call("memory_file_create", memory="team", path="two.md", content="2\n")
        # The move reached the streams: a token still granted hears it; the revoked one, in the
        # same fan-out, had it by now too if it was going to.
        assert next_update(other) == CONTEXT
        with pytest.raises(queue.Empty):
            reader.updates.get(timeout=1.0)


def test_one_proposal_per_principal_and_topic_and_replies_say_which(served: Served) -> None:
    mount = served.root.mount_path("team")
    with served.client("carol") as first, served.client("carol") as second:
        a = payload(first.call("memory_file_create", memory="team", path="a.md", content="a\n"))
        b = payload(second.call("memory_file_create", memory="team", path="b.md", content="b\n"))
    assert a["branch"] == b["branch"] == "proposals/carol/mcp"  # two sessions, one proposal
    with served.client("carol", **{"Gitmem-Topic": "billing"}) as billing:
        c = payload(billing.call("memory_file_create", memory="team", path="c.md", content="c\n"))
    assert c["branch"] == "proposals/carol/billing"
    with served.client("alice") as alice:
        assert payload(alice.call("memory_file_create", memory="team", path="d.md", content="d\n"))["branch"] == "main"
    refs = git("for-each-ref", "--format=%(refname)", PROPOSALS, cwd=mount).stdout.split()
    assert refs == [PROPOSALS + "carol/billing", PROPOSALS + "carol/mcp"]
    listing = git("ls-tree", "--name-only", PROPOSALS + "carol/mcp", cwd=mount).stdout.split()
    assert {"a.md", "b.md"} <= set(listing) and "c.md" not in listing


def test_a_topic_that_cannot_name_a_branch_and_a_stream_without_a_session_are_refused(served: Served) -> None:
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    for topic in ("a/b", "has space", ".."):
        request = urllib.request.Request(served.url + "/mcp", data=json.dumps(hello).encode(), method="POST")
        for key, value in {"Authorization": f"Bearer {token_of('carol')}", "Gitmem-Topic": topic,
                           "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}.items():  # fmt: skip
            request.add_header(key, value)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=GIT_TIMEOUT)
        with refused.value as answer:
            assert answer.code == 400, topic
    request = urllib.request.Request(served.url + "/mcp", headers={"Authorization": f"Bearer {token_of('rob')}",
                                                                   "Accept": "text/event-stream"})  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=GIT_TIMEOUT)
    with refused.value as answer:
        assert answer.code == 405 and "POST" in answer.headers["Allow"]
