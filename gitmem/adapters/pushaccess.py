"""What a token may push: its access level, the review gate, and the principal its commits show.

:func:`push_policy` builds the check :class:`~gitmem.adapters.receive_pack.GuardedReceivePack`
runs on every ref update beside :mod:`gitmem.git.pushcheck`'s content rules; its
refusals reach the client the same way (``remote:`` lines with the rule, the ref
``[remote rejected]``), and a refused update leaves nothing in the mount.

- ``read``: no update lands (rule ``access``);
- ``propose``: only the principal's own proposal branches,
  ``refs/heads/proposals/<principal>/<topic>`` (rule ``access``; see
  :func:`gitmem.git.review.principal_owns`: no principal's folder holds another's),
  so a proposal is reviewed with ``gitmem review`` like an agent run's;
- ``write``: anything pushcheck allows, but not ``main`` (nor ``refs/for/main``,
  which merges into it) of a memory whose review gate is on (rule ``review_gate``):
  there ``main`` moves only by approval;
- ``admin``: anything pushcheck allows.

On a durable memory, a token below ``admin`` may not decide on a node through
``main`` either (rule ``access``): a push there (or to ``refs/for/main``) that adds
a node file in any status but ``candidate``, or changes or removes one that is not
a candidate (an activation, a retirement, an edit of a reviewed node), is refused,
as over ``/mcp``, where such a token proposes candidates and only an ``admin``
token activates or approves (:mod:`gitmem.adapters.mcp_served`). Its other files
land as on any memory. On a session memory, in the same way, such a push may not
remove an item: over ``/mcp`` a ``write`` token remembers (which may merge into an
item) and only an ``admin`` token's prune removes items.

And every new commit must show the token's principal as who made it, and every
identity trailer it carries (``Gitmem-Approved-By``, ...) must name that principal
too (rule ``principal``, see :mod:`gitmem.git.claims`, the identity gate).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from gitmem.adapters.tokens import Grant
from gitmem.git.claims import RULE_PRINCIPAL, foreign_claims
from gitmem.git.mountconfig import kind_from_repo
from gitmem.git.pushcheck import RefUpdate, Refusal
from gitmem.git.queue import QUEUE_MAIN
from gitmem.git.refs import MAIN
from gitmem.git.repo import GitRepo
from gitmem.git.review import gate_enabled, principal_owns
from gitmem.provenance import T_PRINCIPAL

PushPolicy = Callable[[Sequence[RefUpdate], Sequence[str]], dict[str, list[Refusal]]]
"""Refusals per ref for updates whose objects are in the mount plus the given object folders."""


def push_policy(path: str, memory: str, grant: Grant) -> PushPolicy:
    def check(updates: Sequence[RefUpdate], object_dirs: Sequence[str]) -> dict[str, list[Refusal]]:
        gated: bool | None = None
        kind: str | None = None
        out: dict[str, list[Refusal]] = {}
        for update in updates:
            refusals: list[Refusal] = []
            ref = update.ref
            lands_on_main = ref in (MAIN, QUEUE_MAIN)
            if grant.access == "read":
                refusals.append(Refusal(ref, "access", f"this token may only read memory {memory!r}"))
            elif grant.access == "propose" and (grant.principal is None or not principal_owns(grant.principal, ref)):
                branch = f"proposals/{grant.principal}/<topic>"
                refusals.append(
                    Refusal(
                        ref,
                        "access",
                        f"a propose token pushes to {branch} (git push origin HEAD:{branch}); "
                        "main moves when a reviewer approves it",
                    )
                )
            elif grant.access == "write" and lands_on_main:
                if gated is None:
                    gated = gate_enabled(GitRepo(path))
                if gated:
                    branch = f"proposals/{grant.principal}/<topic>" if grant.principal else "proposals/<topic>"
                    refusals.append(
                        Refusal(
                            ref,
                            "review_gate",
                            f"memory {memory!r} is review-gated: only an admin token moves main; "
                            f"push to {branch} and have it approved",
                        )
                    )
            if not refusals and lands_on_main and grant.access != "admin":
                if kind is None:
                    kind = kind_from_repo(GitRepo(path))
                if kind == "durable":
                    refusals += _node_decisions(path, object_dirs, update, memory)
                elif kind == "session":
                    refusals += _item_removals(path, object_dirs, update, memory)
            if not refusals and grant.principal is not None and not update.deleting:
                for claim in foreign_claims(path, object_dirs, update.new, grant.principal)[:5]:
                    if claim.key == T_PRINCIPAL:
                        what = (
                            f"shows {claim.shown!r} as who made it, but this token is {grant.principal!r}: make it "
                            f"with author name {grant.principal!r} (git -c user.name={grant.principal} commit) "
                            f"and no other {T_PRINCIPAL}"
                        )
                    else:
                        what = (
                            f"names {claim.shown!r} in {claim.key}, but this token is {grant.principal!r}: a pushed "
                            f"commit may name only its pusher (remove the {claim.key} trailer)"
                        )
                    refusals.append(
                        Refusal(ref, RULE_PRINCIPAL, f"commit {claim.commit[:12]} {what}", commit=claim.commit)
                    )
            out[ref] = refusals
        return out

    return check


_NODE_FILE = re.compile(r"[^/]+/nodes/[^/]+/[^/]+\.md")
"""Where a durable memory keeps its nodes: ``<namespace folder>/nodes/<2 hex>/<node>.md``."""


def _node_decisions(path: str, object_dirs: Sequence[str], update: RefUpdate, memory: str) -> list[Refusal]:
    """The reviewer's decisions ``update`` would bring to ``main`` of durable memory ``memory``.

    Each node file it changes there (:func:`gitmem.git.landing.landing_changes`)
    must be a candidate on both sides, or absent on one. A node file that does not
    read as a node is not a candidate.
    """
    from gitmem.durable.nodefile import decode_node
    from gitmem.git.landing import landing_changes

    out: list[Refusal] = []
    for name, *sides in landing_changes(path, object_dirs, update, _NODE_FILE):
        for data in sides:
            if data is None:
                continue
            try:
                status: str | None = decode_node(data.decode("utf-8"), name).status
            except Exception:  # what does not read as a node is not a candidate
                status = None
            if status != "candidate":
                out.append(
                    Refusal(
                        update.ref,
                        "access",
                        f"the push changes {name} of durable memory {memory!r}, a node that is "
                        f"{status or 'not readable'} (not a candidate) on one side: this token proposes "
                        "candidates; activating, retiring or changing a reviewed node is an admin's decision "
                        "(durable_activate, durable_approve, gitmem durable approve)",
                        path=name,
                    )
                )
                break
        if len(out) >= 5:
            break
    return out


_ITEM_FILE = re.compile(r"items/[^/]+/[^/]+\.json")
"""Where a session memory keeps its items (:func:`gitmem.session.items.is_item_path`)."""


def _item_removals(path: str, object_dirs: Sequence[str], update: RefUpdate, memory: str) -> list[Refusal]:
    """The items of session memory ``memory`` that ``update`` would remove from ``main``: a prune's work."""
    from gitmem.git.landing import landing_changes

    gone = [name for name, before, after in landing_changes(path, object_dirs, update, _ITEM_FILE) if after is None]
    return [
        Refusal(
            update.ref,
            "access",
            f"the push removes {name} of session memory {memory!r}: this token remembers; removing items is "
            "an admin's prune (memory_session_prune, gitmem session prune)",
            path=name,
        )
        for name in gone[:5]
    ]
