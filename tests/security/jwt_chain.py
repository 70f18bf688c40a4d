"""A decentralized-auth chain built in the test: operator -> account -> user nkeys and the JWTs
each signs for the next, as ``nsc`` would make them, plus the standard creds file."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nkeys

_HEADER = {"typ": "JWT", "alg": "ed25519-nkey"}
# JetStream is on for the account only when its limits grant storage.
JETSTREAM_LIMITS = {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}
_UNLIMITED = {
    "subs": -1,
    "data": -1,
    "payload": -1,
    "imports": -1,
    "exports": -1,
    "wildcards": True,
    "conn": -1,
    "leaf": -1,
}


def new_keypair(prefix: int) -> nkeys.KeyPair:
    return nkeys.from_seed(nkeys.encode_seed(os.urandom(32), prefix))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def encode_jwt(signer: nkeys.KeyPair, subject: str, name: str, nats: dict[str, Any]) -> str:
    """Sign claims the way nats-io/jwt v2 does: jti is the base32 SHA-512/256 of the claims."""
    claims: dict[str, Any] = {
        "jti": "",
        "iat": int(time.time()),
        "iss": signer.public_key.decode(),
        "name": name,
        "sub": subject,
        "nats": {**nats, "version": 2},
    }
    digest = hashlib.new("sha512_256", json.dumps(claims).encode()).digest()
    claims["jti"] = base64.b32encode(digest).rstrip(b"=").decode()
    signing_input = f"{_b64(json.dumps(_HEADER).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{signing_input}.{_b64(signer.sign(signing_input.encode()))}"


@dataclass
class Account:
    keys: nkeys.KeyPair
    jwt: str

    @property
    def public_key(self) -> str:
        return self.keys.public_key.decode()


@dataclass
class OperatorChain:
    """An operator with a system account and any number of JetStream accounts."""

    operator: nkeys.KeyPair
    operator_jwt: str
    system: Account
    accounts: dict[str, Account]

    @classmethod
    def build(cls, *account_names: str) -> OperatorChain:
        operator = new_keypair(nkeys.PREFIX_BYTE_OPERATOR)
        system = _account(operator, "SYS", jetstream=False)
        operator_jwt = encode_jwt(
            operator,
            operator.public_key.decode(),
            "natsobj-test-operator",
            {"type": "operator", "system_account": system.public_key},
        )
        accounts = {name: _account(operator, name, jetstream=True) for name in account_names}
        return cls(operator, operator_jwt, system, accounts)

    def server_config(self) -> str:
        preload = {a.public_key: a.jwt for a in [self.system, *self.accounts.values()]}
        lines = [f"  {key}: {jwt}" for key, jwt in preload.items()]
        return (
            f"operator: {self.operator_jwt}\n"
            f"system_account: {self.system.public_key}\n"
            "resolver: MEMORY\n"
            "resolver_preload: {\n" + "\n".join(lines) + "\n}\n"
        )

    def user_creds(self, account: str, name: str, directory: Path) -> Path:
        """A user of ``account`` and its creds file, in the format ``nsc`` writes."""
        issuer = self.accounts[account]
        user = new_keypair(nkeys.PREFIX_BYTE_USER)
        jwt = encode_jwt(
            issuer.keys,
            user.public_key.decode(),
            name,
            {"type": "user", "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1},
        )
        path = directory / f"{name}.creds"
        path.write_text(creds_text(jwt, user.seed.decode()))
        path.chmod(0o600)
        return path


def _account(operator: nkeys.KeyPair, name: str, *, jetstream: bool) -> Account:
    keys = new_keypair(nkeys.PREFIX_BYTE_ACCOUNT)
    limits = {**_UNLIMITED, **(JETSTREAM_LIMITS if jetstream else {})}
    jwt = encode_jwt(
        operator,
        keys.public_key.decode(),
        name,
        {"type": "account", "limits": limits, "default_permissions": {"pub": {}, "sub": {}}},
    )
    return Account(keys, jwt)


def creds_text(jwt: str, seed: str) -> str:
    return (
        "-----BEGIN NATS USER JWT-----\n"
        f"{jwt}\n"
        "------END NATS USER JWT------\n\n"
        "************************* IMPORTANT *************************\n"
        "NKEY Seed printed below can be used to sign and prove identity.\n"
        "NKEYs are sensitive and should be treated as secrets.\n\n"
        "-----BEGIN USER NKEY SEED-----\n"
        f"{seed}\n"
        "------END USER NKEY SEED------\n\n"
        "*************************************************************\n"
    )
