"""Each extra carries what its face needs: an Airflow or Dagster worker installs no JVM data
engine and no plotting library; ``all`` still installs everything; the README's install lines
name real extras."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]


def closure(extra: str) -> set[str]:
    """The distributions an extra pulls in from this project's own declarations."""
    names: set[str] = set()
    for text in EXTRAS[extra]:
        requirement = Requirement(text)
        if requirement.name == PROJECT["name"]:
            for inner in requirement.extras:
                names |= closure(inner)
        else:
            names.add(requirement.name)
    return names


@pytest.mark.parametrize("extra", ["airflow", "dagster"])
def test_face_extras_pull_no_spark_and_no_plotting(extra: str) -> None:
    assert not closure(extra) & {"pyspark", "matplotlib"}, closure(extra)


def test_examples_and_all_still_install_everything() -> None:
    assert {"pyspark", "matplotlib", "apache-airflow", "dagster"} <= closure("examples")
    assert closure("all") == set().union(*(closure(e) for e in EXTRAS if e not in ("all", "dev")))


def test_every_dependency_has_a_lower_bound() -> None:
    for text in [*PROJECT["dependencies"], *(t for ts in EXTRAS.values() for t in ts)]:
        requirement = Requirement(text)
        if requirement.name != PROJECT["name"]:
            assert requirement.specifier, f"{text}: no lower bound"


def test_readme_install_lines_name_real_extras() -> None:
    readme = (ROOT / "README.md").read_text()
    used = {e for group in re.findall(r"natsobj\[([a-z,\-]+)\]", readme) for e in group.split(",")}
    assert used, "the README shows no install line"
    assert used <= set(EXTRAS), used - set(EXTRAS)


def test_a_clean_venv_resolves_the_airflow_extra_without_pyspark(tmp_path: Path) -> None:
    """A resolver dry run of ``pip install natsobj[airflow]`` into a fresh virtualenv."""
    # uv comes with the dev extra, next to the interpreter running the suite
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv is needed for the resolver dry run (it is in the dev extra)"
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", str(venv), "--python", "3.11"], check=True, timeout=120)
    done = subprocess.run(
        [uv, "pip", "install", "--dry-run", "--python", str(venv / "bin" / "python"),
         f"{ROOT}[airflow]"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    planned = {
        line.split()[1].split("==")[0].lower()
        for line in done.stderr.splitlines()
        if line.strip().startswith("+ ")
    }
    assert "apache-airflow" in planned and "natsobj" in planned, done.stderr[-3000:]
    assert not planned & {"pyspark", "matplotlib", "py4j"}, sorted(planned)
