"""The identity gate, as a class: every identity trailer x every way a commit arrives.

One ``gitmem serve`` with a token file: ``alice`` writes ``notes``, ``carol`` and
``alice-x`` may only propose, ``dave`` is its admin. Every trailer of
:data:`~gitmem.provenance.IDENTITY_TRAILERS` is pushed forged (naming someone
else), duplicated, without the space after the colon and with the key's case
changed, over each way in (a push of ``main``, a push to ``refs/for/main`` that the
server merges, a push to the pusher's proposal folder); each must be refused with
its rule while the memory keeps its head and passes ``git fsck --strict``, and the
same trailer naming the pusher lands, with gitmem reading the name git shows.
The approval path and a store write are held to the same rule.
"""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp, load_tokens
from gitmem.adapters.tokens import token_entry
from gitmem.errors import MemoryStoreError
from gitmem.git.review import PROPOSALS, principal_owns
from gitmem.model import Edit, Origin
from gitmem.provenance import IDENTITY_TRAILERS, T_APPROVED_BY, T_PRINCIPAL, parse_message
from gitmem.review import MergeRefused, approve, enable, proposals
from tests.serve.support import fsck_clean, git, has_object, seed, write

PEOPLE = {
    "alice": (["notes"], "write"),
    "carol": (["notes"], "propose"),
    "alice-x": (["notes"], "propose"),
    "dave": (["notes"], "admin"),
}


def token_of(who: str) -> str:
    return f"tok-{who}-0123456789abcdef0123456789"


class Team:
    def __init__(self, root: Root, server: GitHttpServer) -> None:
        self.root = root
        self.server = server
        self.mount = root.mount_path("notes")

    def url(self, who: str) -> str:
        return f"http://{who}:{token_of(who)}@127.0.0.1:{self.server.port}/notes.git"

    def head(self) -> str:
        return self.root.mount("notes").sync.head()

    def ref(self, name: str) -> str | None:
        done = git("rev-parse", "--verify", "-q", name, cwd=self.mount, check=False)
        return done.stdout.strip() or None


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    base = tmp_path_factory.mktemp("identity")
    root = Root(base / "root")
    seed(root.mount("notes", create=True))
    token_file = base / "tokens.toml"
    token_file.write_text(
        "".join(token_entry(token_of(w), w, m, a) for w, (m, a) in PEOPLE.items()),  # type: ignore[arg-type]
        encoding="utf-8",
    )
    server = GitHttpServer(GitHttpApp(root, tokens=load_tokens(token_file, env={})), "127.0.0.1", 0).start()
    try:
        yield Team(root, server)
    finally:
        server.stop()


_n = itertools.count()


def clone(team: Team, who: str, where: Path) -> Path:
    git("clone", "-q", team.url(who), str(where))
    git("config", "user.name", who, cwd=where)
    git("config", "user.email", f"{who}@example.com", cwd=where)
    return where


def commit(work: Path, who: str, trailers: str) -> str:
    """A commit on top of the server's main, authored by ``who``, with exactly this trailer block."""
    git("fetch", "-q", "origin", cwd=work)
    git("reset", "-q", "--hard", "origin/main", cwd=work)
    path = f"who/{next(_n)}.md"
    write(work, path, f"{path}\n")
    git("add", "-A", cwd=work)
    message = f"edit {path}\n\nGitmem-Op: edit\nGitmem-Path: {path}\n{trailers}"
    env = {"GIT_AUTHOR_NAME": who, "GIT_COMMITTER_NAME": who}
    git("commit", "-q", "--cleanup=verbatim", "-m", message, cwd=work, env=env)
    return git("rev-parse", "HEAD", cwd=work).stdout.strip()


def git_names(mount: Path, oid: str, key: str) -> list[str]:
    """What the documented audit shows: ``git log --format=%(trailers:key=K,valueonly)``."""
    done = git("log", "-1", f"--format=%(trailers:key={key},valueonly,unfold)", oid, cwd=mount)
    return [line for line in done.stdout.splitlines() if line]


def variants(key: str, pusher: str, other: str) -> list[tuple[str, str, str]]:
    """``(name, trailer lines, rule)`` of every refused way to write ``key``."""
    return [
        ("forged", f"{key}: {other}\n", "principal"),
        ("duplicated", f"{key}: {pusher}\n{key}: {pusher}\n", "identity"),
        # both rules apply; a push to refs/for/main reports the pusher's first, the merge would find the other
        ("duplicated-forged", f"{key}: {pusher}\n{key}: {other}\n", "identity|principal"),
        ("no-space", f"{key}:{pusher}\n", "identity"),
        ("case-variant", f"{key.lower()}: {pusher}\n", "identity"),
        ("spaced-key", f"{key} : {pusher}\n", "identity"),
        ("continued", f"{key}: {pusher}\n {other}\n", "identity|principal"),
    ]


# (pusher, refspec target, the ref that must not move)
WAYS = {
    "main": ("alice", "main", "refs/heads/main"),
    "for-main": ("alice", "refs/for/main", "refs/heads/main"),
    "proposal": ("carol", "refs/heads/proposals/carol/idea", "refs/heads/proposals/carol/idea"),
}


@pytest.mark.parametrize("way", sorted(WAYS))
def test_every_identity_trailer_is_refused_unless_it_names_the_pusher(team: Team, tmp_path: Path, way: str) -> None:
    pusher, target, watched = WAYS[way]
    work = clone(team, pusher, tmp_path / pusher)
    for key in IDENTITY_TRAILERS:
        for name, trailers, rule in variants(key, pusher, "bob"):
            before, main = team.ref(watched), team.head()
            pushed = commit(work, pusher, trailers)
            done = git("push", "origin", f"+HEAD:{target}", cwd=work, check=False)
            assert done.returncode != 0, (key, name, done.stderr)
            assert any(r in done.stderr for r in rule.split("|")), (key, name, done.stderr)
            assert "[remote rejected]" in done.stderr, (key, name, done.stderr)
            assert team.ref(watched) == before and team.head() == main, (key, name)
            assert not has_object(team.mount, pushed), (key, name, "a refused commit stayed in the mount")
        # The same trailer naming the pusher lands, and gitmem reads the name git shows.
        pushed = commit(work, pusher, f"{key}: {pusher}\n")
        git("push", "-q", "origin", f"+HEAD:{target}", cwd=work)
        landed = team.ref(watched)
        assert landed is not None and (landed == pushed or git_parent(team.mount, landed, pushed)), key
        info = parse_message(git("log", "-1", "--format=%B", pushed, cwd=team.mount).stdout)
        assert git_names(team.mount, pushed, key) == [pusher]
        assert [v for k, v in info.trailers if k == key] == [pusher]
        shown = git_names(team.mount, pushed, T_PRINCIPAL) or [pusher]  # no trailer: the author
        assert [info.origin.principal_id or pusher] == shown
    fsck_clean(team.mount)


def git_parent(mount: Path, merge: str, parent: str) -> bool:
    """Whether ``merge`` is a merge commit made by the server with ``parent`` as a parent (refs/for/main)."""
    parents = git("log", "-1", "--format=%P", merge, cwd=mount).stdout.split()
    return parent in parents


def test_a_commit_already_in_the_memory_is_not_the_pushers_claim(team: Team, tmp_path: Path) -> None:
    """Carol's proposal commit (naming carol) can be merged into main by dave's push: it is not dave's claim."""
    carol = clone(team, "carol", tmp_path / "carol")
    proposed = commit(carol, "carol", f"{T_PRINCIPAL}: carol\n")
    git("push", "-q", "origin", "HEAD:proposals/carol/reviewed", cwd=carol)
    dave = clone(team, "dave", tmp_path / "dave")
    git("fetch", "-q", "origin", "proposals/carol/reviewed", cwd=dave)
    git("reset", "-q", "--hard", "FETCH_HEAD", cwd=dave)
    git("push", "-q", "origin", "HEAD:main", cwd=dave)
    assert team.head() == proposed
    assert team.root.mount("notes").sync.log(limit=1)[0].origin.principal_id == "carol"
    fsck_clean(team.mount)


def test_a_principal_owns_only_its_own_proposal_folder(team: Team, tmp_path: Path) -> None:
    """``alice-x`` and ``alice`` (propose tokens of names that share a prefix) cannot touch each other's proposals."""
    mine = clone(team, "alice-x", tmp_path / "alice-x")
    theirs_commit = commit(mine, "alice-x", "")
    git("push", "-q", "origin", "HEAD:proposals/alice-x/topic", cwd=mine)
    # A proposal named before the per-principal folders, made locally: still listed, owned by no token.
    git("update-ref", PROPOSALS + "alice-x-legacy", theirs_commit, cwd=team.mount)
    carol = clone(team, "carol", tmp_path / "carol")
    attempts = [
        ("HEAD:proposals/alice-x/topic", "--force"),
        (":proposals/alice-x/topic", None),
        ("HEAD:proposals/alice-x-legacy", "--force"),
        (":proposals/alice-x-legacy", None),
        ("HEAD:proposals/alice-x/new", None),
        ("HEAD:proposals/alice-x-new", None),
    ]
    commit(carol, "carol", "")
    for spec, flag in attempts:
        before = {r: team.ref(PROPOSALS + r) for r in ("alice-x/topic", "alice-x-legacy", "alice-x/new", "alice-x-new")}
        done = git("push", *([flag] if flag else []), "origin", spec, cwd=carol, check=False)
        assert done.returncode != 0 and "access" in done.stderr, (spec, done.stderr)
        after = {r: team.ref(PROPOSALS + r) for r in before}
        assert after == before, spec
    # alice-x cannot reach into another principal's folder either.
    done = git("push", "origin", "HEAD:proposals/carol/mine-now", cwd=mine, check=False)
    assert done.returncode != 0 and "access" in done.stderr, done.stderr
    runs = {p.run for p in proposals(team.root.mount("notes"))}
    assert {"alice-x/topic", "alice-x-legacy"} <= runs
    fsck_clean(team.mount)


def test_no_two_principals_proposal_folders_overlap() -> None:
    names = ["alice", "alice-x", "alice.x", "alice@x", "alice+x", "alice=x", "alice_x", "a", "a-", "alice-x-y"]
    topics = ["t", "x", "x-t", "x/t", "-t"]
    refs = {f"{PROPOSALS}{n}{sep}{t}" for n in names for t in topics for sep in ("/", "-", "")}
    for ref in refs:
        owners = [n for n in names if principal_owns(n, ref)]
        assert len(owners) <= 1, (ref, owners)
        if owners:
            assert ref.startswith(f"{PROPOSALS}{owners[0]}/")


def test_an_approval_names_the_approver_and_refuses_ambiguous_commits(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    store = root.mount("m", create=True)
    seed(store)
    enable(store)
    sync = store.sync
    sync.for_run("r1").write("a.md", "a\n", expected=None, origin=Origin(principal_id="agent"))
    ref = PROPOSALS + "r1"
    path = root.mount_path("m")
    tip = git("rev-parse", ref, cwd=path).stdout.strip()
    for key in IDENTITY_TRAILERS:
        for name, trailers, _rule in variants(key, "agent", "bob"):
            if name == "forged":
                continue  # already in the memory: not a claim of whoever approves
            # A commit put on the proposal by plain git inside the mount (no gate ran for it).
            tree = git("rev-parse", f"{tip}^{{tree}}", cwd=path).stdout.strip()
            message = f"crafted\n\n{trailers}"
            crafted = subprocess.run(
                ["git", "commit-tree", tree, "-p", tip, "-F", "-"],
                cwd=path,
                input=message,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            git("update-ref", ref, crafted, tip, cwd=path)
            main = sync.head()
            with pytest.raises(MergeRefused) as refused:
                approve(store, "r1", approver="dave")
            assert refused.value.code == "forbidden" and "identity" in refused.value.message, (key, name)
            assert sync.head() == main and git("rev-parse", ref, cwd=path).stdout.strip() == crafted
            git("update-ref", ref, tip, crafted, cwd=path)
    # The approval's merge commit names the approver, whatever principal the caller's origin carries.
    result = approve(store, "r1", approver="dave", origin=Origin(run_id="cli", principal_id="mallory"))
    assert git_names(path, result.after, T_APPROVED_BY) == ["dave"]
    assert git_names(path, result.after, T_PRINCIPAL) == ["dave"]
    entry = sync.log(limit=1)[0]
    assert entry.origin.principal_id == "dave"
    fsck_clean(path)


def test_a_store_write_names_only_its_own_principal(tmp_path: Path) -> None:
    store = Root(tmp_path / "root").mount("m", create=True)
    seed(store)
    sync = store.sync
    head = sync.head()
    alice = Origin(principal_id="alice")
    for trailers in (
        ((T_APPROVED_BY, "carol"),),
        (("Gitmem-approved-by", "alice"),),
        ((T_APPROVED_BY, "alice"), (T_APPROVED_BY, "alice")),
    ):
        with pytest.raises(MemoryStoreError) as caught:
            sync.apply([Edit("a.md", "a\n")], origin=alice, trailers=trailers)
        assert caught.value.code == "forbidden", trailers
        assert sync.head() == head
    with pytest.raises(MemoryStoreError):
        sync.apply([Edit("a.md", "a\n")], origin=Origin(), trailers=((T_APPROVED_BY, "alice"),))
    sync.apply([Edit("a.md", "a\n")], origin=alice, trailers=((T_APPROVED_BY, "alice"),))
    assert git_names(Path(sync.path), sync.head(), T_APPROVED_BY) == ["alice"]
    fsck_clean(sync.path)


def test_a_history_import_refuses_a_commit_whose_names_are_ambiguous(tmp_path: Path) -> None:
    """``gitmem import --history`` (its own way in) lists the commit with rule identity and keeps what came before."""
    from gitmem.exchange import import_history

    source = tmp_path / "src"
    source.mkdir()
    git("init", "-q", "-b", "main", str(source))
    env = {"GIT_AUTHOR_NAME": "ann", "GIT_COMMITTER_NAME": "ann"}
    write(source, "a.md", "alpha\n")
    git("add", "-A", cwd=source)
    git("commit", "-q", "-m", "alpha", cwd=source, env=env)
    good = git("rev-parse", "HEAD", cwd=source).stdout.strip()
    for key in IDENTITY_TRAILERS:
        write(source, f"{key}.md", "beta\n")
        git("add", "-A", cwd=source)
        message = f"beta\n\n{key}: ann\n{key.upper()}: bob\n"
        git("commit", "-q", "--cleanup=verbatim", "-m", message, cwd=source, env=env)
    store = Root(tmp_path / "root").mount("m", create=True).sync
    report = import_history(store, str(source))
    assert store.head() == good
    assert "identity" in {r.rule for r in report.refused}
    fsck_clean(store.path)


def test_the_in_memory_twin_refuses_the_same_identity_trailers() -> None:
    from gitmem.memstore import InMemoryFileStore

    twin = InMemoryFileStore()
    with pytest.raises(MemoryStoreError) as caught:
        twin.apply([Edit("a.md", "a\n")], origin=Origin(principal_id="alice"), trailers=((T_APPROVED_BY, "carol"),))
    assert caught.value.code == "forbidden"
    twin.apply([Edit("a.md", "a\n")], origin=Origin(principal_id="alice"), trailers=((T_APPROVED_BY, "alice"),))
