"""Key material made fresh per session: a private CA with server and client certificates."""

from __future__ import annotations

import pytest

from tests.security.pki import Pki, make_pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def foreign_pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A second, unrelated CA: its certificates must be refused by the first one's server."""
    return make_pki(tmp_path_factory.mktemp("foreign-pki"))
