"""``gitmem durable``: durable memory (namespaced nodes, change sets, activation, recall).

Each command opens the durable mount NAME and makes one call on
:class:`gitmem.durable.DurableRepository`. A namespace is given as
``-n TENANT PRINCIPAL SCOPE`` (three values, each any non-blank text).
"""

from __future__ import annotations

import hashlib
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from gitmem.adapters.cli.app import (
    State,
    acting_principal,
    cli,
    common_options,
    emit,
    origin_options,
    pass_state,
    say,
    short,
    usage_error,
)

if TYPE_CHECKING:  # the durable layer (and the store under it) loads when a command opens a memory
    from gitmem.durable import ChangeResult, DurableRepository, Namespace

#: The evidence kinds that may activate a node (``gitmem.durable.node.AUTHORISING_EVIDENCE``;
#: a test keeps the two equal). Spelled out so ``--help`` need not load the durable layer.
ACTIVATING_EVIDENCE = ("manual", "verification")


def _repo(state: State, name: str, *, create: bool = False) -> DurableRepository:
    from gitmem.durable import DurableRepository

    return DurableRepository.open(state.root.path, name, create=create)


def _ns(parts: tuple[str, str, str]) -> Namespace:
    from gitmem.durable import Namespace

    return Namespace(*parts)


def format_time(moment: datetime) -> str:
    from gitmem.durable.node import format_time as durable_time

    return durable_time(moment)


def namespace_option(f: Any) -> Any:
    return click.option(
        "-n",
        "--namespace",
        "namespace",
        nargs=3,
        required=True,
        metavar="TENANT PRINCIPAL SCOPE",
        help="The namespace: tenant, principal and scope (three values).",
    )(f)


def result_json(result: ChangeResult) -> dict[str, Any]:
    return {
        "idempotency_key": result.idempotency_key,
        "digest": result.digest,
        "occurred_at": result.occurred_at,
        "commit": result.commit,
        "replayed": result.replayed,
        "nodes": list(result.refs),
    }


def _print_result(result: ChangeResult) -> None:
    what = "replayed (already applied)" if result.replayed else "applied"
    say(f"{what} {result.idempotency_key} in commit {short(result.commit)}")
    for ref in result.refs:
        say(f"  {ref}")


@cli.group()
def durable() -> None:
    """Durable memory: namespaced nodes that reach a model only once activated."""


#: The most characters ``durable apply`` reads of a change set (128 operations of the largest nodes fit).
CHANGE_SET_LIMIT = 64 * 1024 * 1024


@durable.command("apply")
@click.argument("name")
@click.argument("change_file", metavar="[FILE]", required=False, type=click.File("r", encoding="utf-8"))
@click.option("--create", is_flag=True, help="Create the durable memory NAME first if it does not exist.")
@origin_options
@common_options
@pass_state
def durable_apply(state: State, name: str, change_file: Any, create: bool) -> None:
    """Apply a change set (JSON from FILE, or stdin when FILE is '-' or left out) as one commit."""
    from gitmem.adapters.cli.output import read_stdin
    from gitmem.errors import MemoryStoreError
    from gitmem.localfile import parse_json

    try:
        # "-" or none: stdin, read by the one stdin reader, its bound checked before the bytes are
        # decoded (a character cut at the bound is not "not UTF-8"). A named file is read bounded
        # too (a device named as the file must not fill memory).
        if change_file is None or change_file is sys.stdin:
            text = read_stdin(limit=CHANGE_SET_LIMIT, what="the change set")
        else:
            text = change_file.read(CHANGE_SET_LIMIT + 1)
            if len(text) > CHANGE_SET_LIMIT:
                raise usage_error(f"the change set is longer than {CHANGE_SET_LIMIT} characters")
    except UnicodeDecodeError as exc:
        raise usage_error(f"the change set is not UTF-8 text (byte {exc.start})") from None
    except MemoryStoreError as exc:
        if exc.code == "unavailable":  # no stdin to read: its own refusal
            raise
        raise usage_error(exc.message) from None
    try:
        # Parsed by the one JSON parser, whose nesting is bounded: json.load recursed once per
        # bracket into a RecursionError.
        data = parse_json(text, what="the change set")
    except MemoryStoreError as exc:
        raise usage_error(f"the change set is not valid JSON: {exc.message}") from None
    result = _repo(state, name, create=create).apply(data, origin=state.origin)
    emit(result_json(result), lambda: _print_result(result))


@durable.command("show")
@click.argument("name")
@click.argument("node_id")
@namespace_option
@common_options
@pass_state
def durable_show(state: State, name: str, node_id: str, namespace: tuple[str, str, str]) -> None:
    """Show the current revision of node NODE_ID."""
    node = _repo(state, name).node(_ns(namespace), node_id)

    def text() -> None:
        say(f"{node.ref}  {node.kind}  {node.status}  ({node.revision_kind} {format_time(node.updated_at)})")
        say(f"confidence {node.confidence}  importance {node.importance}")
        for e in node.evidence:
            say(f"evidence  {e.kind}  {e.uri}")
        for r in node.relations:
            say(f"relation  {r.kind}  {r.target}")
        for k, v in node.labels:
            say(f"label     {k} = {v}")
        say("")
        say(node.content, multiline=True)

    emit({"node": node.as_dict()}, text)


@durable.command("log")
@click.argument("name")
@click.argument("node_id")
@namespace_option
@click.option(
    "--limit", type=click.IntRange(1, 1000), default=100, show_default=True, help="At most this many revisions."
)
@common_options
@pass_state
def durable_log(state: State, name: str, node_id: str, namespace: tuple[str, str, str], limit: int) -> None:
    """List the revisions of node NODE_ID, newest first, with who made each and why."""
    revisions = _repo(state, name).history(_ns(namespace), node_id, limit=limit)

    def text() -> None:
        for r in revisions:
            who = r.principal or "-"
            say(
                f"{short(r.commit)}  {r.node.ref}  {r.node.status:<10}  {r.node.revision_kind:<16}  {who}  {r.time.isoformat()}"
            )

    payload = [
        {"commit": r.commit, "time": r.time.isoformat(), "principal": r.principal, "node": r.node.as_dict()}
        for r in revisions
    ]
    emit({"revisions": payload}, text)


@durable.command("recall")
@click.argument("name")
@click.argument("query")
@namespace_option
@click.option(
    "--limit", type=click.IntRange(1, 100), default=5, show_default=True, help="At most this many nodes (1-100)."
)
@click.option(
    "--min-score",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Minimum share of query tokens a node must hold.",
)
@click.option(
    "--related",
    type=click.IntRange(0, 100),
    default=0,
    show_default=True,
    help="One-hop related_to reads after the hits (0-100).",
)
@common_options
@pass_state
def durable_recall(
    state: State, name: str, query: str, namespace: tuple[str, str, str], limit: int, min_score: float, related: int
) -> None:
    """Recall the active nodes of a namespace that match QUERY (candidates never appear)."""
    from gitmem.durable import RecallPolicy

    policy = RecallPolicy(max_results=limit, min_score=min_score, related_lookups=related)
    answer = _repo(state, name).recall(_ns(namespace), query, policy)

    def text() -> None:
        if not answer.hits:
            say("no active node matches")
        for h in answer.hits:
            say(f"{h.score:.2f}  {h.node.ref}  [{h.via}]  {h.node.content.splitlines()[0][:100]}")

    payload = {
        "profile": answer.profile,
        "hits": [{"score": h.score, "via": h.via, "node": h.node.as_dict()} for h in answer.hits],
    }
    emit(payload, text)


@durable.command("health")
@click.argument("name")
@namespace_option
@common_options
@pass_state
def durable_health(state: State, name: str, namespace: tuple[str, str, str]) -> None:
    """Semantic index health of a namespace: index revision vs head, lag, last refresh, failures."""
    health = _repo(state, name).semantic_health(_ns(namespace))

    def text() -> None:
        say(f"state           {health.state}")
        if health.problem:
            say(f"problem         {health.problem}")
        say(f"head            {health.head}")
        say(f"indexed commit  {health.indexed_commit or '-'}")
        say(f"index           {health.index} ({health.consistency}), revision {health.index_revision}")
        say(f"vectors         {health.vectors}")
        say(f"lag             {'unknown' if health.lag is None else f'{health.lag} node files'}")
        when = (
            "-" if health.last_refresh_at is None else format_time(datetime.fromtimestamp(health.last_refresh_at, UTC))
        )
        say(f"last refresh    {when} {health.last_outcome or ''}".rstrip())
        if health.last_error:
            say(f"last error      {health.last_error}")
        say(f"failures        {health.failures} since the last success, {health.refreshes} refreshes")

    emit(health.as_dict(), text)


@durable.command("activate")
@click.argument("name")
@click.argument("node_id")
@namespace_option
@click.option(
    "--revision", "expected", type=click.IntRange(1), required=True, help="The candidate revision you reviewed."
)
@click.option(
    "--evidence", "uri", metavar="URI", help="Where the decision is recorded (default: this command, by you, now)."
)
@click.option(
    "--kind",
    type=click.Choice(ACTIVATING_EVIDENCE),
    default="manual",
    show_default=True,
    help="manual (a person decided) or verification (a check passed).",
)
@click.option("--digest", help="Digest of the evidence (default: sha256 of node, revision and URI).")
@click.option("--key", help="Idempotency key (default: activate/NODE@REVISION).")
@origin_options
@common_options
@pass_state
def durable_activate(
    state: State,
    name: str,
    node_id: str,
    namespace: tuple[str, str, str],
    expected: int,
    uri: str | None,
    kind: str,
    digest: str | None,
    key: str | None,
) -> None:
    """Activate candidate NODE_ID at --revision on new manual or verification evidence."""
    who = acting_principal(state, "activates")
    now = datetime.now(UTC)
    uri = uri or f"gitmem-cli:activate/{who}/{format_time(now)}"
    digest = digest or "sha256:" + hashlib.sha256(f"{node_id}@{expected} {uri}".encode()).hexdigest()
    from gitmem.durable import Evidence

    evidence = Evidence(uri, digest, kind, now)  # type: ignore[arg-type]
    result = _repo(state, name).activate(
        _ns(namespace), node_id, expected, [evidence], idempotency_key=key, origin=state.origin
    )
    emit(result_json(result), lambda: _print_result(result))


@durable.command("approve")
@click.argument("name")
@click.argument("run_id", metavar="RUN")  # not "run": that is --run's name, and click would mix the two
@origin_options
@common_options
@pass_state
def durable_approve(state: State, name: str, run_id: str) -> None:
    """Approve run RUN's proposal and activate the candidates it brought (manual evidence: the approval)."""
    approver = acting_principal(state, "approves")
    from gitmem.durable import approve_candidates

    outcome = approve_candidates(_repo(state, name), run_id, approver=approver)

    def text() -> None:
        say(f"approved proposal {run_id} in commit {short(outcome.approval)}")
        for result in outcome.activations:
            _print_result(result)
        if not outcome.activations:
            say("no candidates to activate")

    emit({"approval": outcome.approval, "activations": [result_json(r) for r in outcome.activations]}, text)
