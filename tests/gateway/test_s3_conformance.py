"""The S3 conformance suite Ceph uses (ceph/s3-tests), pinned in ``../shared/s3-tests``, run on
three selections against the gateway on a real nats-server, each held to its section of
docs/gateway.md: the data path (``run-selection.sh`` as it is), versions and Object Lock
(``run-selection.sh`` with the suite's versioning, delete-marker and Object Lock tests named by
``-k``, its exclusions by marker unchanged), and lifecycle configuration (the suite's
``lifecycle`` tests that set and read rules, by ``-m`` and ``-k``: those that wait for rules to
act, ``lifecycle_expiration`` and ``lifecycle_transition``, are left out).

Each section is the contract: its table names every test of the selection
that fails, with the reason. This run must fail exactly those (a row whose reason starts with
"Intermittent" may pass or fail), so a test that starts passing and a test that starts failing
both stop the build until the table says so; and the count the section states must be what the
table implies. The suite's own virtualenv (its ``requirements.txt``, installed with uv) is kept
in ``.venv-s3tests/`` keyed by the requirements' hash, so a fresh clone builds it once."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from natsobj.local.embedded import NatsServerProcess
from tests.gateway.conftest import GatewayThread

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "gateway.md"
SUITE_ENV = "NATSOBJ_S3_TESTS"
VENVS = ROOT / ".venv-s3tests"


@dataclass(frozen=True)
class Selection:
    """One selection of the suite: its docs section, how many tests it collects, and the
    arguments ``run-selection.sh`` is given."""

    heading: str
    collected: int
    args: tuple[str, ...] = ()


DATA_PATH = Selection(
    "## Conformance: ceph/s3-tests", 199
)  # what SELECTION.md says the selection collects
VERSIONS = Selection(
    "## Conformance: versions and Object Lock",
    67,
    ("-k", "(versioning or versioned or delete_marker or object_lock) and not acl"),
)
LIFECYCLE = Selection(
    "## Conformance: lifecycle configuration",
    15,
    (
        "-m",
        "lifecycle and not lifecycle_expiration and not lifecycle_transition",
        "-k",
        "lifecycle",
    ),
)
SELECTIONS = pytest.mark.parametrize(
    "selection", [DATA_PATH, VERSIONS, LIFECYCLE], ids=["data", "versions", "lifecycle"]
)

MAIN_KEY, MAIN_SECRET = "MAINKEY", "s3tests-main-secret"
ALT_KEY, ALT_SECRET = "ALTKEY", "s3tests-alt-secret"
# The suite's two users, both acting as the gateway's own NATS identity, and unsigned requests
# acting as it too: the suite reads the buckets it publishes public-read without signing.
CREDENTIALS = f"""\
[keys.{MAIN_KEY}]
secret = "{MAIN_SECRET}"

[keys.{ALT_KEY}]
secret = "{ALT_SECRET}"

[anonymous]
"""


def suite_dir() -> Path:
    """``$NATSOBJ_S3_TESTS``, else ``../shared/s3-tests`` beside the project; missing fails."""
    configured = os.environ.get(SUITE_ENV)
    path = Path(configured) if configured else ROOT.parent / "shared" / "s3-tests"
    if not (path / "run-selection.sh").is_file() or not (path / "requirements.txt").is_file():
        pytest.fail(
            f"the pinned ceph/s3-tests suite is not at {path} (no run-selection.sh and "
            f"requirements.txt there): put it at ../shared/s3-tests beside the project, or "
            f"point {SUITE_ENV} at it"
        )
    return path


def _uv() -> str:
    """The uv the Makefile installs into the project's virtualenv, else the one on PATH."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert found, "uv is needed to build the s3-tests virtualenv (make test installs it)"
    return found


def suite_python(suite: Path) -> Path:
    """A Python with the suite's requirements, built once per requirements' hash (and Python
    version) under ``.venv-s3tests/``; concurrent runs wait on a lock instead of racing."""
    requirements = suite / "requirements.txt"
    key = hashlib.sha256(
        requirements.read_bytes() + f"{sys.version_info[:2]}".encode()
    ).hexdigest()[:16]
    venv = VENVS / key
    python = venv / "bin" / "python"
    done = venv / ".installed"
    VENVS.mkdir(exist_ok=True)
    with open(VENVS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(venv, ignore_errors=True)  # what an interrupted build left
            uv = _uv()
            for command in (
                [uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
                [uv, "pip", "install", "--quiet", "--python", str(python), "-r", str(requirements)],
            ):
                built = subprocess.run(command, capture_output=True, text=True, timeout=600)
                assert built.returncode == 0, f"{' '.join(command)}:\n{built.stderr}"
            done.touch()
    return python


@dataclass(frozen=True)
class Documented:
    """docs/gateway.md's conformance claims: the stated pass count out of the selection, the
    failing tests of its table, and those of them in rows marked intermittent."""

    passing: int
    collected: int
    failing: frozenset[str]
    intermittent: frozenset[str]


def documented(text: str, heading: str) -> Documented:
    """Parse a conformance section: ``**N of M pass**`` and the table of failures, whose
    rows are ``| reason | count | `test_a`, `test_b` |`` (a row's count must match its names)."""
    section = text.split(heading + "\n", 1)[1].split("\n## ", 1)[0]
    stated = re.search(r"\*\*(\d+) of (\d+) pass\*\*", section)
    assert stated, f"docs/gateway.md's {heading!r} section states no '**N of M pass**'"
    failing: list[str] = []
    intermittent: set[str] = set()
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 3 or not cells[1].isdigit():
            continue  # not a row of the table (its header, its rule, prose)
        names = re.findall(r"`(test_\w+)`", cells[-1])
        assert len(names) == int(cells[1]), f"docs/gateway.md counts {cells[1]} in: {line}"
        failing += names
        if cells[0].lower().startswith("intermittent"):
            intermittent.update(names)
    duplicated = sorted({name for name in failing if failing.count(name) > 1})
    assert not duplicated, f"docs/gateway.md lists these twice: {duplicated}"
    return Documented(int(stated[1]), int(stated[2]), frozenset(failing), frozenset(intermittent))


def outcomes(junit: Path) -> dict[str, str]:
    """Each test's outcome from pytest's JUnit XML: "passed", or why not ("failed", "error" or
    "skipped", then the first line of pytest's message); an error in a passed test's teardown
    makes it an error."""
    found: dict[str, str] = {}
    for case in ET.parse(junit).iter("testcase"):
        name = case.get("name", "")
        verdict = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if verdict is None:
            found.setdefault(name, "passed")
        else:
            outcome = {"failure": "failed"}.get(verdict.tag, verdict.tag)
            message = (verdict.get("message") or "").strip().split("\n")[0][:200]
            found[name] = f"{outcome}: {message}"
    return found


@SELECTIONS
def test_the_docs_table_agrees_with_its_count(selection: Selection) -> None:
    """The stated count is the selection minus the tests the table says always fail."""
    claims = documented(DOCS.read_text(), selection.heading)
    collected = selection.collected
    assert claims.collected == collected
    assert claims.passing == collected - len(claims.failing - claims.intermittent), (
        f"docs/gateway.md says {claims.passing} of {collected} pass, but its table lists "
        f"{len(claims.failing - claims.intermittent)} failing tests (intermittent ones aside)"
    )


@pytest.fixture
def gateway_for_the_suite(tmp_path: Path) -> Iterator[GatewayThread]:
    """A gateway on a nats-server of its own (the suite lists every bucket of the account)."""
    server = NatsServerProcess(tmp_path / "nats")
    server.start()
    keys = tmp_path / "keys.toml"
    keys.write_text(CREDENTIALS)
    keys.chmod(0o600)
    try:
        running = GatewayThread(server.url, keys)
        try:
            yield running
        finally:
            running.stop()
    finally:
        server.stop()


@SELECTIONS
@pytest.mark.timeout(1800)
def test_ceph_s3_tests_selection(
    gateway_for_the_suite: GatewayThread, tmp_path: Path, selection: Selection
) -> None:
    suite = suite_dir()
    python = suite_python(suite)
    endpoint = urlsplit(gateway_for_the_suite.endpoint)
    junit = tmp_path / "s3-tests.xml"
    ran = subprocess.run(
        [
            "bash",
            str(suite / "run-selection.sh"),
            str(endpoint.hostname),
            str(endpoint.port),
            MAIN_KEY,
            MAIN_SECRET,
            ALT_KEY,
            ALT_SECRET,
            f"--junitxml={junit}",
            *selection.args,
        ],
        env={**os.environ, "S3T_PY": str(python), "TAILN": "30"},
        capture_output=True,
        text=True,
        timeout=1700,
    )
    summary = ran.stdout + ran.stderr
    # pytest's exit codes: 0 all passed, 1 some failed; anything else is a broken run
    assert ran.returncode in (0, 1) and junit.exists(), f"s3-tests did not run:\n{summary}"
    results = outcomes(junit)
    claims = documented(DOCS.read_text(), selection.heading)
    collected = selection.collected
    assert len(results) == collected, f"the selection collected {len(results)}:\n{summary}"

    failed = {name for name, outcome in results.items() if outcome != "passed"}
    unlisted = sorted(failed - claims.failing)
    assert not unlisted, (
        "these s3-tests fail but docs/gateway.md's table does not list them:\n"
        + "\n".join(f"{name}: {results[name]}" for name in unlisted)
        + f"\n{summary}"
    )
    passing_now = sorted(claims.failing - claims.intermittent - failed)
    assert not passing_now, (
        "docs/gateway.md's table lists these as failing, but they pass: "
        f"{passing_now} (take them out of the table and raise the count)"
    )
    unknown = sorted(claims.failing - results.keys())
    assert not unknown, f"docs/gateway.md lists tests the selection does not collect: {unknown}"
    passed = collected - len(failed)
    assert passed >= claims.passing - len(claims.intermittent & failed)
