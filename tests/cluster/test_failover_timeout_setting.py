"""``failover_timeout`` and ``api_timeout`` are connection settings every face takes (issue 29):
given through a URL option, an fsspec keyword or a CLI flag, a small ``failover_timeout`` bounds
a put on a cluster that lost its quorum (two of three nodes SIGKILLed) far below the default
(30 s), and the put ends with the ``ClusterUnavailable`` whose hint says to raise it."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from click.testing import CliRunner

import natsobj
from natsobj.aio.jetstream.failover import FAILOVER_ATTEMPT_TIMEOUT
from natsobj.cli.app import cli
from natsobj.cli.exits import ExitCode
from natsobj.local.embedded import NatsCluster
from natsobj.settings import ConnectionSettings

FAILOVER = 2.0
API = 1.0
# The failover timeout, the attempt under way (api_timeout), the two probes that name what is
# missing, and room for a loaded machine: well under the default failover_timeout.
BOUND = FAILOVER + API + 2 * FAILOVER_ATTEMPT_TIMEOUT + 4.0


def _through_url(url: str, bucket: str) -> str:
    with (
        natsobj.connect(f"{url}?failover_timeout={FAILOVER:g}&api_timeout={API:g}") as client,
        pytest.raises(natsobj.ClusterUnavailable) as failure,
    ):
        client.store(bucket).put("anything", b"x")
    return str(failure.value)


def _through_fsspec(url: str, bucket: str) -> str:
    from natsobj.fs import NatsObjectFileSystem

    fs = NatsObjectFileSystem(
        url, failover_timeout=FAILOVER, api_timeout=API, skip_instance_cache=True
    )
    with pytest.raises(natsobj.ClusterUnavailable) as failure:
        fs.pipe_file(f"{bucket}/anything", b"x")
    return str(failure.value)


def _through_cli(url: str, bucket: str) -> str:
    args = ["--url", url, "--failover-timeout", f"{FAILOVER:g}", "--api-timeout", f"{API:g}"]
    result = CliRunner().invoke(cli, [*args, "put", bucket, "anything", "-"], input=b"x")
    assert result.exit_code == ExitCode.CONNECTION, result.output
    return result.output


FACES: dict[str, Callable[[str, str], str]] = {
    "url": _through_url,
    "fsspec": _through_fsspec,
    "cli": _through_cli,
}


@pytest.mark.parametrize("face", sorted(FACES))
def test_a_small_failover_timeout_bounds_a_call_on_a_cluster_without_quorum(
    face: str, cluster: NatsCluster, r3_bucket: str
) -> None:
    assert ConnectionSettings().failover_timeout > BOUND  # else the bound proves nothing
    survivor = 0
    for index in range(1, len(cluster.nodes)):
        cluster.kill(index)
    started = time.monotonic()
    message = FACES[face](cluster.urls[survivor], r3_bucket)
    elapsed = time.monotonic() - started
    assert FAILOVER <= elapsed < BOUND, (elapsed, message)
    assert f"{FAILOVER:g}s" in message, message  # "... meta leader for 2s ..."
