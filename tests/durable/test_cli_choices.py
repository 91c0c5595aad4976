"""The durable CLI spells out the activating evidence kinds so `--help` loads no store."""

from gitmem.adapters.cli.durable import ACTIVATING_EVIDENCE
from gitmem.durable.node import AUTHORISING_EVIDENCE


def test_the_cli_offers_exactly_the_evidence_kinds_that_may_activate_a_node():
    assert set(ACTIVATING_EVIDENCE) == set(AUTHORISING_EVIDENCE)
