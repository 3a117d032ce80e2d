"""`serve --add-scram` (asyncbroker.scram_credentials.parse_add_scram): Kafka's format-tool syntax."""
from __future__ import annotations

import hashlib
import hmac

import pytest

from asyncbroker import cli
from asyncbroker.scram_credentials import parse_add_scram


def test_a_credential_from_a_password() -> None:
    user, mechanism, credential = parse_add_scram("SCRAM-SHA-512=[name=alice,password=\"s3cret\",iterations=8192]")
    assert (user, mechanism, credential.iterations) == ("alice", "SCRAM-SHA-512", 8192)
    salted = hashlib.pbkdf2_hmac("sha512", b"s3cret", credential.salt, 8192)
    assert credential.server_key == hmac.digest(salted, b"Server Key", "sha512")
    assert parse_add_scram("SCRAM-SHA-256=[name=bob,password=x]")[2].iterations == 4096


@pytest.mark.parametrize("text, problem", [
    ("SCRAM-SHA-1=[name=a,password=b]", "is not MECHANISM="),
    ("SCRAM-SHA-256=[name=a]", "name and password are both required"),
    ("SCRAM-SHA-256=[name=a,password=b,salt=c]", "not ['salt']"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=10]", "between 4096 and 16384"),
    ("SCRAM-SHA-256=[name]", "is not key=value"),
])
def test_refusals(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_add_scram(text)


def test_the_cli_stops_on_a_bad_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--add-scram", "SCRAM-SHA-256=[name=a]"]) == cli.EXIT_CONFIG_ERROR
    assert "invalid --add-scram" in capsys.readouterr().err
