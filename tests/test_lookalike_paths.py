"""Names that look like other names are refused by the path rules every store applies.

A zero-width or other invisible character can make ``..`` or ``notes.md`` appear
on screen while naming something else; a person reviewing a listing could not
tell them apart. Joiners and selectors doing their job in real text stay allowed.
"""

from __future__ import annotations

import asyncio
import unicodedata
from pathlib import Path

import pytest

from gitmem import GitFileStore, InMemoryFileStore, MemoryStoreError
from gitmem.fileformat import invisible, validate_path

LOOKALIKES = {
    "dot dot + zero width space": "..\u200b/x.md",
    "zero width space + dot dot": "\u200b../x.md",
    "dot + zero width joiner": "notes/.\u200d",
    "dot dot + word joiner": "a/..\u2060",
    "dot dot + BOM": "..\ufeff",
    "one dot leader pair": "\u2024\u2024/x.md",
    "fullwidth dots": "\uff0e\uff0e/x.md",
    "dot dot + trailing space": ".. /x.md",
    "name + zero width space": "notes\u200b.md",
    "name + soft hyphen": "no\u00adtes.md",
    "bidi override": "report\u202edm.exe",
    "bidi isolate": "a\u2066b.md",
    "left-to-right mark": "notes.md\u200e",
    "tag characters": "notes\U000e0041.md",
    "variation selector after ASCII": "notes\ufe0f.md",
    "joiner between ASCII letters": "no\u200dtes.md",
    "zero width non-joiner at the end": "\u0641\u200c",
    "combining grapheme joiner": "a\u034fb.md",
    "hangul filler": "\u3164.md",
    "mongolian vowel separator": "a\u180eb.md",
}
REAL_TEXT = {
    "Persian word with ZWNJ": "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.md",
    "Devanagari with ZWJ": "\u0915\u094d\u200d\u0937.md",
    "emoji family": "\U0001f468\u200d\U0001f469\u200d\U0001f467.md",
    "emoji with presentation selector": "\u2764\ufe0f.md",
    "plain dots inside names": "v1..2/a.b.md",
    "CJK": "\u65e5\u8a18/\u4eca\u65e5.md",
}


@pytest.mark.parametrize("path", list(LOOKALIKES.values()), ids=list(LOOKALIKES))
def test_lookalike_names_are_refused(path: str) -> None:
    with pytest.raises(MemoryStoreError) as err:
        validate_path(path)
    assert err.value.code == "invalid_path"
    assert "look like" in err.value.message or "looks like" in err.value.message


@pytest.mark.parametrize("path", list(REAL_TEXT.values()), ids=list(REAL_TEXT))
def test_joiners_and_selectors_in_real_text_are_kept(path: str) -> None:
    assert validate_path(path) == unicodedata.normalize("NFC", path)


def test_stores_refuse_the_lookalike_before_writing(tmp_path: Path) -> None:
    git = GitFileStore.init(tmp_path / "m.git").sync
    head = git.head()
    for write in (git.write, lambda *a, **k: asyncio.run(InMemoryFileStore().write(*a, **k))):
        with pytest.raises(MemoryStoreError) as err:
            write("..\u200b/x.md", "x\n", expected=None)
        assert err.value.code == "invalid_path"
    assert git.head() == head and git.list() == []


def test_invisible_covers_every_format_and_control_character() -> None:
    for cp in range(0x110000):
        ch = chr(cp)
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            assert invisible(ch), hex(cp)
    assert not any(invisible(c) for c in "a .-_/é漢\u0301")
