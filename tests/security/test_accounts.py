"""ADR-19 across accounts, the negative side: a user of a third account, which imports
nothing from the store's account, cannot reach the store with or without the API prefix,
and is told so at once instead of hanging. (The positive case is tests/jetstream/test_prefix.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import natsobj
from natsobj.local.embedded import NatsServerProcess
from tests.jetstream.test_prefix import two_accounts, url_for
from tests.security.support import PROMPT, stopwatch


@pytest.fixture(scope="module")
def accounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    with NatsServerProcess(tmp_path_factory.mktemp("accounts"), config=two_accounts()) as server:
        with natsobj.connect(url_for(server, "a")) as owner:
            owner.create_store("shared").put("plans", b"account A only")
        yield server


def unreachable(action) -> natsobj.NotConnected:
    with stopwatch() as took, pytest.raises(natsobj.NotConnected) as err:
        action()
    assert took.seconds < PROMPT, f"took {took.seconds:.1f}s: a timeout, not an answer"
    return err.value


def test_outsider_with_the_prefix_gets_no_responders_at_once(accounts):
    with natsobj.connect(
        url_for(accounts, "o"), api_prefix="fromA", inbox_prefix="forI"
    ) as outsider:
        error = unreachable(lambda: outsider.store("shared"))
    assert "fromA.STREAM.INFO.OBJ_shared" in str(error)
    assert "API prefix" in str(error)  # the hint points at the import / prefix


def test_outsider_without_a_prefix_has_no_jetstream(accounts):
    with natsobj.connect(url_for(accounts, "o")) as outsider:
        error = unreachable(lambda: outsider.store("shared"))
    assert "no JetStream" in str(error)
    assert error.bucket == "shared"


def test_outsider_cannot_create_stores_in_the_other_account(accounts):
    with natsobj.connect(
        url_for(accounts, "o"), api_prefix="fromA", inbox_prefix="forI"
    ) as outsider:
        unreachable(lambda: outsider.create_store("intruder"))
    with natsobj.connect(url_for(accounts, "a")) as owner:
        assert owner.store_names() == ["shared"]
        assert [i.name for i in owner.store("shared").list()] == ["plans"]
