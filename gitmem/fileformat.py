"""The file rules every store applies: paths, content, frontmatter, descriptions.

Everything here is pure (no I/O), so both stores, the tools, the push hooks and the
HTTP server apply exactly the same rules. A path git itself would refuse (``.git``
in any spelling fsck knows) is refused here, before anything is written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from gitmem.errors import MemoryStoreError
from gitmem.model import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import yaml

    from gitmem.secrets import SecretRule


def _yaml() -> tuple[Any, type[yaml.SafeLoader]]:
    """yaml and its loader, imported on the first frontmatter (a CLI call that reads none skips it).

    libyaml's loader parses frontmatter ~5x faster than the pure-Python one, same safe subset.
    """
    import yaml

    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)

KIB = 1024


class FileFormat(Value):
    """Limits for one memory. Lowering a limit never makes stored files unreadable."""

    __match_args__ = __slots__ = (
        "max_file_bytes",
        "max_description_chars",
        "max_frontmatter_bytes",
        "max_path_bytes",
        "check_secrets",
        "max_files",
        "max_memory_bytes",
    )
    max_file_bytes: int
    max_description_chars: int
    max_frontmatter_bytes: int
    max_path_bytes: int
    check_secrets: bool
    max_files: int | None
    max_memory_bytes: int | None

    def __init__(
        self,
        max_file_bytes: int = 64 * KIB,
        max_description_chars: int = 200,
        max_frontmatter_bytes: int = 2 * KIB,
        max_path_bytes: int = 256,
        check_secrets: bool = True,
        max_files: int | None = None,
        max_memory_bytes: int | None = None,
    ) -> None:
        set_field = object.__setattr__
        set_field(self, "max_file_bytes", max_file_bytes)
        set_field(self, "max_description_chars", max_description_chars)
        set_field(self, "max_frontmatter_bytes", max_frontmatter_bytes)
        set_field(self, "max_path_bytes", max_path_bytes)
        set_field(self, "check_secrets", check_secrets)
        set_field(self, "max_files", max_files)
        set_field(self, "max_memory_bytes", max_memory_bytes)
        for name in ("max_file_bytes", "max_description_chars", "max_frontmatter_bytes", "max_path_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive")
        for name in ("max_files", "max_memory_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be positive or None")


DEFAULT_FORMAT = FileFormat()
# Frontmatter limits wide enough for any stored file (the file limit bounds the rest).
_LENIENT = FileFormat(max_description_chars=1 << 30, max_frontmatter_bytes=1 << 30)

# Code points HFS+ ignores when comparing names; fsck treats ".g\u200cit" as ".git".
_HFS_IGNORABLE = frozenset(
    {0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, *range(0x206A, 0x2070), 0xFEFF}
)
_RESERVED_SEGMENTS = frozenset({".git", "git~1", ".gitmodules", ".gitattributes"})
_MAX_SEGMENT_BYTES = 255
MAX_PATH_SEGMENTS = 128
"""Most segments (folders and the file's name) a path may have, whatever ``max_path_bytes`` allows.

The default byte limit already stops a path there (``"a/" * 127 + "f"``); a raised one must
not let a tree nest past what a recursive walk of it can follow (Python's ~1,000 frames).
"""


# Characters that show as nothing although they are not format characters: a grapheme
# joiner, Hangul and Khmer fillers, Mongolian selectors.
_BLANK_LETTERS = frozenset({0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810), 0x3164, 0xFFA0})
_JOINERS = frozenset({0x200C, 0x200D})  # ZWNJ and ZWJ: part of Persian, Indic and emoji text


def _selector(cp: int) -> bool:
    return 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF


def invisible(ch: str) -> bool:
    """Whether ``ch`` acts on a terminal or hides itself instead of showing as a glyph.

    Controls (C0, DEL, C1), format characters (zero-width spaces and joiners, bidi
    marks and overrides, the BOM, tag characters, soft hyphen), line and paragraph
    separators, variation selectors and blank fillers. Text holding one can look
    like other text (``..\u200b`` looks like ``..``) or rewrite a terminal.
    """
    cp = ord(ch)
    if cp < 0x7F:
        return cp < 0x20
    return (
        unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") or cp in _BLANK_LETTERS or _selector(cp)
    )


def _visible_script(ch: str) -> bool:
    return not ch.isascii() and unicodedata.category(ch)[0] in "LMS"


def joins(text: str, at: int) -> bool:
    """Whether the invisible ``text[at]`` is doing its job in real text, not hiding anything.

    A variation selector right after a non-ASCII letter, mark or symbol (an emoji's
    presentation), and a zero-width joiner or non-joiner between two of them
    (Persian and Indic words, emoji sequences) are allowed; next to ASCII, or at an
    end, they only hide.
    """
    cp = ord(text[at])
    before = at > 0 and _visible_script(text[at - 1])
    if _selector(cp):
        return before
    return cp in _JOINERS and before and at + 1 < len(text) and _visible_script(text[at + 1])


def hidden_at(text: str) -> int | None:
    """The index of the first character of ``text`` that :func:`invisible` flags and :func:`joins` does not excuse."""
    if text.isascii():
        return next((i for i, c in enumerate(text) if c < " " or c == "\x7f"), None)
    return next((i for i, c in enumerate(text) if invisible(c) and not joins(text, i)), None)


# The names fsck guards besides .git, with the prefix of their NTFS 8.3 short name.
_NTFS_GUARDED = (("gitmodules", "gi7eba"), ("gitattributes", "gi7d29"))
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ntfs_rest(rest: str) -> bool:
    """NTFS drops trailing dots and spaces, and ``:`` starts a stream name."""
    return rest.split(":", 1)[0].strip(". ") == ""


def _ntfs_alias(segment: str, name: str, short: str) -> bool:
    """Whether NTFS may open ``segment`` as ``.<name>`` (git's ``is_ntfs_dot_generic``)."""
    s = segment.translate(_ASCII_LOWER)
    if s.startswith("." + name):
        return _ntfs_rest(s[len(name) + 1 :])
    if s[:6] == name[:6] and s[6:7] == "~" and s[7:8] in ("1", "2", "3", "4") and len(s) >= 8:
        return _ntfs_rest(s[8:])
    # The fall-back short name: a prefix of ``short``, '~', a digit 1-9, digits; 8 chars.
    tilde = s.find("~", 0, 7)
    if len(s) < 8 or tilde == -1 or not short.startswith(s[:tilde]):
        return False
    digits = s[tilde + 1 : 8]
    return digits.isascii() and digits.isdigit() and digits[0] != "0" and _ntfs_rest(s[8:])


def _git_reserved(segment: str) -> bool:
    folded = "".join(c for c in segment if ord(c) not in _HFS_IGNORABLE).casefold()
    if folded.rstrip(". ") in _RESERVED_SEGMENTS:
        return True
    # NTFS: ".git . ::$INDEX_ALLOCATION" and "GIT~1" name the .git folder.
    lowered = segment.translate(_ASCII_LOWER)
    if lowered.startswith(".git") and _ntfs_rest(lowered[4:]):
        return True
    if lowered.startswith("git~1") and _ntfs_rest(lowered[5:]):
        return True
    return any(_ntfs_alias(segment, name, short) for name, short in _NTFS_GUARDED)


# Plain ASCII paths whose segments start with a letter, digit or '_' and hold no '~': NFC
# leaves them alone and none can be a name git reserves (those start with '.' or hold '~'),
# so only the lengths are left to check. Batches of thousands of paths skip the full rules.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)*")


def validate_path(path: object, fmt: FileFormat = DEFAULT_FORMAT) -> str:
    """Return the NFC form of a relative file path, or raise ``invalid_path``."""
    if not isinstance(path, str):
        raise MemoryStoreError("invalid_path", f"path must be a string, got {type(path).__name__}")
    if (
        _PLAIN_PATH.fullmatch(path)
        and len(path) <= fmt.max_path_bytes
        and path.count("/") < MAX_PATH_SEGMENTS
        and max(map(len, path.split("/"))) <= _MAX_SEGMENT_BYTES  # ASCII: characters are bytes
    ):
        return path
    return _validate_path_fully(path, fmt)


def _validate_path_fully(path: str, fmt: FileFormat) -> str:
    norm = unicodedata.normalize("NFC", path)
    if not norm:
        raise MemoryStoreError("invalid_path", "path is empty")
    if norm.startswith("/") or norm.endswith("/"):
        raise MemoryStoreError(
            "invalid_path", f"{path!r}: a path is relative and names a file (no leading or trailing '/')"
        )
    if "\\" in norm:
        raise MemoryStoreError("invalid_path", f"{path!r}: backslashes are not allowed; separate folders with '/'")
    bad = next((c for c in norm if unicodedata.category(c) == "Cc" or c in "\u2028\u2029"), None)
    if bad is None and not norm.isascii():
        # A lone surrogate (a name decoded with surrogateescape) has no UTF-8 form: refuse it here
        # rather than let the byte count below raise UnicodeEncodeError.
        bad = next((c for c in norm if "\ud800" <= c <= "\udfff"), None)
        if bad is not None:
            raise MemoryStoreError("invalid_path", f"{path!r}: U+{ord(bad):04X} is a lone surrogate, not text")
    if bad is not None:
        raise MemoryStoreError("invalid_path", f"{path!r}: control character U+{ord(bad):04X} is not allowed")
    hidden = hidden_at(norm)
    if hidden is not None:
        cp = ord(norm[hidden])
        raise MemoryStoreError(
            "invalid_path",
            f"{path!r}: invisible character U+{cp:04X} ({unicodedata.name(norm[hidden], 'unnamed')}) is not "
            "allowed in a path: it would make the name look like another",
        )
    size = len(norm.encode("utf-8"))
    if size > fmt.max_path_bytes:
        raise MemoryStoreError("invalid_path", f"path is {size} bytes; the limit is {fmt.max_path_bytes}")
    segments = norm.split("/")
    if len(segments) > MAX_PATH_SEGMENTS:
        raise MemoryStoreError(
            "invalid_path", f"path has {len(segments)} segments; the limit is {MAX_PATH_SEGMENTS} (127 folders deep)"
        )
    for segment in segments:
        if segment in ("", ".", ".."):
            raise MemoryStoreError("invalid_path", f"{path!r}: empty, '.' and '..' segments are not allowed")
        if unicodedata.normalize("NFKC", segment).strip() in (".", ".."):
            raise MemoryStoreError(
                "invalid_path", f"{path!r}: the segment {segment!r} looks like '.' or '..' and is not allowed"
            )
        if len(segment.encode("utf-8")) > _MAX_SEGMENT_BYTES:
            raise MemoryStoreError(
                "invalid_path", f"{path!r}: a path segment is longer than {_MAX_SEGMENT_BYTES} bytes"
            )
        if _git_reserved(segment):
            raise MemoryStoreError("invalid_path", f"{path!r}: {segment!r} is a name git reserves")
    return norm


def validate_directory(directory: object, fmt: FileFormat = DEFAULT_FORMAT) -> str:
    """Return ``""`` (the root) or an NFC directory path ending in ``/``."""
    if not isinstance(directory, str):
        raise MemoryStoreError("invalid_path", f"directory must be a string, got {type(directory).__name__}")
    if directory == "":
        return ""
    if not directory.endswith("/"):
        raise MemoryStoreError("invalid_path", f"{directory!r}: a directory path ends with '/' (use '' for the root)")
    return validate_path(directory[:-1], fmt) + "/"


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split ``text`` into its frontmatter block (without fences) and body.

    Returns ``(None, text)`` when the text does not open with a ``---`` line, and
    ``("", text)``-like unclosed cases are reported by :func:`parse_frontmatter`.
    """
    if not (text.startswith("---\n") or text.startswith("---\r\n") or text == "---"):
        return None, text
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    raise MemoryStoreError("invalid_file", "frontmatter opened with '---' is never closed by a '---' line")


# A frontmatter line YAML certainly reads as ``key: text``: a plain key, one space, then a
# plain scalar that starts with a letter and holds no ':', '#', quote, tab or non-ASCII
# character (so no indicator, comment, flow or escape can act), on one line of its own.
_SIMPLE_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*): ([A-Za-z][A-Za-z0-9 ,.;()/_+!?&=*<>@$%^~`|\[\]{}-]*)")
# Two more line shapes whose YAML reading is certain: a double-quoted scalar of printable
# ASCII without a backslash or quote inside (no escape can act: the text is what is between
# the quotes), and a plain token of digits and letters that starts with a digit but holds a
# letter (YAML 1.1 reads numbers only from digits, a '0x'/'0b' prefix, or with '.', ':' or
# '-', none of which it has) — a record file's ``id: 01JD...`` and ``created: "2026-..."``.
_QUOTED_LINE = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*): "([\x20\x21\x23-\x5b\x5d-\x7e]*)" *')
_TOKEN_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*): ([0-9][0-9A-Za-z]*[A-Za-z][0-9A-Za-z]*) *")
# Plain scalars YAML 1.1 (PyYAML's resolver) reads as booleans or null, not text.
_YAML_WORDS = frozenset(
    "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF null Null NULL".split()
)


def _simple_mapping(block: str) -> dict[str, Any] | None:
    """The mapping of a frontmatter made only of ``key: text`` lines, read without yaml; else ``None``.

    Most memory files carry a one-line ``description`` and a few such keys, and
    listing a memory parses every file's frontmatter: this keeps yaml (its import
    and a loader per file) off that path. It answers only where YAML's answer is
    certain (``tests/test_fileformat_fastpath.py`` holds it to yaml's own): plain
    text, plain double-quoted text, and letter-and-digit tokens such as record
    ids. Anything else (single quotes, escapes, lists, numbers, dates, blank or
    indented lines, a repeated key, ``yes``/``null`` words) goes to yaml.
    """
    data: dict[str, Any] = {}
    lines = block.split("\n")
    if lines[-1] == "":
        lines.pop()
    for line in lines:
        found = _SIMPLE_LINE.fullmatch(line)
        if found is not None:
            key, value = found.group(1), found.group(2).rstrip(" ")
            if value in _YAML_WORDS:
                return None
        elif (found := _QUOTED_LINE.fullmatch(line)) is not None:
            key, value = found.group(1), found.group(2)
        elif (found := _TOKEN_LINE.fullmatch(line)) is not None:
            key, value = found.group(1), found.group(2)
            if value.startswith(("0x", "0b")):  # hexadecimal and binary integers
                return None
        else:
            return None
        if key in data or key in _YAML_WORDS:
            return None
        data[key] = value
    return data


def parse_frontmatter(text: str, fmt: FileFormat = DEFAULT_FORMAT) -> tuple[dict[str, Any] | None, str]:
    """Return the frontmatter mapping (or ``None``) and the body; ``invalid_file`` when malformed."""
    block, body = split_frontmatter(text)
    if block is None:
        return None, body
    size = len(block.encode("utf-8")) + 8
    if size > fmt.max_frontmatter_bytes:
        raise MemoryStoreError("invalid_file", f"frontmatter is {size} bytes; the limit is {fmt.max_frontmatter_bytes}")
    data = _simple_mapping(block)
    if data is None:
        yaml, loader = _yaml()
        try:
            data = yaml.load(block, Loader=loader) if block.strip() else {}
        except yaml.YAMLError as exc:
            raise MemoryStoreError("invalid_file", f"frontmatter is not valid YAML: {exc}".splitlines()[0]) from None
        except Exception as exc:
            # A value YAML reads but Python cannot build: a date such as 2001-02-30, an offset of
            # days, more digits than an int takes, nesting deeper than the constructor recurses; an
            # explicit tag its constructor fails on in its own way (!!bool maybe: a KeyError, !!int "":
            # an IndexError, !!timestamp soon: an AttributeError). Each is the file's fault, never ours.
            why = f"frontmatter holds a value that cannot be read: {exc}".splitlines()[0]
            raise MemoryStoreError("invalid_file", why[:300]) from None
    if not isinstance(data, dict):
        raise MemoryStoreError("invalid_file", "frontmatter must be a YAML mapping of keys to values")
    if "description" in data:
        desc = data["description"]
        # One line as str.splitlines sees it: \r, \x1e or \u2028 would break an index line.
        if not isinstance(desc, str) or len(desc.strip().splitlines()) != 1:
            raise MemoryStoreError("invalid_file", "frontmatter 'description' must be one non-empty line of text")
        if len(desc.strip()) > fmt.max_description_chars:
            raise MemoryStoreError(
                "invalid_file",
                f"frontmatter 'description' is {len(desc.strip())} characters; the limit is {fmt.max_description_chars}",
            )
    return {str(k): v for k, v in data.items()}, body


def _first_line(body: str, limit: int) -> str | None:
    for line in body.splitlines():
        stripped = line.strip()
        if stripped:
            return stripped[:limit]
    return None


def describe(text: str, fmt: FileFormat = DEFAULT_FORMAT) -> str | None:
    """The frontmatter description, else the first non-empty body line (cut), else ``None``.

    Raises ``invalid_file`` or ``too_large`` for content a store would refuse.
    """
    encode_text(text, fmt, check_secrets=False)
    meta, body = parse_frontmatter(text, fmt)
    if meta is not None and "description" in meta:
        return str(meta["description"]).strip()
    return _first_line(body, fmt.max_description_chars)


def describe_stored(text: str, fmt: FileFormat = DEFAULT_FORMAT) -> str | None:
    """Like :func:`describe`, but never fails: stored files stay listable under any limit."""
    try:
        meta, body = parse_frontmatter(text, fmt)
    except MemoryStoreError:
        try:
            # Written under looser limits: the author's description still wins, cut to the limit.
            meta, body = parse_frontmatter(text, _LENIENT)
        except MemoryStoreError:
            block_end = text.find("\n---", 3)
            body = text[block_end + 4 :] if text.startswith("---") and block_end != -1 else text
            meta = None
    if meta is not None and isinstance(meta.get("description"), str) and meta["description"].strip():
        return str(meta["description"]).strip().splitlines()[0][: fmt.max_description_chars]
    return _first_line(body, fmt.max_description_chars)


def _secret_finder() -> Callable[[str], SecretRule | None]:
    """:func:`gitmem.secrets.find_secret`, imported on the first write (it compiles the rules: reads never pay
    for them) and kept here, so later writes skip the import statement."""
    if not _finder:
        from gitmem.secrets import find_secret

        _finder.append(find_secret)
    return _finder[0]


_finder: list[Callable[[str], SecretRule | None]] = []


def encode_text(text: object, fmt: FileFormat = DEFAULT_FORMAT, *, check_secrets: bool | None = None) -> bytes:
    """Validate ``text`` as a memory file and return its UTF-8 bytes.

    Checks, in order: type, encodability, size, NUL bytes, frontmatter, secrets.
    """
    if not isinstance(text, str):
        raise MemoryStoreError("invalid_file", f"content must be text, got {type(text).__name__}")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryStoreError("invalid_file", "content is not valid UTF-8 (it holds a lone surrogate)") from None
    if len(data) > fmt.max_file_bytes:
        raise MemoryStoreError("too_large", f"content is {len(data)} bytes; the limit is {fmt.max_file_bytes}")
    if b"\x00" in data:
        raise MemoryStoreError("invalid_file", "content holds a NUL byte; memory files are text")
    parse_frontmatter(text, fmt)
    if fmt.check_secrets if check_secrets is None else check_secrets:
        rule = _secret_finder()(text)
        if rule is not None:
            raise MemoryStoreError(
                "invalid_file",
                f"content looks like it holds {rule.explanation} (secret rule '{rule.name}'); "
                "git keeps every version, so credentials are refused",
            )
    return data


# What may act on a terminal or hide text, found fast: every character but tab and
# printable ASCII (plus newline in multi-line text) is looked at; most text has none.
_SUSPECT_LINE = re.compile(r"[^\t\x20-\x7e]")
_SUSPECT_LINES = re.compile(r"[^\t\n\x20-\x7e]")


def _escape(ch: str) -> str:
    cp = ord(ch)
    if ch in "\n\r":
        return "\\n" if ch == "\n" else "\\r"
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` with each character that could act on a terminal or hide itself shown as an escape.

    Escaped: C0 controls (ESC, BEL, CR, backspace...), DEL, C1 controls, and the
    invisible characters of :func:`invisible` (bidi overrides,
    zero-width characters, BOM, tag characters...) except joiners doing their job
    in non-Latin text. Tabs stay; with ``multiline``, newlines and CRLF line ends
    stay too (file content, patches), otherwise a newline is escaped so one record
    stays one line. An escape reads like Python's: ``\\x1b``, ``\\u202e``.

    Everything gitmem shows a person goes through here: the CLI's lines, and the
    messages a push hook or ``gitmem serve`` relays to the pusher's terminal.
    """

    def fix(found: re.Match[str]) -> str:
        ch, at = found.group(), found.start()
        if ch == "\r" and multiline and text.startswith("\n", at + 1):
            return ch
        if ch < "\x7f" or (invisible(ch) and not joins(text, at)):
            return _escape(ch)
        return ch

    return (_SUSPECT_LINES if multiline else _SUSPECT_LINE).sub(fix, text)


def decode_stored(data: bytes) -> str:
    """Decode a stored blob; bytes written by other git clients never crash a read."""
    return data.decode("utf-8", errors="replace")
