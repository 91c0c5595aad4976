"""The names of durable memory's profiles, and the A3S names accepted for them.

gitmem ports A3S's durable memory and names what it implements in its own
namespace (``gitmem.durable.…``); the lexical profile's name also says which
Unicode tables tokenise (``word-cjk-bigram.v1+lnm+nfc/unicode-…``). An A3S host
writes A3S's names for the same things. **gitmem's names are canonical**: they are
what gitmem writes into a binding record, a serving generation's digest and a
recall answer. The A3S names are accepted wherever gitmem reads or compares a name
- a persisted session binding, an evaluation's report - so a binding an A3S host
wrote is understood and compares equal to gitmem's own.

Only names of the same thing are aliased: a name neither side defines passes
through unchanged (and so compares unequal to every profile).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gitmem.recall.tokens import PROFILE as LEXICAL_PROFILE

SEMANTIC_BINDING_SCHEMA: Final = "gitmem.durable.semantic-binding.v1"
FUSION_PROFILE: Final = "gitmem.durable.hybrid.rrf-k60.v1"

#: A3S's name -> gitmem's canonical name for the same profile.
A3S_ALIASES: Final[Mapping[str, str]] = {
    "a3s.code.memory.hybrid.rrf-k60.v1": FUSION_PROFILE,
    "a3s.memory.lexical.word-cjk-bigram.v1": LEXICAL_PROFILE,
    "a3s.code.memory.semantic-recall-binding.v1": SEMANTIC_BINDING_SCHEMA,
}

#: The fields of a binding record that hold a profile name (at any depth).
_NAMED_FIELDS: Final = frozenset({"schema", "fusion", "profile", "lexical_profile", "fusion_profile"})


def canonical(name: str) -> str:
    """gitmem's name for ``name`` (an A3S name maps to gitmem's; any other name is itself)."""
    return A3S_ALIASES.get(name, name)


def canonical_record(record: Any) -> Any:
    """``record`` with every profile name in its named fields made canonical (a copy; others untouched).

    What a persisted binding is compared through, so a record written with A3S's names
    equals the same record written with gitmem's.
    """
    if isinstance(record, Mapping):
        return {
            key: canonical(value) if key in _NAMED_FIELDS and isinstance(value, str) else canonical_record(value)
            for key, value in record.items()
        }
    if isinstance(record, list):
        return [canonical_record(value) for value in record]
    return record
