"""Hypothesis profiles for the index tests (the same names as tests/properties).

``HYPOTHESIS_PROFILE`` picks one: ``ci`` (the default) is derandomised and small,
``dev`` explores more, randomly, ``deep`` is for a long hunt. No deadlines.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.errors import InvalidArgument

try:
    settings.get_profile("ci")
except InvalidArgument:
    settings.register_profile(
        "ci",
        derandomize=True,
        database=None,
        max_examples=40,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile("dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("deep", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
