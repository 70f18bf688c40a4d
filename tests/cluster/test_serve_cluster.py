"""``natsobj serve --cluster 3``: a laptop cluster to try failover on."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import natsobj
from tests.cluster.harness import stream_leader

NATSOBJ_BIN = Path(sys.executable).parent / "natsobj"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split()[2] == "Z")


def test_serve_cluster_survives_a_killed_leader_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS")}
    server = subprocess.Popen(
        [str(NATSOBJ_BIN), "serve", "--cluster", "3", "--data-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    pids: dict[str, int] = {}
    try:
        assert server.stdout is not None and server.stderr is not None
        url = server.stdout.readline().decode().strip()
        urls = url.split(",")
        assert len(urls) == 3, server.stderr.read().decode()[-2000:]
        node_lines = [server.stderr.readline().decode() for _ in range(3)]
        assert "serving a 3-node cluster" in server.stderr.readline().decode()
        pids = {
            name: int(pid)
            for name, pid in (
                re.match(r"(n\d): \S+ \(pid (\d+)", line).groups()  # type: ignore[union-attr]
                for line in node_lines
            )
        }
        assert sorted(pids) == ["n1", "n2", "n3"]
        assert all((tmp_path / "cluster" / name / "server.conf").exists() for name in pids)

        with natsobj.connect(url) as client:
            store = client.create_store("laptop", replicas=3)
            assert store.put("model.bin", b"weights" * 1000).size == 7000
            # n1's /jsz names the stream's leader once n1 has heard of the election
            deadline = time.monotonic() + 15
            while (leader := stream_leader(_jsz(tmp_path, pids), "OBJ_laptop")) is None:
                assert time.monotonic() < deadline, "no node reported a leader for OBJ_laptop"
                time.sleep(0.1)
            assert leader in pids
            os.kill(pids[leader], signal.SIGKILL)
            assert store.get_bytes("model.bin") == b"weights" * 1000
        report = server.stderr.readline().decode()
        assert f"{leader} exited" in report and "2 of 3 nodes left" in report

        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
    except BaseException:
        _kill(pids)  # a failure leaves no node running
        raise
    finally:
        _stop(server)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [name for name, pid in pids.items() if _alive(pid)]
    _kill(pids)
    assert not left, f"serve left {left} running after Ctrl-C"
    assert server.returncode == 0, err
    assert "Traceback" not in err.decode()


def _stop(server: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, as a user stops ``serve`` (it stops its detached nodes); killed if it hangs."""
    if server.poll() is None:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _kill(pids: dict[str, int]) -> None:
    """Kill, by the PIDs ``serve`` printed, any node still running."""
    for pid in pids.values():
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _jsz(data_dir: Path, pids: dict[str, int]) -> dict:
    """Any node's /jsz, found through its config file."""
    import json
    import urllib.request

    text = (data_dir / "cluster" / "n1" / "server.conf").read_text()
    port = re.search(r"^http: 127\.0\.0\.1:(\d+)$", text, re.M).group(1)  # type: ignore[union-attr]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/jsz?accounts=1&streams=1") as reply:
        return json.loads(reply.read())
