"""Durable memory: namespaced nodes that reach a model only after someone activated them.

A durable mount holds, per namespace ``(tenant, principal, scope)``, one file per
node (its current revision; earlier revisions are the file's git history).
Change sets of 1-128 operations are staged against the nodes they read with the
transition and graph rules of :mod:`gitmem.durable.rules` and land as one
commit. Recall reads active nodes only; activation needs new ``manual`` or
``verification`` evidence, never a model's confidence.

- :mod:`~gitmem.durable.namespace`, :mod:`~gitmem.durable.node`,
  :mod:`~gitmem.durable.changes`, :mod:`~gitmem.durable.rules`: pure values and rules;
- :mod:`~gitmem.durable.nodefile`: where nodes live in the mount and their text;
- :mod:`~gitmem.durable.repository`: change sets as single commits, reads, history;
- :mod:`~gitmem.durable.recall`, :mod:`~gitmem.durable.ledger`: active-only recall,
  admissions and uses (kept off ``main``);
- :mod:`~gitmem.durable.binding`, :mod:`~gitmem.durable.approval`,
  :mod:`~gitmem.durable.agent`: a session's binding, the review path to
  activation, and what an agent may do (the rules of its tools).
"""

from typing import TYPE_CHECKING

from gitmem.lazyexports import exports as _exports

if TYPE_CHECKING:
    from gitmem.durable.approval import Approval, approve_candidates
    from gitmem.durable.binding import DurableBinding
    from gitmem.durable.changes import (
        Activate,
        AddRelation,
        ChangeSet,
        Corroborate,
        Create,
        NodeDraft,
        Operation,
        RemoveRelation,
        Revise,
        SetStatus,
        parse_change_set,
    )
    from gitmem.durable.ledger import AccessEvent, Ledger, Usage
    from gitmem.durable.namespace import Namespace
    from gitmem.durable.node import Evidence, Node, Relation
    from gitmem.durable.nodefile import DURABLE_FORMAT
    from gitmem.durable.recall import RecallAnswer, Recalled, RecallPolicy
    from gitmem.durable.repository import ChangeResult, DurableRepository, NodeRevision

#: Where each public name lives, imported on first use: ``durable recall`` in a new process
#: needs the repository and recall, not the change-set parser, staging rules or approvals.
_LAZY: dict[str, str] = {
    "AccessEvent": "gitmem.durable.ledger",
    "Activate": "gitmem.durable.changes",
    "AddRelation": "gitmem.durable.changes",
    "Approval": "gitmem.durable.approval",
    "ChangeResult": "gitmem.durable.repository",
    "ChangeSet": "gitmem.durable.changes",
    "Corroborate": "gitmem.durable.changes",
    "Create": "gitmem.durable.changes",
    "DURABLE_FORMAT": "gitmem.durable.nodefile",
    "DurableBinding": "gitmem.durable.binding",
    "DurableRepository": "gitmem.durable.repository",
    "Evidence": "gitmem.durable.node",
    "Ledger": "gitmem.durable.ledger",
    "Namespace": "gitmem.durable.namespace",
    "Node": "gitmem.durable.node",
    "NodeDraft": "gitmem.durable.changes",
    "NodeRevision": "gitmem.durable.repository",
    "Operation": "gitmem.durable.changes",
    "RecallAnswer": "gitmem.durable.recall",
    "RecallPolicy": "gitmem.durable.recall",
    "Recalled": "gitmem.durable.recall",
    "Relation": "gitmem.durable.node",
    "RemoveRelation": "gitmem.durable.changes",
    "Revise": "gitmem.durable.changes",
    "SetStatus": "gitmem.durable.changes",
    "Usage": "gitmem.durable.ledger",
    "approve_candidates": "gitmem.durable.approval",
    "parse_change_set": "gitmem.durable.changes",
}


__all__ = [
    "DURABLE_FORMAT",
    "AccessEvent",
    "Activate",
    "AddRelation",
    "Approval",
    "ChangeResult",
    "ChangeSet",
    "Corroborate",
    "Create",
    "DurableBinding",
    "DurableRepository",
    "Evidence",
    "Ledger",
    "Namespace",
    "Node",
    "NodeDraft",
    "NodeRevision",
    "Operation",
    "RecallAnswer",
    "RecallPolicy",
    "Recalled",
    "Relation",
    "RemoveRelation",
    "Revise",
    "SetStatus",
    "Usage",
    "approve_candidates",
    "parse_change_set",
]

__getattr__, __dir__ = _exports(__name__, _LAZY, globals(), __all__)
