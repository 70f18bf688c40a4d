"""A face whose extra is not installed says which extra to install: each case runs in a fresh
interpreter whose import system refuses the extra's library (a ``sys.meta_path`` finder, as a
missing package looks to ``import``), and reads what the user would read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Put first on sys.meta_path: the named top-level modules are not there, as in a venv
# without them.
BLOCKER = """
import sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Absent())
"""


def run_without(blocked: set[str], code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env_path = f"{ROOT}:{ROOT / 'providers'}"
    return subprocess.run(
        [sys.executable, "-c", BLOCKER.format(blocked=blocked) + code, *args],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": env_path, "HOME": str(ROOT)},
    )  # fmt: skip


IMPORT_AND_SAY = """
try:
    import {face}
except ImportError as exc:
    from natsobj.errors import MissingExtra
    print(type(exc).__name__, isinstance(exc, MissingExtra), exc)
else:
    print("imported")
"""


@pytest.mark.parametrize(
    ("face", "blocked", "package", "extra", "module"),
    [
        ("natsobj.spark", {"pyarrow"}, "natsobj.spark", "spark", "pyarrow"),
        ("natsobj.spark", {"pyspark"}, "natsobj.spark", "spark", "pyspark"),
        ("pyspark_natsobj", {"pyspark"}, "natsobj.spark", "spark", "pyspark"),
        ("natsobj.archive", {"obstore"}, "natsobj.archive", "archive", "obstore"),
        ("dagster_natsobj", {"dagster"}, "dagster_natsobj", "dagster", "dagster"),
        ("airflow_natsobj.hooks", {"airflow"}, "airflow_natsobj", "airflow", "airflow"),
        ("natsobj.polars", {"polars"}, "natsobj.polars", "polars", "polars"),
        ("natsobj.polars", {"pyarrow"}, "natsobj.polars", "polars", "pyarrow"),
        ("natsobj.arrow", {"pyarrow"}, "natsobj.arrow", "arrow", "pyarrow"),
        ("natsobj.pipes", {"dagster_pipes"}, "natsobj.pipes", "pipes", "dagster_pipes"),
        ("natsobj.gateway", {"aiohttp"}, "natsobj.gateway", "gateway", "aiohttp"),
    ],
)
def test_importing_a_face_without_its_extra_names_the_extra(
    face: str, blocked: set[str], package: str, extra: str, module: str
) -> None:
    done = run_without(blocked, IMPORT_AND_SAY.format(face=face))
    assert done.returncode == 0, done.stderr[-2000:]
    kind, typed, text = done.stdout.strip().split(" ", 2)
    assert (kind, typed) == ("MissingExtra", "True"), done.stdout
    assert text.startswith(f"{package} needs the {extra} extra"), text
    assert f"pip install 'natsobj[{extra}]'" in text and repr(module) in text, text


def test_the_core_and_fsspec_import_without_any_extra() -> None:
    done = run_without(
        {"pyspark", "pyarrow", "pandas", "obstore", "airflow", "dagster", "polars", "aiohttp"},
        "import natsobj, natsobj.fs, natsobj.cli; print('ok')",
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_presigned_urls_need_no_gateway_extra() -> None:
    """``natsobj presign`` and the filesystem's ``sign`` make the gateway's URLs on a machine
    without aiohttp: the signature rule lives outside the gateway package."""
    done = run_without(
        {"aiohttp"},
        "from natsobj.cli import main; main()",
        "--gateway-url", "http://127.0.0.1:9000", "--gateway-access-key", "K",
        "--gateway-secret", "S", "presign", "s3://b/k",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("http://127.0.0.1:9000/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&")
    signed = run_without(
        {"aiohttp"},
        "import sys; from natsobj.fs import NatsObjectFileSystem as F;"
        " fs = F(gateway_url='http://127.0.0.1:9000', gateway_access_key='K',"
        " gateway_secret='S');"
        " print(fs.sign('nats://b/k').split('?')[0], 'aiohttp' in sys.modules)",
    )
    assert signed.stdout.split() == ["http://127.0.0.1:9000/b/k", "False"], signed.stderr


def test_natsobj_archive_run_without_obstore_names_the_extra(nats_url: str) -> None:
    done = run_without(
        {"obstore"},
        "from natsobj.cli import main; main()",
        "--url", nats_url, "archive", "run", "some-bucket", "--to", "s3://b/p", "--once",
    )  # fmt: skip
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.strip() == (
        "natsobj: natsobj.archive needs the archive extra: pip install 'natsobj[archive]'"
        " (no module named 'obstore')"
    ), done.stderr


def test_each_extra_names_the_modules_of_its_distributions() -> None:
    """``natsobj.extras`` looks for the modules of what pyproject.toml's extra installs."""
    import tomllib

    from packaging.requirements import Requirement

    from natsobj.extras import EXTRA_MODULES

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    module_of = {
        "apache-airflow": "airflow",
        "apache-airflow-providers-common-io": None,
        "apache-airflow-providers-common-messaging": None,
        "dagster-pipes": "dagster_pipes",
        "prometheus-client": "prometheus_client",
    }
    for extra, modules in EXTRA_MODULES.items():
        wanted = {module_of.get(n, n) for n in (Requirement(t).name for t in extras[extra])}
        assert set(modules) == wanted - {None}, (extra, modules, wanted)
