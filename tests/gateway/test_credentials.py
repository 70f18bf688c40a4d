"""The gateway's credentials file: read as a private secret, every field checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from natsobj.errors import UnsafeLocalState
from natsobj.s3.access_keys import BadCredentialsFile, load
from natsobj.settings import ConnectionSettings

pytestmark = pytest.mark.unit

GOOD = """
[keys.AKIAGATEWAY]
secret = "s3cret"

[keys.AKIAETL]
secret = "other"
user = "etl"
password = "pw"
"""


def _write(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "keys.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_keys_and_the_identity_each_acts_as(tmp_path: Path) -> None:
    keys = load(_write(tmp_path, GOOD)).keys
    base = ConnectionSettings.coerce("nats://gateway:gwpass@127.0.0.1:4222")
    assert keys["AKIAGATEWAY"].settings(base) is base
    etl = keys["AKIAETL"].settings(base)
    assert (etl.user, etl.password, etl.token) == ("etl", "pw", None)
    assert "s3cret" not in repr(keys["AKIAGATEWAY"])


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_a_file_others_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    with pytest.raises(UnsafeLocalState, match="mode"):
        load(_write(tmp_path, GOOD, mode))


def test_a_symlink_is_refused(tmp_path: Path) -> None:
    real = _write(tmp_path, GOOD)
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    with pytest.raises(UnsafeLocalState):
        load(link)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('[keys.A]\nsecret = "s"\npasword = "typo"\n', "unknown field 'pasword'"),
        ('[keys.A]\nuser = "u"\n', "has no secret"),
        ('[key.A]\nsecret = "s"\n', "unknown top-level"),
        ("[keys.A\n", "not valid TOML"),
        ('[keys.A]\nsecret = "s"\n[anonymous]\nsecret = "s"\n', "unknown field 'secret'"),
        ('[keys.A]\nsecret = "s"\nanonymous = "yes"\n', "unknown field 'anonymous'"),
        ('[keys.A]\nsecret = "s"\n[anonymous]\nuser = 1\n', "user must be a string"),
    ],
)
def test_malformed_files_are_refused(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(BadCredentialsFile, match=match):
        load(_write(tmp_path, text))


def test_the_anonymous_identity(tmp_path: Path) -> None:
    """Unsigned requests act as ``[anonymous]``'s identity; without the table, as none."""
    base = ConnectionSettings.coerce("nats://gateway:gwpass@127.0.0.1:4222")
    assert load(_write(tmp_path, GOOD)).anonymous is None
    own = load(_write(tmp_path, GOOD + "\n[anonymous]\n")).anonymous
    assert own is not None and own.settings(base) is base
    text = GOOD + '\n[anonymous]\nuser = "public"\npassword = "pub"\n'
    public = load(_write(tmp_path, text)).anonymous
    assert public is not None
    assert (public.settings(base).user, public.settings(base).password) == ("public", "pub")


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadCredentialsFile, match="does not exist"):
        load(tmp_path / "absent.toml")


def test_the_seal_key_comes_from_seal_secret_or_else_the_keys(tmp_path: Path) -> None:
    """Gateways reading one file agree on the key sealing kept ETags; a seal_secret keeps it
    across key changes, and the key never shows in a repr."""
    derived = load(_write(tmp_path, GOOD))
    assert derived.seal_key == load(_write(tmp_path, GOOD)).seal_key
    rotated = load(_write(tmp_path, GOOD.replace('"s3cret"', '"rotated"')))
    assert rotated.seal_key != derived.seal_key
    sealed = GOOD + '\n[gateway]\nseal_secret = "a-long-gateway-seal-secret"\n'
    chosen = load(_write(tmp_path, sealed))
    assert chosen.seal_key not in (derived.seal_key, rotated.seal_key)
    assert chosen.seal_key == load(_write(tmp_path, sealed.replace('"s3cret"', '"new"'))).seal_key
    assert "a-long-gateway-seal-secret" not in repr(chosen)


@pytest.mark.parametrize(
    "table",
    ['seal_secret = "short"', "seal_secret = 12345678901234567", 'seal = "a-long-gateway-seal"'],
)
def test_a_bad_gateway_table_is_refused(tmp_path: Path, table: str) -> None:
    with pytest.raises(BadCredentialsFile, match=r"\[gateway\]"):
        load(_write(tmp_path, GOOD + f"\n[gateway]\n{table}\n"))
