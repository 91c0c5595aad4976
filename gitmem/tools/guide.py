"""The default advice shown to a model for each file memory (``guide=None``)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
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

#: How to use history, shown once when any file memory offers the history tools.
HISTORY_GUIDE: Final = """Every change is kept. Before you rewrite or delete something you did not write in this conversation, look at memory_file_history for that file: who changed it last and why. When a change fails with version_mismatch, someone else changed the file first: read 'current', redo your change on top of it, and never put your older text back over theirs. To undo a mistake, find the commit in memory_file_history, check it with memory_file_show, and memory_file_restore the file from it."""


def mount_sections(
    mounts: Iterable[tuple[str, Sequence[str], str | None]], read_tools: Collection[str], default_guide: str
) -> list[str]:
    """One instructions section per ``(name, offered tools, guide)``: its access, tools and guide.

    A guide shared by several memories is written out once and referred to after,
    so a long guide does not fill the instructions once per mount.
    """
    sections = []
    shown: dict[str, str] = {}  # guide text -> the first memory it was shown for
    for name, offered, own_guide in mounts:
        access = "read and write" if any(t not in read_tools for t in offered) else "read only"
        section = f'Memory "{name}" ({access}; tools: {", ".join(offered) or "none"}).'
        guide = (default_guide if own_guide is None else own_guide).strip()
        if guide and guide in shown:
            section += f' Guide: as for memory "{shown[guide]}".'
        elif guide:
            section += "\n" + guide
            shown[guide] = name
        sections.append(section)
    return sections
