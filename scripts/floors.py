"""natsobj's dependencies at exactly their declared floors, for ``make test-compat``.

``floors.py --constraints`` prints ``name==floor`` for every floor (``--uv-args`` the
packages held at a floor release's day, ``FLOOR_DAYS``); the target installs with
them as uv constraints (and ``--resolution lowest-direct`` for the test tools), because
lowest-direct alone may still pick a newer floor when a transitive dependency it keeps at its
newest needs one (Dagster went up with protobuf). Without arguments it checks, with the
environment's own interpreter, that every floor is installed exactly, so the face suites never
pass on a newer version than pyproject.toml promises. The few a test peer forces higher
(``RAISED_BY_PEERS``) are said so, with the peer."""

from __future__ import annotations

import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
# Test tools are not floors users get: the suite's needs decide their versions.
NOT_FLOORS = ("dev",)
# Floors the test environment cannot hold, because a peer the suites compare with needs more:
# installed at the lowest the resolver then allows, and checked to be at least the floor.
RAISED_BY_PEERS = {
    "fsspec": "s3fs, the parity peer, pins its own fsspec and needs a botocore of 2025 or later",
    "aiohttp": "aiobotocore (s3fs, moto) needs aiohttp 3.9.2 or later",
}
# A floor release is tested beside the packages of its day, as its project's constraints
# file installs it: those packages are taken as uploaded before that release. (Airflow 3.1.0
# needs its stack of 2025-09-26: newer cadwyn, fastapi, SQLAlchemy and structlog break it.
# pandas 2.1 is built against numpy 1 and does not import beside numpy 2.)
FLOOR_DAYS: dict[str, tuple[str, ...]] = {
    "2025-09-26T00:00:00Z": (  # Airflow 3.1.0
        "alembic",
        "cadwyn",
        "fastapi",
        "msgspec",
        "pydantic",
        "pydantic-core",
        "sqlalchemy",
        "sqlalchemy-utils",
        "starlette",
        "structlog",
        "uvicorn",
    ),
    "2023-08-30T00:00:00Z": ("numpy",),  # pandas 2.1.0
}


def floors(project: dict[str, object]) -> dict[str, Version]:
    """The ``>=`` bound of every dependency and every users' extra, by distribution name."""
    texts = list(project["dependencies"])  # type: ignore[call-overload]
    extras: dict[str, list[str]] = project["optional-dependencies"]  # type: ignore[assignment]
    texts += [t for extra, ts in extras.items() if extra not in NOT_FLOORS for t in ts]
    found: dict[str, Version] = {}
    for requirement in map(Requirement, texts):
        for spec in requirement.specifier:
            if spec.operator == ">=":
                found[requirement.name] = Version(spec.version)
    return found


def off_floor(wanted: dict[str, Version]) -> list[str]:
    """Each distribution installed at another version than its floor, or not installed."""
    wrong = []
    for name, floor in sorted(wanted.items()):
        try:
            installed = Version(version(name))
        except PackageNotFoundError:
            wrong.append(f"{name}: not installed (floor {floor})")
            continue
        if name in RAISED_BY_PEERS:
            if installed < floor:
                wrong.append(f"{name}: {installed} installed, below the floor {floor}")
        elif installed != floor:
            wrong.append(f"{name}: {installed} installed, floor {floor}")
    return wrong


if __name__ == "__main__":
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    if sys.argv[1:] == ["--uv-args"]:
        for day, names in FLOOR_DAYS.items():
            print(" ".join(f"--exclude-newer-package {name}={day}" for name in names))
        sys.exit(0)
    if sys.argv[1:] == ["--constraints"]:
        for name, floor in sorted(floors(project).items()):
            if name not in RAISED_BY_PEERS:
                print(f"{name}=={floor}")

        sys.exit(0)
    wrong = off_floor(floors(project))
    for line in wrong:
        print(f"floors.py: {line}", file=sys.stderr)
    sys.exit(1 if wrong else 0)
