"""The secret rules: obvious credentials are caught by name; ordinary notes are not."""

from __future__ import annotations

import random

import pytest

from gitmem.secrets import _PLACEHOLDER, REDACTED, SECRET_RULES, find_secret, redact_secrets

CAUGHT = [
    ("private_key", "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----"),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----"),
    ("private_key", "-----BEGIN EC PRIVATE KEY-----"),
    ("private_key", "-----BEGIN PGP PRIVATE KEY BLOCK-----"),
    ("api_key_sk", "OPENAI_KEY sk-abcdefghijklmnopqrstuvwx"),
    ("api_key_sk", "use sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12 for the demo"),
    ("api_key_sk", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"),
    ("api_key_sk", "Reuse sk-fixture-secret-1234567890 when testing"),  # hyphenated, with a digit
    ("github_token", "ghp_" + "A" * 36),
    ("github_token", "gho_" + "b1" * 18),
    ("github_token", "github_pat_" + "11ABCDEFG0" + "x" * 40),
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_access_key", "key=ASIAY34FZKBOKMUTVV7A;"),
    ("password_assignment", "password = hunter2hunter2"),
    ("password_assignment", "PASSWORD: 'c0rrect-horse'"),
    ("password_assignment", 'db_passwd="s3cr3t!!"'),
    ("password_assignment", "client_secret: abcdef123456"),
    ("password_assignment", "api_key=abc123def456"),
    ("password_assignment", "Access-Token: 0123456789"),
]


@pytest.mark.parametrize(("rule", "text"), CAUGHT)
def test_credentials_are_caught_by_their_rule(rule: str, text: str) -> None:
    found = find_secret(f"some note\n{text}\nmore\n")
    assert found is not None and found.name == rule


NOT_SECRETS = [
    "",
    "The user prefers tea and short answers.",
    "Ask for the password before resetting it.",
    "password: <your password here>",
    "password = ${DB_PASSWORD}",
    "password = $DB_PASSWORD",
    "password: ******",
    "password: xxxxxxx",
    "password = changeme",
    "password = short",
    "api_key: ...",
    "task-sk-list and risk-management notes",
    "desk-abcdefghijklmnopqrstuvwxyz",  # 'sk-' inside a word
    # inside a longer run of URL-safe base64 (an encrypted item's Fernet token): a piece of it
    "gAAAAAAAAAPz9qj0_ASo3OEJIBkCpmqjfYmJ0A7ToIOJPBNvk_sk-SXMQqJH6tmP71OnkPJhGxjugooyNGr7uCpdDz1XcDU_sPY6k2",
    "gAAAAAB9x-sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12",
    "gAAAAAB9x_ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "sk-short",
    "the sk-learn-compatible-estimators-api notes",  # hyphenated words, no digit
    "ghp_tooShort",
    "AKIA1234",  # too short for an access key id
    "XAKIAIOSFODNN7EXAMPLE",  # part of a longer token
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secret(text) is None


def test_rule_names_are_unique_and_explained() -> None:
    names = [rule.name for rule in SECRET_RULES]
    assert len(names) == len(set(names))
    assert all(rule.explanation for rule in SECRET_RULES)
    assert {name for name, _ in CAUGHT} == set(names)  # every rule has a test that trips it


def test_a_placeholder_does_not_hide_a_real_secret_later() -> None:
    found = find_secret("password = <placeholder>\npassword = realvalue123\n")
    assert found is not None and found.name == "password_assignment"


@pytest.mark.parametrize(
    "text", ["DB_PASSWORD=hunter2hunter2", "mysql_root_password: s3cr3tpass", "aws_secret = abcdefgh12"]
)
def test_prefixed_variable_names_are_assignments_too(text: str) -> None:
    found = find_secret(text)
    assert found is not None and found.name == "password_assignment"


def _by_patterns_alone(text: str) -> str | None:
    """What the rules say without their needles: every pattern run on the whole text."""
    for rule in SECRET_RULES:
        for match in rule.pattern.finditer(text):
            value = match.groupdict().get("value")
            if value is not None and _PLACEHOLDER.match(value):
                continue
            return rule.name
    return None


PIECES = (
    "note |\n|password|PassWord|pa\u017fsword|API_KEY|apiKey|ToKeN|pwd|SECRET|Secre\u0442| = |: |=|hunter2hunter2|"
    "'abc123def456'|sk-|Sk-|abcdefghijklmnopqrstuvwxyz|ghp_|GHP_|" + "A" * 36 + "|github_pat_|AKIA|akia|ASIA|"
    "IOSFODNN7EXAMPLE|-----BEGIN |RSA PRIVATE KEY-----|\u00e9|\u212a|\u0130|\u0131|<x>|changeme"
).split("|")


@pytest.mark.parametrize("seed", range(40))
def test_the_needles_never_change_what_is_found(seed: int) -> None:
    """Skipping a rule whose needles are absent is only a shortcut: the answer is the patterns' own."""
    rng = random.Random(seed)
    for _ in range(200):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 12)))
        found = find_secret(text)
        assert (found.name if found else None) == _by_patterns_alone(text), text


@pytest.mark.parametrize(
    "text", ["pa\u017fsword = hunter2hunter2", "é api_key = abc123def456", "ACCESS_TO\u212aEN: abcdefgh"]
)
def test_case_folding_beyond_ascii_still_runs_the_pattern(text: str) -> None:
    """The long s (U+017F) matches ``s`` and the Kelvin sign ``k`` when ignoring case: lowercasing would miss them."""
    found = find_secret(text)
    assert found is not None and found.name == "password_assignment" == _by_patterns_alone(text)


@pytest.mark.parametrize(("rule", "text"), CAUGHT)
def test_redaction_leaves_no_credential(rule: str, text: str) -> None:
    redacted = redact_secrets(f"before\n{text}\nafter")
    assert REDACTED in redacted and find_secret(redacted) is None
    assert redacted.startswith("before\n")
    if rule != "private_key" or "-----END" in text:  # a block without its END line: the rest is key
        assert redacted.endswith("\nafter")


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_redaction_leaves_ordinary_text_alone(text: str) -> None:
    assert redact_secrets(text) == text


def test_redaction_keeps_the_name_and_drops_a_whole_key_block() -> None:
    text = "retain it. api_key=fixture-secret-value-1234 and password = <x>"
    assert redact_secrets(text) == f"retain it. api_key={REDACTED} and password = <x>"
    block = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nb"
    assert redact_secrets(block) == f"a\n{REDACTED}\nb"
    assert redact_secrets("x -----BEGIN PRIVATE KEY-----\nMIIE cut off") == f"x {REDACTED}"
