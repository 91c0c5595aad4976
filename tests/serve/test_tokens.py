"""Tokens that name a principal, its memories and its access, with the real git client.

One server, one token file (TOML, hashes only), five people: ``alice`` writes
``notes``, ``bob`` only reads it, ``carol`` may propose to it, ``dave`` is admin
of ``team-*`` and ``notes``, ``eve`` reaches only ``other``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp, load_tokens
from gitmem.adapters.tokens import FULL_ACCESS, Tokens, hash_token, parse_token_file, token_entry
from gitmem.errors import MemoryStoreError
from gitmem.git.review import PROPOSALS
from gitmem.review import enable

from .support import fsck_clean, git, seed, write

PEOPLE = {
    "alice": (["notes"], "write"),
    "bob": (["notes"], "read"),
    "carol": (["notes"], "propose"),
    "dave": (["team-*", "notes"], "admin"),
    "eve": (["other"], "write"),
}


def token_of(who: str) -> str:
    return f"tok-{who}-0123456789abcdef0123456789"


class Team:
    def __init__(self, root: Root, server: GitHttpServer, token_file: Path) -> None:
        self.root = root
        self.server = server
        self.token_file = token_file

    def url(self, who: str | None, name: str = "notes") -> str:
        auth = f"{who}:{token_of(who)}@" if who else ""
        return f"http://{auth}127.0.0.1:{self.server.port}/{name}.git"

    def head(self, name: str = "notes") -> str:
        return self.root.mount(name).sync.head()


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    root = Root(tmp_path / "root")
    for name in ("notes", "team-a", "other"):
        seed(root.mount(name, create=True))
    text = "".join(token_entry(token_of(who), who, memories, access) for who, (memories, access) in PEOPLE.items())  # type: ignore[arg-type]
    token_file = tmp_path / "tokens.toml"
    token_file.write_text(text, encoding="utf-8")
    assert "tok-" not in token_file.read_text(encoding="utf-8"), "a token was written in clear"
    tokens = load_tokens(token_file, env={})
    server = GitHttpServer(GitHttpApp(root, tokens=tokens), "127.0.0.1", 0).start()
    try:
        yield Team(root, server, token_file)
    finally:
        server.stop()


def clone(team: Team, who: str, where: Path, name: str = "notes") -> Path:
    git("clone", "-q", team.url(who, name), str(where))
    git("config", "user.name", who, cwd=where)
    git("config", "user.email", f"{who}@example.com", cwd=where)
    return where


def commit_all(work: Path, message: str) -> str:
    """Commit as the clone's owner (the suite's environment names another author)."""
    who = git("config", "user.name", cwd=work).stdout.strip()
    env = {"GIT_AUTHOR_NAME": who, "GIT_COMMITTER_NAME": who}
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", message, cwd=work, env=env)
    return git("rev-parse", "HEAD", cwd=work).stdout.strip()


def raw_get(url: str, token: str | None) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def test_every_level_clones_what_it_reaches(team: Team, tmp_path: Path) -> None:
    for who in ("alice", "bob", "carol", "dave"):
        work = clone(team, who, tmp_path / who)
        assert git("rev-parse", "HEAD", cwd=work).stdout.strip() == team.head()
    clone(team, "dave", tmp_path / "dave-team", "team-a")
    clone(team, "eve", tmp_path / "eve-other", "other")


def test_a_token_cannot_learn_a_memory_it_does_not_reach_exists(team: Team, tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{team.server.port}"
    for service in ("git-upload-pack", "git-receive-pack"):
        unreached = raw_get(f"{base}/notes.git/info/refs?service={service}", token_of("eve"))
        absent = raw_get(f"{base}/nobody.git/info/refs?service={service}", token_of("eve"))
        assert unreached[0] == 404
        assert unreached[1].replace(b"notes", b"X") == absent[1].replace(b"nobody", b"X")
    done = git("clone", "-q", team.url("eve"), str(tmp_path / "eve"), check=False)
    assert done.returncode != 0 and "not found" in done.stderr.lower()
    # Without a token every name gets the same 401, existing or not.
    assert raw_get(f"{base}/notes.git/info/refs?service=git-upload-pack", None)[0] == 401
    assert raw_get(f"{base}/nobody.git/info/refs?service=git-upload-pack", None)[0] == 401


def test_a_read_token_cannot_push(team: Team, tmp_path: Path) -> None:
    before = team.head()
    work = clone(team, "bob", tmp_path / "bob")
    write(work, "bob.md", "from bob\n")
    commit_all(work, "bob writes")
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0 and "may only read" in done.stderr, done.stderr
    assert team.head() == before


def test_write_lands(team: Team, tmp_path: Path) -> None:
    work = clone(team, "alice", tmp_path / "alice")
    write(work, "alice.md", "from alice\n")
    pushed = commit_all(work, "alice writes")
    git("push", "-q", "origin", "main", cwd=work)
    assert team.head() == pushed
    assert team.root.mount("notes").sync.read("alice.md").text == "from alice\n"
    fsck_clean(team.root.mount_path("notes"))


@pytest.mark.parametrize("forge", ["author", "trailer"])
def test_a_client_cannot_claim_another_principal(team: Team, tmp_path: Path, forge: str) -> None:
    before = team.head()
    work = clone(team, "alice", tmp_path / "alice")
    write(work, "forged.md", "looks like bob's\n")
    git("add", "-A", cwd=work)
    if forge == "author":
        git("commit", "-q", "-m", "bob did it", cwd=work, env={"GIT_AUTHOR_NAME": "bob"})
    else:
        message = "edit forged.md\n\nGitmem-Op: write\nGitmem-Path: forged.md\nGitmem-Principal: bob"
        git("commit", "-q", "-m", message, cwd=work, env={"GIT_AUTHOR_NAME": "alice"})
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0, done.stderr
    assert "principal" in done.stderr and "'bob'" in done.stderr and "'alice'" in done.stderr, done.stderr
    assert team.head() == before
    pushed = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    assert git("cat-file", "-e", pushed, cwd=team.root.mount_path("notes"), check=False).returncode != 0


def test_propose_lands_only_on_its_proposal_branch(team: Team, tmp_path: Path) -> None:
    before = team.head()
    work = clone(team, "carol", tmp_path / "carol")
    write(work, "idea.md", "carol's idea\n")
    proposed = commit_all(work, "carol proposes")
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0 and "proposals/carol/" in done.stderr, done.stderr
    for theirs in ("alice/hers", "carol-idea", "carol"):
        refused = git("push", "origin", f"HEAD:proposals/{theirs}", cwd=work, check=False)
        assert refused.returncode != 0, refused.stderr
    git("push", "-q", "origin", "HEAD:proposals/carol/idea", cwd=work)
    mount = team.root.mount_path("notes")
    assert git("rev-parse", PROPOSALS + "carol/idea", cwd=mount).stdout.strip() == proposed
    assert team.head() == before
    fsck_clean(mount)


def test_review_gate_refuses_direct_pushes_to_main_but_an_admins(team: Team, tmp_path: Path) -> None:
    enable(team.root.mount("notes"))
    before = team.head()
    work = clone(team, "alice", tmp_path / "alice")
    write(work, "direct.md", "straight to main\n")
    commit_all(work, "alice, directly")
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0 and "review_gate" in done.stderr, done.stderr
    assert team.head() == before
    git("push", "-q", "origin", "HEAD:proposals/alice/direct", cwd=work)  # a writer may still propose
    admin = clone(team, "dave", tmp_path / "dave")
    write(admin, "admin.md", "the admin may\n")
    pushed = commit_all(admin, "dave, directly")
    git("push", "-q", "origin", "main", cwd=admin)
    assert team.head() == pushed


def test_token_files_hold_hashes_and_are_checked(tmp_path: Path) -> None:
    token = "gm_secret-value-of-some-length-000"
    toml = token_entry(token, "alice", ["notes", "team-*"], "propose")
    assert token not in toml and hash_token(token) in toml
    grant = parse_token_file(toml).grant(token)
    assert grant is not None and grant.principal == "alice" and grant.access == "propose"
    assert grant.reaches("team-x") and grant.reaches("notes") and not grant.reaches("other")
    as_json = json.dumps(
        {"tokens": [{"principal": "bob", "sha256": hash_token("t2"), "memories": ["*"], "access": "read"}]}
    )
    bob = parse_token_file(as_json, "tokens.json", "json").grant("t2")
    assert bob is not None and bob.access == "read" and not bob.allows("propose")
    plain = parse_token_file("# old style\nalpha\n\nbeta\n", "tokens", "plain")
    assert plain.grant("alpha") == FULL_ACCESS and plain.grant("beta") == FULL_ACCESS
    assert plain.grant("gamma") is None and plain.grant("") is None
    env = load_tokens(None, env={"GITMEM_TOKENS": "x1, x2"})
    assert isinstance(env, Tokens) and env.grant("x2") == FULL_ACCESS
    bad = [
        '[[token]]\nprincipal = "a"\ntoken = "clear"\nmemories = ["n"]\naccess = "read"\n',
        f'[[token]]\nprincipal = "a"\nsha256 = "{hash_token("z")}"\nmemories = ["n"]\naccess = "owner"\n',
        f'[[token]]\nprincipal = "a b\\n"\nsha256 = "{hash_token("z")}"\nmemories = ["n"]\n',
        '[[token]]\nprincipal = "a"\nsha256 = "abc"\nmemories = ["n"]\n',
        f'[[token]]\nprincipal = "a"\nsha256 = "{hash_token("z")}"\nmemories = []\n',
        "[[token]]\nprincipal = ",
    ]
    for text in bad:
        with pytest.raises(MemoryStoreError) as caught:
            parse_token_file(text, "tokens.toml", "toml")
        assert caught.value.code == "invalid_file" and "tokens.toml" in caught.value.message
    for text in ('{"tokens": "nope"}', '{"tokens": [], "admins": []}', "[" * 100_000):
        with pytest.raises(MemoryStoreError) as caught:
            parse_token_file(text, "tokens.json", "json")
        assert caught.value.code == "invalid_file" and "tokens.json" in caught.value.message


def rewrite_tokens(team: Team, people: dict[str, tuple[list[str], str]]) -> None:
    """What an admin does to the file: replace it (a new inode, as editors and ``mv`` do)."""
    text = "".join(token_entry(token_of(who), who, memories, access) for who, (memories, access) in people.items())  # type: ignore[arg-type]
    fresh = team.token_file.with_suffix(".new")
    fresh.write_text(text, encoding="utf-8")
    fresh.replace(team.token_file)


def test_an_edited_token_file_takes_effect_without_a_restart(team: Team, tmp_path: Path) -> None:
    clone(team, "bob", tmp_path / "bob-before")
    people = {**PEOPLE, "bob": (["other"], "read"), "frank": (["notes"], "read")}
    del people["eve"]
    rewrite_tokens(team, people)
    base = f"http://127.0.0.1:{team.server.port}"
    refs = "info/refs?service=git-upload-pack"
    assert raw_get(f"{base}/notes.git/{refs}", token_of("bob"))[0] == 404  # narrowed: notes is gone for bob
    assert raw_get(f"{base}/other.git/{refs}", token_of("bob"))[0] == 200
    assert raw_get(f"{base}/other.git/{refs}", token_of("eve"))[0] == 401  # revoked
    clone(team, "frank", tmp_path / "frank")  # added
    done = git("clone", "-q", team.url("eve", "other"), str(tmp_path / "eve"), check=False)
    assert done.returncode != 0


def test_a_token_file_edited_into_nonsense_grants_nothing_until_fixed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(token_entry(token_of("alice"), "alice", ["notes"], "write"), encoding="utf-8")
    tokens = load_tokens(path, env={"GITMEM_TOKENS": "tok-from-the-environment-0123456789"})
    assert tokens.grant(token_of("alice")) is not None
    path.write_text('[[token]]\nprincipal = "alice"\nsha256 = "not a hash"\n', encoding="utf-8")
    with caplog.at_level("ERROR", logger="gitmem.adapters.tokens"):
        assert tokens.grant(token_of("alice")) is None
        assert tokens.grant(token_of("alice")) is None
    assert len([r for r in caplog.records if "no longer reads" in r.getMessage()]) == 1  # said once, not per request
    assert tokens.grant("tok-from-the-environment-0123456789") == FULL_ACCESS  # $GITMEM_TOKENS is not in the file
    path.unlink()
    assert tokens.grant(token_of("alice")) is None
    path.write_text(token_entry(token_of("alice"), "alice", ["notes"], "read"), encoding="utf-8")
    grant = tokens.grant(token_of("alice"))
    assert grant is not None and grant.access == "read"
    assert tokens.principals() == ["alice"]


def test_a_token_file_that_is_bad_at_start_is_refused_at_start(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text("[[token]]\nprincipal = 3\n", encoding="utf-8")
    with pytest.raises(MemoryStoreError):
        load_tokens(path, env={})
    with pytest.raises(MemoryStoreError) as missing:
        load_tokens(tmp_path / "absent.toml", env={})
    assert missing.value.code == "unavailable"
