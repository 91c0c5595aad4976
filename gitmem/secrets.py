"""Rules that refuse obvious credentials before they enter git history.

Git keeps every version forever (until an admin runs ``forget``), so a leaked key
in a memory file is expensive to undo. The rules are deliberately narrow: they
match well-known credential shapes, not anything that merely looks random.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretRule:
    """One credential shape.

    ``needles`` are literal pieces every match of ``pattern`` contains; a text holding
    none of them cannot match, so the pattern (whose look-behinds make the regex
    engine try every position: ~25 µs per rule for 1 KB) is not run at all. With
    ``folded`` the pattern ignores case and the needles are lowercase; they are then
    looked for in the lowercased text, which is exact only for ASCII text (Unicode
    case-insensitive matching also pairs the long s, U+017F, with ``s`` and the
    Kelvin sign, U+212A, with ``k``), so a non-ASCII text always runs the pattern.
    """

    name: str
    pattern: re.Pattern[str]
    explanation: str
    needles: tuple[str, ...] = ()
    folded: bool = False

    def may_match(self, text: str, lowered: str | None) -> bool:
        """Whether ``pattern`` could match ``text`` (``lowered``: its lowercase form when it is ASCII)."""
        if not self.needles:
            return True
        if self.folded:
            if lowered is None:
                return True
            return any(needle in lowered for needle in self.needles)
        return any(needle in text for needle in self.needles)


# ``[redacted`` is the first word of :data:`REDACTED`: a redacted text breaks no rule.
_PLACEHOLDER = re.compile(r"^(?:<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\*+|x+|\.\.\.|…|changeme|\[redacted)$", re.I)

# A token-shaped key stands alone: one that continues a longer run of URL-safe base64
# (letters, digits, '_' and '-') is a piece of that run, such as a ciphertext or a hash.
# Random base64url of 120 characters held '_sk-' or '-sk-' and 20 more about 3 times in
# 200,000, so an encrypted session item (Fernet) was now and then refused as a key.
_ALONE = r"(?<![A-Za-z0-9_-])"

SECRET_RULES: tuple[SecretRule, ...] = (
    SecretRule(
        "private_key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        "a PEM private key block",
        needles=("-----BEGIN ",),
    ),
    SecretRule(
        "api_key_sk",
        # Either a last segment of 20+ characters (sk-proj-…, sk-ant-api03-…) or 20+
        # characters of hyphenated segments holding a digit (sk-team-prod-1234567890).
        re.compile(
            _ALONE + r"sk-(?:(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}|(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,})"
        ),
        "an 'sk-…' API key",
        needles=("sk-",),
    ),
    SecretRule(
        "github_token",
        re.compile(_ALONE + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        "a GitHub token",
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretRule(
        "aws_access_key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
        "an AWS access key id",
        needles=("AKIA", "ASIA"),
    ),
    SecretRule(
        "password_assignment",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:password|passwd|pwd|passphrase|secret|client_secret|"
            r"api[_-]?key|access[_-]?token|auth[_-]?token)\s*[:=]\s*[\"']?(?P<value>[^\s\"']{6,})"
        ),
        "a password or secret assigned a value",
        # Every keyword holds one of these: password/passwd/passphrase, pwd, (client_)secret,
        # api_key/apikey, access_token/auth_token.
        needles=("pass", "pwd", "secret", "api", "token"),
        folded=True,
    ),
)


REDACTED = "[redacted sensitive value]"
_KEY_BLOCK_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")


def _spans(text: str) -> list[tuple[int, int]]:
    """Where the rules match ``text``: an assignment's value only, a key block up to its END line."""
    spans = []
    for rule in SECRET_RULES:
        for match in rule.pattern.finditer(text):
            value = match.groupdict().get("value")
            if value is not None:
                if not _PLACEHOLDER.match(value):
                    spans.append(match.span("value"))
                continue
            start, end = match.span()
            if rule.name == "private_key":
                tail = _KEY_BLOCK_END.search(text, end)
                end = tail.end() if tail is not None else len(text)  # no END line: the rest is key
            spans.append((start, end))
    return sorted(spans)


def redact_secrets(text: str) -> str:
    """``text`` with every value a rule matches replaced by :data:`REDACTED`.

    Used where a text must be passed on rather than refused: the turn a model reads
    to extract memories, and the evidence a candidate keeps of it, never hold the
    credential a user pasted into the prompt.
    """
    if find_secret(text) is None:
        return text
    out: list[str] = []
    at = 0
    for start, end in _spans(text):
        if end <= at:
            continue
        out.append(text[at : max(at, start)])
        out.append(REDACTED)
        at = end
    out.append(text[at:])
    return "".join(out)


def find_secret(text: str) -> SecretRule | None:
    """The first rule that ``text`` breaks, or ``None`` when it holds no obvious credential.

    Every write of a memory file comes here, and most texts hold none of the
    rules' needles: :data:`_QUICK` finds that with one scan per needle and no
    pattern or per-rule call at all.
    """
    lowered = text.lower() if text.isascii() else None
    if lowered is not None:
        for needle, folded in _QUICK:
            if needle in (lowered if folded else text):
                break
        else:
            return None
    for rule in SECRET_RULES:
        if not rule.may_match(text, lowered):
            continue
        for match in rule.pattern.finditer(text):
            value = match.groupdict().get("value")
            if value is not None and _PLACEHOLDER.match(value):
                continue
            return rule
    return None


_QUICK: tuple[tuple[str, bool], ...] = tuple(
    (needle, rule.folded) for rule in SECRET_RULES if rule.needles for needle in rule.needles
)
"""Every needle with whether it is looked for in the lowercased text: an ASCII text holding none
breaks no rule (each rule has needles; one without would have to run on every text)."""
assert all(rule.needles for rule in SECRET_RULES), "a rule without needles must run on every text"


# --- credentials in URLs ------------------------------------------------------------

HIDDEN = "***"
"""What a credential inside a URL becomes in anything gitmem shows or logs."""
_URL = re.compile(r"\b(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>\S*)")
_SSH_SCHEMES = frozenset({"ssh", "git+ssh", "ssh+git"})
_QUERY_VALUE = re.compile(r"(?P<name>[^=&;]*)(?P<value>=[^&;]*)?")
_QUERY_END = re.compile(r"[#'\"<>()\[\]{}`]")


def _hide_query(query: str) -> str:
    """Every parameter value of a query string (and a bare parameter) replaced by :data:`HIDDEN`."""

    def one(match: re.Match[str]) -> str:
        name, value = match.group("name"), match.group("value")
        if value is not None:
            return f"{name}={HIDDEN}"
        return HIDDEN if name else ""

    return _QUERY_VALUE.sub(one, query)


def _hide_url(match: re.Match[str]) -> str:
    scheme, rest = match.group("scheme"), match.group("rest")
    at = rest.rfind("@")
    if at >= 0:
        userinfo, rest = rest[:at], rest[at + 1 :]
        if scheme.lower() in _SSH_SCHEMES and ":" not in userinfo:
            shown = userinfo  # a login name (``ssh://git@host``); ssh takes no password in a URL
        else:
            shown = HIDDEN
        rest = f"{shown}@{rest}"
    # The query string: a token there (``?access_token=…``) is as secret as a password.
    # It ends at a fragment or at what closes a quoted or bracketed URL in a message.
    cut = rest.find("?")
    if cut >= 0:
        end = _QUERY_END.search(rest, cut + 1)
        stop = end.start() if end is not None else len(rest)
        rest = rest[: cut + 1] + _hide_query(rest[cut + 1 : stop]) + rest[stop:]
    return f"{scheme}://{rest}"


def scrub_credentials(text: str) -> str:
    """``text`` with every credential inside a URL replaced by :data:`HIDDEN`: the one rule for
    whatever gitmem shows or logs that may hold a remote's URL (messages, errors, git's own stderr).

    What counts as a credential, and why so much:

    - the whole user part (``https://user:pass@host`` and ``https://TOKEN@host`` both become
      ``https://***@host``): hosting services take a token as the user name as readily as
      the password (``https://<token>:x-oauth-basic@…``), so neither half is safe to show.
      The user part ends at the *last* ``@`` of the URL, so a password holding an ``@``
      or an unencoded ``/`` is hidden whole. The one exception is a lone login name of
      an ssh URL (``ssh://git@host/…``): ssh never takes a password in a URL;
    - every value of the query string (``?access_token=…&sig=…``), and a bare parameter.

    Anything that is not a ``scheme://`` URL is left alone (an scp-like ``git@host:path``
    or a local path holds no password). Applying it twice changes nothing more.
    """
    if "://" not in text:
        return text
    return _URL.sub(_hide_url, text)
