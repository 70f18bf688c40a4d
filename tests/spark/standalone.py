"""A Spark standalone cluster on loopback, from the pyspark wheel's own classes.

A master and ``workers`` workers run as separate JVMs (``java -cp <pyspark>/jars/*`` with the
wheel's launcher classes, one JVM start each instead of ``spark-class``'s two); the executors
the workers start for an application are JVMs of their own with their own Python workers, as
on a real cluster. Everything is stopped by PID.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from natsobj.local.embedded import free_port

SPARK_HOME = Path(pyspark.__file__).parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DAEMON_MEMORY = "256m"
EXECUTOR_CLASS = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"


@dataclass
class SparkStandalone:
    """``start()`` returns once every worker has registered with the master."""

    work_dir: Path
    workers: int = 2
    worker_memory: str = "1g"
    master_port: int = field(default_factory=free_port)
    master_ui_port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def worker_pids(self) -> list[int]:
        return [p.pid for p in self.processes[1:]]

    def _launch(self, name: str, cls: str, *args: str) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            # what bin/load-spark-env.sh exports: the launcher that builds executor command
            # lines needs it, since the wheel has no RELEASE file marking a binary distribution
            "SPARK_SCALA_VERSION": "2.13",
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.work_dir),
            "PYSPARK_PYTHON": sys.executable,
        }
        log = open(self.work_dir / f"{name}.log", "wb")  # noqa: SIM115 - the child owns it
        with log:
            return subprocess.Popen(
                ["java", f"-Xmx{DAEMON_MEMORY}", "-cp", str(SPARK_HOME / "jars" / "*"), cls, *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def start(self, timeout: float = 120.0) -> str:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.processes.append(
            self._launch(
                "master",
                MASTER_CLASS,
                *("--host", "127.0.0.1", "--port", str(self.master_port)),
                *("--webui-port", str(self.master_ui_port)),
            )
        )
        for index in range(self.workers):
            self.processes.append(
                self._launch(
                    f"worker{index}",
                    WORKER_CLASS,
                    self.master_url,
                    *("--host", "127.0.0.1", "--port", str(free_port())),
                    *("--webui-port", str(free_port()), "--cores", "1"),
                    *("--memory", self.worker_memory),
                    *("--work-dir", str(self.work_dir / f"worker{index}")),
                )
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited early; see logs in {self.work_dir}")
            with contextlib.suppress(OSError, ValueError):
                alive = [w for w in self.state().get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) == self.workers:
                    return self.master_url
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"Spark workers did not register within {timeout:g}s: {self.work_dir}")

    def state(self) -> dict:
        """The master's JSON status: workers, running and completed applications."""
        url = f"http://127.0.0.1:{self.master_ui_port}/json/"
        with urllib.request.urlopen(url, timeout=5.0) as response:
            return json.loads(response.read())

    def executor_pids(self) -> list[int]:
        """PIDs of executor JVMs that our workers started (children of the worker JVMs)."""
        workers = set(self.worker_pids)
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid in workers and EXECUTOR_CLASS in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
        return sorted(found)

    def stop(self, timeout: float = 20.0) -> None:
        """Workers first (they stop their executors), then the master; SIGKILL stragglers."""
        executors = self.executor_pids()
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pid in executors:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.processes.clear()
