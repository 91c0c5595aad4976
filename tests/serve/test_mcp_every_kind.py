"""Every memory kind over ``/mcp`` of a running ``gitmem serve``, with the official ``mcp`` client.

File, record, session and durable memory are each served at the access the
token has, and each refusal is the one a user reads: a record namespace the
token is not granted is ``forbidden``, a read token's write and a writer's
activation are tools not offered. A token reaches the same memories, with the
same power, over git smart-HTTP as over ``/mcp``.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from bench.mcp_http_client import HttpMcpClient, payload
from gitmem import Root, review
from gitmem.adapters.mcp_served import SCOPE_HEADER, TOPIC_HEADER, Route, served_server, session_route
from gitmem.adapters.tokens import hash_token, parse_token_file, token_entry
from gitmem.durable import DurableRepository, Namespace
from gitmem.errors import MemoryStoreError
from tests.durable.support import ITEM

from .support import GIT_ENV, GIT_TIMEOUT, GITMEM, fsck_clean, git, serving, write


def token_of(who: str) -> str:
    return f"tok-{who}-every-kind-0123456789abcdef"


def tokens_file(path: Path, people: dict[str, tuple[str, list[str], dict[str, Any]]]) -> Path:
    path.write_text(
        "".join(
            token_entry(token_of(who), who, memories, access, **extra)  # type: ignore[arg-type]
            for who, (access, memories, extra) in people.items()
        )
    )
    return path


def item(text: str) -> dict[str, Any]:
    return {**ITEM, "content": text}


def test_every_kind_at_each_tokens_access_with_its_refusals(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    root.mount("notes", create=True)
    root.mount("facts", create=True, kind="record")
    root.mount("lessons", create=True, kind="session")
    DurableRepository.open(root.path, "decisions", create=True)
    people = {
        "alice": ("write", ["*"], {"namespaces": ["team"]}),
        "rob": ("read", ["*"], {}),
        "carol": ("propose", ["*"], {"tenant": "acme"}),
        "dana": ("admin", ["*"], {}),
    }
    tokens = tokens_file(tmp_path / "tokens.toml", people)
    with serving(root.path, tokens) as served:
        url = served.info["url"] + "/mcp"
        with HttpMcpClient(url, token_of("alice"), {"Gitmem-Scope": "repo-api"}) as alice:
            names = set(alice.tool_names())
            assert {"memory_file_create", "memory_record_add", "memory_session_remember", "durable_propose"} <= names
            assert "durable_activate" not in names and "durable_approve" not in names  # a writer is no reviewer
            wrote = payload(alice.call("memory_file_create", memory="notes", path="a.md", content="hello\n"))
            assert wrote["branch"] == "main", wrote
            assert not alice.call("memory_record_add", memory="facts", text="alice likes tea").is_error
            shared = alice.call("memory_record_add", memory="facts", namespace="team", text="the team ships on Fridays")
            assert not shared.is_error, shared
            refused = alice.call("memory_record_search", memory="facts", namespace="bob", query="anything")
            assert refused.is_error and payload(refused)["error"] == "forbidden", refused
            assert "'bob'" in payload(refused)["message"] and "'team'" in payload(refused)["message"]
            own = payload(alice.call("memory_record_search", memory="facts", query="tea"))
            assert [r["text"] for r in own["records"]] == ["alice likes tea"]
            assert not alice.call("memory_session_remember", content="Deploys go out on Tuesdays.").is_error
            proposed = payload(alice.call("durable_propose", items=[item("Indent Go code with tabs, never spaces.")]))
            assert proposed["status"] == "candidate" and proposed["branch"] == "main", proposed
            alice_node = proposed["new"][0]
        with HttpMcpClient(url, token_of("rob")) as rob:
            names = set(rob.tool_names())
            assert {"memory_file_view", "memory_record_search", "memory_session_recall", "durable_recall"} <= names
            assert not names & {"memory_file_create", "memory_record_add", "memory_session_remember", "durable_propose"}
            with pytest.raises(MCPError) as offered:  # a tool this session does not offer: the protocol's error
                rob.call("durable_propose", items=[item("Rob would like to write this down.")])
            assert offered.value.error.code == -32602
            refused = rob.call("memory_record_search", memory="facts", namespace="team", query="ships")
            assert refused.is_error and payload(refused)["error"] == "forbidden"  # team is alice's grant, not rob's
            recalled = payload(rob.call("memory_session_recall", query="when do deploys go out"))
            assert "Tuesdays" in json.dumps(recalled)
        with HttpMcpClient(url, token_of("carol"), {"Gitmem-Scope": "repo-api"}) as carol:
            out = payload(carol.call("durable_propose", items=[item("Carol says: release notes are written first.")]))
            assert out["branch"] == "proposals/carol/mcp" and out["status"] == "candidate", out
            carol_node = out["new"][0]
            assert "durable_approve" not in carol.tool_names()
        with HttpMcpClient(url, token_of("dana"), {"Gitmem-Scope": "repo-api"}) as dana:
            assert {"durable_activate", "durable_approve"} <= set(dana.tool_names())
            mine = payload(dana.call("durable_propose", items=[item("Dana decided: every service exposes /healthz.")]))
            activated = payload(dana.call("durable_activate", id=mine["new"][0], revision=1))
            assert activated["status"] == "active" and activated["activated_by"] == "dana", activated
            found = payload(dana.call("durable_recall", query="service healthz"))
            assert [m["id"] for m in found["memories"]] == mine["new"]
            approved = payload(dana.call("durable_approve", run="carol/mcp"))
            assert approved["activated"] == [carol_node] and approved["approved_by"] == "dana", approved
            theirs = payload(dana.call("durable_activate", id=alice_node, revision=1, principal="alice"))
            assert theirs["principal"] == "alice" and theirs["branch"] == "main", theirs
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
        request = urllib.request.Request(url, data=json.dumps(hello).encode(), method="POST")
        for key, value in {"Authorization": f"Bearer {token_of('alice')}", "Gitmem-Scope": "x" * 257,
                           "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}.items():  # fmt: skip
            request.add_header(key, value)
        with pytest.raises(urllib.error.HTTPError) as refused:  # a scope no durable namespace can hold
            urllib.request.urlopen(request, timeout=GIT_TIMEOUT)
        with refused.value as answer:
            assert answer.code == 400 and b"Gitmem-Scope" in answer.read()
    repo = DurableRepository.open(root.path, "decisions")
    assert repo.node(Namespace("acme", "carol", "repo-api"), carol_node).status == "active"  # carol's tenant
    assert repo.node(Namespace("decisions", "alice", "repo-api"), alice_node).status == "active"
    assert repo.node(Namespace("decisions", "dana", "repo-api"), mine["new"][0]).status == "active"
    assert repo.nodes(Namespace("decisions", "alice", "default")) == []  # the scope is the request's
    records = root.mount("facts").sync
    assert any("team" in e.path for e in records.list()) and any("alice" in e.path for e in records.list())
    for name in ("notes", "facts", "lessons", "decisions"):
        fsck_clean(root.mount_path(name))


def _git_reach(url: str, who: str, memory: str, work: Path) -> tuple[bool, str | None]:
    """Whether ``who`` reads ``memory`` over git, and the branch a push of a new file lands on (or None)."""
    remote = url.replace("://", f"://{who}:{token_of(who)}@", 1) + f"/{memory}.git"
    if git("ls-remote", remote, check=False).returncode != 0:
        return False, None
    git("clone", "-q", remote, str(work))
    git("config", "user.name", who, cwd=work)
    git("config", "user.email", f"{who}@example.com", cwd=work)
    write(work, f"git-{who}.md", f"{who} was here\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", f"{who} over git", cwd=work, env={"GIT_AUTHOR_NAME": who, "GIT_COMMITTER_NAME": who})
    for branch in ("main", f"proposals/{who}/git"):
        if git("push", "-q", "origin", f"HEAD:{branch}", cwd=work, check=False).returncode == 0:
            return True, branch.split("/")[0]
    return True, None


def _mcp_reach(client: HttpMcpClient, who: str, memory: str) -> tuple[bool, str | None]:
    """Whether ``who`` reads ``memory`` over ``/mcp``, and the branch a new file lands on (or None)."""
    assert client.session is not None
    tools = client.run(client.session.list_tools()).tools
    if memory == "team-d":  # the durable memory: its tools name no memory
        return any(t.name == "durable_recall" for t in tools), None
    offered = {t.name for t in tools if memory in t.input_schema.get("properties", {}).get("memory", {}).get("enum", [])}
    if "memory_file_create" not in offered:
        return bool(offered), None
    made = client.call("memory_file_create", memory=memory, path=f"mcp-{who}.md", content=f"{who}\n")
    return True, None if made.is_error else str(payload(made)["branch"]).split("/")[0]


def test_a_tokens_reach_is_the_same_over_git_and_mcp(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    for name in ("team-a", "team-b", "solo"):
        root.mount(name, create=True)
    root.mount("team-r", create=True, kind="record")
    DurableRepository.open(root.path, "team-d", create=True)
    people = {
        "alice": ("write", ["team-*"], {}),
        "rob": ("read", ["team-a", "solo"], {}),
        "carol": ("propose", ["team-*"], {}),
        "dana": ("admin", ["*"], {}),
        "eve": ("write", ["solo"], {}),
    }
    tokens = tokens_file(tmp_path / "tokens.toml", people)
    memories = ("team-a", "team-b", "solo", "team-r", "team-d")
    reach: dict[str, dict[str, tuple[bool, str | None]]] = {}
    with serving(root.path, tokens) as served:
        url = served.info["url"]
        for who in people:
            over_git = {m: _git_reach(url, who, m, tmp_path / f"{who}-{m}") for m in memories}
            with HttpMcpClient(url + "/mcp", token_of(who)) as client:
                over_mcp = {m: _mcp_reach(client, who, m) for m in memories}
            for m in ("team-r", "team-d"):  # no plain file is written there: compare what is read
                over_git[m] = (over_git[m][0], None)
            assert over_mcp == over_git, who
            reach[who] = over_mcp
    # The comparison is not vacuous: each level shows its own reach.
    assert reach["alice"]["team-a"] == (True, "main") and reach["alice"]["solo"] == (False, None)
    assert reach["rob"]["team-a"] == (True, None) and reach["rob"]["team-b"] == (False, None)
    assert reach["carol"]["team-b"] == (True, "proposals") and reach["carol"]["team-d"] == (True, None)
    assert reach["eve"] == {m: (m == "solo", "main" if m == "solo" else None) for m in memories}
    assert all(reach["dana"][m][0] for m in memories)
    for name in memories:
        fsck_clean(root.mount_path(name))


def gitmem_json(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [*GITMEM, *args, "--json"], capture_output=True, text=True, env=GIT_ENV, timeout=GIT_TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_a_namespace_granted_with_token_add_is_listed_kept_by_rotate_and_reached_over_mcp(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    root.mount("facts", create=True, kind="record")
    tokens = tmp_path / "tokens.toml"
    tokens.write_text("token = []\n", encoding="utf-8")
    with serving(root.path, tokens) as served:
        added = gitmem_json(
            "token", "add", "alice", "--memory", "facts", "--namespace", "team", "--namespace", "ops",
            "--tenant", "acme", "--file", str(tokens),
        )  # fmt: skip
        assert added["namespaces"] == ["team", "ops"] and added["tenant"] == "acme"
        listed = gitmem_json("token", "list", "--file", str(tokens))["tokens"]
        assert [(t["principal"], t["namespaces"], t["tenant"]) for t in listed] == [("alice", ["team", "ops"], "acme")]
        rotated = gitmem_json("token", "rotate", "alice", "--file", str(tokens))
        assert rotated["namespaces"] == ["team", "ops"] and rotated["tenant"] == "acme"
        with HttpMcpClient(served.info["url"] + "/mcp", rotated["token"]) as alice:
            assert alice.session is not None
            search = next(t for t in alice.run(alice.session.list_tools()).tools if t.name == "memory_record_search")
            assert search.input_schema["properties"]["namespace"]["enum"] == ["alice", "team", "ops"]
            assert not alice.call("memory_record_add", memory="facts", namespace="ops", text="pager rota").is_error
            found = payload(alice.call("memory_record_search", memory="facts", namespace="ops", query="pager"))
            assert [r["text"] for r in found["records"]] == ["pager rota"]
            assert payload(alice.call("memory_record_search", memory="facts", query="pager"))["records"] == []
            refused = alice.call("memory_record_add", memory="facts", namespace="finance", text="budget")
            assert refused.is_error and payload(refused)["error"] == "forbidden"
    fsck_clean(root.mount_path("facts"))


def test_a_reviewers_decisions_over_mcp_land_on_main_of_a_review_gated_durable_memory(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    DurableRepository.open(root.path, "decisions", create=True)
    review.enable(root.mount("decisions"))
    people = {"carol": ("propose", ["*"], {}), "dana": ("admin", ["*"], {})}
    tokens = tokens_file(tmp_path / "tokens.toml", people)
    with serving(root.path, tokens) as served:
        url = served.info["url"] + "/mcp"
        with HttpMcpClient(url, token_of("carol"), {"Gitmem-Scope": "repo-api"}) as carol:
            proposed = payload(carol.call("durable_propose", items=[item("Carol: release notes come first.")]))
            carol_node = proposed["new"][0]
        with HttpMcpClient(url, token_of("dana"), {"Gitmem-Scope": "repo-api"}) as dana:
            approved = payload(dana.call("durable_approve", run="carol/mcp"))
            assert approved["activated"] == [carol_node] and approved["branch"] == "main", approved
            mine = payload(dana.call("durable_propose", items=[item("Dana: every service exposes /healthz.")]))
            assert mine["branch"] == "proposals/dana/mcp", mine  # gated: the admin's own writes are proposed too
            refused = dana.call("durable_activate", id=mine["new"][0], revision=1)
            assert refused.is_error and payload(refused)["error"] == "node_not_found", refused  # not on main yet
            own = payload(dana.call("durable_approve", run="dana/mcp"))  # what the docs tell an admin to do
            assert own["activated"] == mine["new"] and own["branch"] == "main", own
    repo = DurableRepository.open(root.path, "decisions")
    assert repo.node(Namespace("decisions", "carol", "repo-api"), carol_node).status == "active"
    assert repo.node(Namespace("decisions", "dana", "repo-api"), mine["new"][0]).status == "active"
    refs = git("for-each-ref", "--format=%(refname)", "refs/heads/proposals", cwd=root.mount_path("decisions"))
    assert refs.stdout.strip() == ""
    fsck_clean(root.mount_path("decisions"))


@pytest.mark.parametrize(
    "extra",
    ['namespaces = [["a"]]', 'namespaces = [""]', 'namespaces = ["a\\u0007b"]', "namespaces = [1]",
     'tenant = ""', "tenant = 7", f'namespaces = ["{"é" * 60}"]', f'tenant = "{"€" * 100}"',
     'tenant = "acme\\u2028x"'],
)  # fmt: skip
def test_a_bad_grant_field_refuses_the_token_file(extra: str) -> None:
    text = token_entry(token_of("x"), "x", ["*"], "write") + extra + "\n"
    with pytest.raises(MemoryStoreError) as refused:
        parse_token_file(text)
    assert refused.value.code == "invalid_file"

def test_a_json_token_file_takes_the_same_grant_fields() -> None:
    entry = {"principal": "x", "sha256": hash_token(token_of("x")), "memories": ["*"], "access": "write",
             "namespaces": ["team", "team"], "tenant": "acme"}  # fmt: skip
    grant = parse_token_file(json.dumps({"tokens": [entry]}), fmt="json").grant(token_of("x"))
    assert grant is not None and grant.namespaces == ("team",) and grant.tenant == "acme"
    assert grant.record_namespaces() == ("x", "team")


def test_scope_and_topic_headers_are_read_as_the_utf_8_a_client_sent() -> None:
    def as_wsgi(value: str) -> str:  # what a WSGI server hands over: the header's bytes decoded as latin-1
        return value.encode().decode("latin-1")

    assert session_route({SCOPE_HEADER: as_wsgi(" café "), TOPIC_HEADER: "billing"}) == Route("billing", "café")
    with pytest.raises(MemoryStoreError) as named:  # a topic names a branch: the refusal quotes what was sent
        session_route({TOPIC_HEADER: as_wsgi("Ωmega")})
    assert "'Ωmega'" in named.value.message and "Gitmem-Topic" in named.value.message
    assert "p/" not in named.value.message  # the placeholder principal it is checked under is not shown
    for header in (SCOPE_HEADER, TOPIC_HEADER):
        with pytest.raises(MemoryStoreError) as refused:  # bytes that are not UTF-8: 400 over /mcp
            session_route({header: b"caf\xe9".decode("latin-1")})
        assert refused.value.code == "forbidden" and "UTF-8" in refused.value.message


@pytest.mark.parametrize(("code", "offered"), [("unknown_memory", False), ("unavailable", None)])
def test_a_durable_memory_gone_is_not_offered_and_any_other_failure_surfaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, offered: bool | None
) -> None:
    root = Root(tmp_path / "mem")
    root.mount("notes", create=True)
    DurableRepository.open(root.path, "decisions", create=True)

    def failing(seam: object) -> None:
        raise MemoryStoreError(code, "cannot read it now")  # type: ignore[arg-type]

    monkeypatch.setattr("gitmem.durable.DurableRepository", failing)
    grant = parse_token_file(token_entry(token_of("x"), "x", ["*"], "write")).grant(token_of("x"))
    assert grant is not None
    if offered is None:
        with pytest.raises(MemoryStoreError) as surfaced:  # a transient failure is not "this token reaches less"
            served_server(root, grant, watched=False)
        assert surfaced.value.code == code
    else:
        assert served_server(root, grant, watched=False).durable is None
