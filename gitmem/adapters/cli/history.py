"""History commands: log, show, diff, blame, restore, revert."""

from __future__ import annotations
