"""The secret rules: obvious credentials are caught by name; ordinary notes are not."""

from __future__ import annotations

import pytest

from gitmem.secrets import SECRET_RULES, find_secret

CAUGHT = [
    ("private_key", "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----"),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----"),
    ("private_key", "-----BEGIN EC PRIVATE KEY-----"),
    ("private_key", "-----BEGIN PGP PRIVATE KEY BLOCK-----"),
    ("api_key_sk", "OPENAI_KEY sk-abcdefghijklmnopqrstuvwx"),
    ("api_key_sk", "use sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12 for the demo"),
    ("api_key_sk", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"),
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
    "sk-short",
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
