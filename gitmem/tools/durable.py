"""Durable memory as registry tools: ``durable_recall``, ``durable_propose`` and ``durable_log``;
``durable_activate`` and ``durable_approve`` for a reviewer.

The rules live in :mod:`gitmem.durable.agent`; this module gives them the one
tool shape (:mod:`gitmem.tools.registry`), so the registry checks every call
against its model (:mod:`gitmem.tools.kind_schemas`) before the binding runs it.
The reviewer's two tools are offered only with ``allow_activate`` (``gitmem serve``
gives it to ``admin`` tokens): an agent's tools never activate anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from gitmem.durable import agent as rules
from gitmem.durable.binding import DurableBinding
from gitmem.model import Origin
from gitmem.tools.catalog import REVIEW
from gitmem.tools.kind_schemas import ActivateArgs, ApproveArgs, DurableRecallArgs, NodeLogArgs, ProposeArgs
from gitmem.tools.registry import KindTools, Payload, chosen

PERMISSION_PREFIX: Final = "memory.durable."

DESCRIPTIONS: Final[dict[str, str]] = {
    "recall": (
        "Recall the durable facts, preferences and procedures that were reviewed and activated for this "
        "workspace and match a query. Candidates and retired memories never appear."
    ),
    "propose": (
        "Propose up to 8 durable memories (facts, preferences, decisions, workflows, failure lessons) that would "
        "change a future answer or action. They are stored as candidates for a person to review; nothing you "
        "propose is used until it is activated."
    ),
    "log": (
        "The revisions of one durable memory, newest first: status, content, evidence, and who made each "
        "change (who activated it, too)."
    ),
    "activate": (
        "Activate one reviewed candidate at the revision you reviewed (yours, or a colleague's by principal), "
        "recorded as your manual decision. From then on it is recalled."
    ),
    "approve": (
        "Approve a run's proposal (such as alice/mcp): merge it into main and activate the candidates it brought."
    ),
}
MODELS: Final[dict[str, type[Any]]] = {
    "recall": DurableRecallArgs,
    "propose": ProposeArgs,
    "log": NodeLogArgs,
    "activate": ActivateArgs,
    "approve": ApproveArgs,
}


class DurableTools(KindTools):
    """The durable tools over one bound namespace."""

    kind = "durable"
    prefix = "durable_"
    permission_prefix = PERMISSION_PREFIX
    descriptions = DESCRIPTIONS
    read = frozenset({"recall", "log"})
    models = MODELS

    def __init__(
        self, binding: DurableBinding, *, tools: Iterable[str] | None = None, allow_activate: bool = False
    ) -> None:
        self.binding = binding
        picked = chosen(tools, DESCRIPTIONS, "durable_", PERMISSION_PREFIX)
        self.tools = picked if allow_activate else picked - REVIEW

    def _recall(self, args: DurableRecallArgs, origin: Origin) -> Payload:
        return rules.recall(self.binding, args.query, args.limit)

    def _propose(self, args: ProposeArgs, origin: Origin) -> Payload:
        return rules.propose(self.binding, [item.model_dump() for item in args.items], origin)

    def _log(self, args: NodeLogArgs, origin: Origin) -> Payload:
        return rules.node_log(self.binding, args.id, args.limit)

    def _activate(self, args: ActivateArgs, origin: Origin) -> Payload:
        return rules.activate(self.binding, args.id, args.revision, origin, args.principal)

    def _approve(self, args: ApproveArgs, origin: Origin) -> Payload:
        return rules.approve(self.binding, args.run, origin)
