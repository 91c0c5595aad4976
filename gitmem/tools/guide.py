"""The default advice shown to a model for each file memory (``guide=None``)."""

from __future__ import annotations

from typing import Final

DEFAULT_FILE_GUIDE: Final = """\
Save what will still matter in a later conversation: the user's stated preferences, \
decisions and the reasons for them, conventions of the work, and facts that took effort \
to find out. Skip small talk, one-off requests and anything you could look up again.
Before you add something, view the folder or grep for it, and edit the file that already \
covers the topic instead of starting a second one. Keep one topic per file, with a short \
path that says what it holds (prefs/language.md, projects/alpha/decisions.md) and a \
one-line description in frontmatter or as the first line.
When something you saved is no longer true, change or remove it rather than adding a \
contradiction. Never save passwords, keys or tokens."""
