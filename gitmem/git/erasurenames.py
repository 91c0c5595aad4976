"""The names an erased path goes by in commit and tag messages, and the scrub that replaces them.

``forget`` rewrites history so that the erased file is gone; the messages of the
commits it rewrites may still name it (``Edit people/dana.md``), and a name is
itself what the forget promised to remove. :class:`NameScrub` is the one rule a
rewrite (:mod:`gitmem.git.rewrite`, :mod:`gitmem.git.rewritepack`) applies to them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

MARKER = "[erased]"
"""What an erased name becomes in a rewritten commit message."""
MIN_STEM = 3
"""A file name without its extension counts as a name of the file from this many characters
(``dana`` of ``people/dana.md``); a shorter one (``a`` of ``a.md``) is a word, not a name."""
_WORDS = re.compile(r"\w+")
_GIT_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\"}


def _git_quoted(name: str) -> str:
    """``name`` as git shows a path with special characters (``core.quotePath``), without the quotes:
    ``"people/b\\303\\266b.md"`` for ``people/böb.md``."""
    out = []
    for byte in name.encode("utf-8", "surrogateescape"):
        if byte in _GIT_ESCAPES:
            out.append(_GIT_ESCAPES[byte])
        elif byte < 0x20 or byte >= 0x7F:
            out.append(f"\\{byte:03o}")
        else:
            out.append(chr(byte))
    return "".join(out)


def name_forms(name: str) -> set[str]:
    """Every way a commit message can carry the erased path ``name``; see :class:`NameScrub`."""
    from urllib.parse import quote

    parts = [p for p in name.split("/") if p]
    if not parts:
        return set()
    names = {"/".join(parts[i:]) for i in range(len(parts))}  # the path, ..., the file's own name
    base = parts[-1]
    stem = base.rsplit(".", 1)[0]
    if stem != base and len(stem) >= MIN_STEM:
        names.add(stem)
    forms: set[str] = set()
    for form in names:
        forms.update(
            {
                form,
                unicodedata.normalize("NFD", form),
                _git_quoted(form),
                quote(form, safe="/"),
                form.replace(" ", "%20"),
            }
        )
    return {f for f in forms if f}


class NameScrub:
    """Finds and replaces the names of erased paths in commit and tag messages (by :data:`MARKER`).

    The rule: a message names an erased path when it holds, as a whole token (not
    inside a longer word: the characters around it are no letter, digit or ``_``)
    and in any letter case,

    - the path, or any trailing part of it down to the file's own name
      (``people/dana.md``, ``dana.md``), or that name without its extension
      (``dana``) when it has at least :data:`MIN_STEM` characters;
    - any of those as git quotes a path with special characters (``b\\303\\266b.md``),
      percent-encoded as in a link (``dana%20smith.md``), or decomposed (NFD, as
      macOS writes names).

    The erased paths are every name the forgotten file or folder had, and every
    path below an erased folder. The longest form found is replaced first, so
    ``people/dana.md`` becomes one marker, not ``people/[erased]``. Erring towards
    replacing too much is deliberate: a message is an audit note, and a name in
    it is personal data that the forget promised to remove.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self._by_word: dict[str, set[str]] = {}
        self._always: set[str] = set()
        for name in names:
            for form in name_forms(name):
                word = _WORDS.search(form.lower())
                if word is None:
                    self._always.add(form)
                else:
                    self._by_word.setdefault(word.group(), set()).add(form)
        self._patterns: dict[frozenset[str], re.Pattern[str]] = {}
        # Most forgets erase one file: a handful of words, looked for in an ASCII message
        # (most are) as bytes first, so a walk of 100k commits decodes almost none.
        few = not self._always and len(self._by_word) <= 64
        self._quick = tuple(w.encode("utf-8", "surrogateescape") for w in self._by_word) if few else None

    def _found(self, message: bytes) -> tuple[str, frozenset[str]]:
        """The message as text, and the forms that may be in it: those whose first word
        (as lowercase) it holds as a whole word."""
        if self._quick is not None and message.isascii():
            lowered = message.lower()
            if not any(word in lowered for word in self._quick):
                return "", frozenset()
        text = message.decode("utf-8", "surrogateescape")
        words = set(_WORDS.findall(text.lower()))
        found = set(self._always)
        for word in words & self._by_word.keys():
            found |= self._by_word[word]
        return text, frozenset(found)

    def _pattern(self, forms: frozenset[str]) -> re.Pattern[str]:
        pattern = self._patterns.get(forms)
        if pattern is None:
            alternatives = "|".join(re.escape(f) for f in sorted(forms, key=lambda f: (-len(f), f)))
            pattern = self._patterns[forms] = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)
        return pattern

    def names(self, message: bytes) -> bool:
        """Whether ``message`` names an erased path (then :meth:`__call__` changes it)."""
        text, forms = self._found(message)
        return bool(forms) and self._pattern(forms).search(text) is not None

    def __call__(self, message: bytes) -> bytes:
        """``message`` with every erased name replaced by :data:`MARKER`; other bytes kept as they are."""
        text, forms = self._found(message)
        if not forms:
            return message
        return self._pattern(forms).sub(MARKER, text).encode("utf-8", "surrogateescape")
