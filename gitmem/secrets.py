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
    name: str
    pattern: re.Pattern[str]
    explanation: str


_PLACEHOLDER = re.compile(r"^(?:<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\*+|x+|\.\.\.|…|changeme)$", re.I)

SECRET_RULES: tuple[SecretRule, ...] = (
    SecretRule(
        "private_key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        "a PEM private key block",
    ),
    SecretRule(
        "api_key_sk",
        re.compile(r"(?<![A-Za-z0-9])sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}"),
        "an 'sk-…' API key",
    ),
    SecretRule(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        "a GitHub token",
    ),
    SecretRule(
        "aws_access_key",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
        "an AWS access key id",
    ),
    SecretRule(
        "password_assignment",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:password|passwd|pwd|passphrase|secret|client_secret|"
            r"api[_-]?key|access[_-]?token|auth[_-]?token)\s*[:=]\s*[\"']?(?P<value>[^\s\"']{6,})"
        ),
        "a password or secret assigned a value",
    ),
)


def find_secret(text: str) -> SecretRule | None:
    """The first rule that ``text`` breaks, or ``None`` when it holds no obvious credential."""
    for rule in SECRET_RULES:
        for match in rule.pattern.finditer(text):
            value = match.groupdict().get("value")
            if value is not None and _PLACEHOLDER.match(value):
                continue
            return rule
    return None
