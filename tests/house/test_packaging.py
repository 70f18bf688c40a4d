"""Each extra carries what its face needs: an Airflow or Dagster worker installs no JVM data
engine and no plotting library; ``all`` still installs everything; the README's install lines
name real extras."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.source_strings import strings_outside_docstrings

ROOT = Path(__file__).resolve().parents[2]
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


@pytest.mark.unit
@pytest.mark.parametrize("extra", ["airflow", "dagster"])
def test_face_extras_pull_no_spark_and_no_plotting(extra: str) -> None:
    assert not closure(extra) & {"pyspark", "matplotlib"}, closure(extra)


@pytest.mark.unit
def test_examples_and_all_still_install_everything() -> None:
    assert {"pyspark", "matplotlib", "apache-airflow", "dagster"} <= closure("examples")
    assert closure("all") == set().union(*(closure(e) for e in EXTRAS if e not in ("all", "dev")))


@pytest.mark.unit
def test_every_dependency_has_a_lower_bound() -> None:
    for text in [*PROJECT["dependencies"], *(t for ts in EXTRAS.values() for t in ts)]:
        requirement = Requirement(text)
        if requirement.name != PROJECT["name"]:
            assert requirement.specifier, f"{text}: no lower bound"


@pytest.mark.unit
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


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheel and the sdist ``uv build`` makes of this tree, as they would go to PyPI."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv builds the distributions (it is in the dev extra)"
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [uv, "build", "-q", "--out-dir", str(out), str(ROOT)], check=True, timeout=600
    )  # fmt: skip
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return wheel, sdist


def test_the_wheel_carries_the_license_and_the_project_urls(built: tuple[Path, Path]) -> None:
    import email
    import zipfile

    with zipfile.ZipFile(built[0]) as wheel:
        names = wheel.namelist()
        (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert "Apache License" in wheel.read(license_file).decode()
        (metadata_file,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(wheel.read(metadata_file))
    assert metadata["License-Expression"] == "Apache-2.0"
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL") or [])
    assert set(urls) == {"Homepage", "Documentation", "Source", "Issues", "Changelog"}, urls
    assert all(u.startswith("https://github.com/natsobj/natsobj") for u in urls.values()), urls


def test_the_sdist_ships_the_tests_but_no_ci_script_or_local_state(
    built: tuple[Path, Path],
) -> None:
    import tarfile

    with tarfile.open(built[1]) as sdist:
        top = {name.split("/", 2)[1] for name in sdist.getnames() if name.count("/") >= 1}
        paths = [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]
    assert {"LICENSE", "README.md", "natsobj", "tests", "docs"} <= top, sorted(top)
    assert not top & {".ci", ".venv", ".venv-compat", ".natsobj", ".demo"}, sorted(top)
    assert not [p for p in paths if p.startswith("benchmarks/results/") or "node_modules" in p]


@pytest.mark.unit
def test_no_relative_link_in_the_readme() -> None:
    """The README is the PyPI page, where only absolute links lead anywhere."""
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", readme) + re.findall(r"<a\s+href=\"([^\"]+)\"", readme)
    assert targets, "the README has no links at all: the pattern is wrong"
    relative = [t for t in targets if not re.match(r"(https?|mailto):", t)]
    assert not relative, relative


@pytest.mark.unit
def test_no_message_points_at_a_docs_file_the_wheel_does_not_ship() -> None:
    """Messages link to the docs' address (``natsobj.docs.doc_url``), never to ``docs/X.md``."""
    shipped = [ROOT / "natsobj", ROOT / "providers", ROOT / "dagster_natsobj"]
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for folder in shipped
        for path in sorted(folder.rglob("*.py"))
        for node in strings_outside_docstrings(ast.parse(path.read_text()))
        if re.search(r"(?<![\w/.])docs/[\w-]+\.md", node.value)
    ]
    assert not found, found


@pytest.mark.unit
def test_the_core_imports_only_what_its_dependencies_declare() -> None:
    """``pip install natsobj`` alone must import: every third-party module the core imports at
    module level (the faces with extras aside) belongs to a declared dependency."""
    from importlib.metadata import packages_distributions

    faces = {"spark", "archive", "gateway"}  # their extras' modules; natsobj.extras names the extra
    # natsobj.upath is imported by universal_pathlib itself (its implementations entry point)
    plugins = {"upath.py"}
    declared = {Requirement(t).name.lower() for t in PROJECT["dependencies"]}
    owners = packages_distributions()
    stdlib = sys.stdlib_module_names
    missing = []
    for path in sorted((ROOT / "natsobj").rglob("*.py")):
        if set(path.relative_to(ROOT / "natsobj").parts[:1]) & (faces | plugins):
            continue
        body = ast.parse(path.read_text()).body
        if any(_calls_require_extra(node) for node in body):
            continue  # a face module that names its extra before importing it
        for node in body:
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                and not node.level else []
            )  # fmt: skip
            for name in names:
                top = name.split(".")[0]
                if top in stdlib or top == "natsobj":
                    continue
                dists = {d.lower() for d in owners.get(top, [top])}
                if not dists & declared:
                    missing.append(f"{path.relative_to(ROOT)}: {name} ({sorted(dists)})")
    assert not missing, missing


def _calls_require_extra(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", None) == "require_extra"
    )
