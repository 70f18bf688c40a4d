"""The Python face of the operation options table: the core's own keywords take every
spelling the table does, and apply the table's defaults (a put's TTL, a watch's start and
deletes), against a real nats-server."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from natsobj.operation_options import Face
from tests.contract.cases import cases, defaults
from tests.contract.reached import ttl_of


@pytest.fixture(scope="module")
def ttl_bucket(nats_server) -> Iterator:
    import natsobj

    with natsobj.connect(nats_server.url) as client:
        created = client.create_store("contract-python", delete_marker_ttl=1)
        yield created
        with contextlib.suppress(Exception):
            client.delete_store("contract-python")


@pytest.mark.parametrize("case", cases(Face.PYTHON, "put"), ids=lambda c: c.id)
def test_put(case, ttl_bucket) -> None:
    info = ttl_bucket.put("o", b"x", **{case.option.name: case.given})
    assert ttl_of(ttl_bucket.get_info("o")) == case.expected
    assert info.name == "o"


@pytest.mark.parametrize("case", cases(Face.PYTHON, "follow"), ids=lambda c: c.id)
def test_follow(case, ttl_bucket) -> None:
    """The watch was given the spelling; what it applies is what the table says."""
    with ttl_bucket.watch(**{case.option.name: case.given}) as watcher:
        applied = {
            "start": watcher.position,
            "include_deletes": watcher.include_deletes,
            "include_version_events": watcher.include_version_events,
        }
    assert applied[case.option.name] == case.expected


def test_follow_defaults(ttl_bucket) -> None:
    wanted = defaults(Face.PYTHON, "follow")
    with ttl_bucket.watch() as watcher:
        assert watcher.include_deletes is wanted["include_deletes"]
        assert watcher.include_version_events is wanted["include_version_events"]
        assert watcher.position == wanted["start"]
