"""The operation options table itself (``natsobj.operation_options``): each kind reads every
spelling users write the one way, a bad value is refused naming the face's spelling, and
``docs/options.md`` shows the table as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from natsobj.operation_options import ALL_FACES, Face, defaults_table, options, resolve
from tests.contract.cases import SPELLINGS, spellings

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "options.md"


@pytest.mark.parametrize("option", list(options()), ids=lambda o: f"{o.operation}.{o.name}")
def test_every_spelling_parses_to_its_value(option) -> None:
    for given, expected in spellings(option):
        assert option.parse(given) == expected, (option.name, given)


@pytest.mark.parametrize("option", list(options()), ids=lambda o: f"{o.operation}.{o.name}")
def test_every_face_default_is_a_valid_value(option) -> None:
    for face in ALL_FACES:
        if option.takes(face):
            value = option.default_for(face)
            assert value is None or option.parse(value) == value, (face, value)


def test_kinds_covered() -> None:
    """Every kind an option has is either spelled in SPELLINGS or is a vocabulary."""
    for option in options():
        assert option.kind in SPELLINGS or option.choices, option


@pytest.mark.parametrize("bad", ["ture", "of", "2", "maybe"])
def test_bad_bool_is_refused_with_the_face_spelling(bad) -> None:
    with pytest.raises(ValueError, match="includeDeletes") as info:
        resolve(Face.SPARK, "follow", {"include_deletes": bad})
    assert bad in str(info.value)


def test_position_refuses_zero_and_words() -> None:
    for bad in ("0", "-3", "soon"):
        with pytest.raises(ValueError, match="start_at"):
            resolve(Face.AIRFLOW, "follow", {"start": bad})


def test_face_defaults_come_from_the_table() -> None:
    assert resolve(Face.AIRFLOW, "follow", {})["start"] == "latest"
    assert resolve(Face.CLI, "follow", {})["include_deletes"] is True
    assert resolve(Face.DAGSTER, "follow", {})["include_deletes"] is False


def test_docs_show_the_table() -> None:
    text = DOC.read_text()
    assert defaults_table() in text, (
        "docs/options.md is out of date: paste natsobj.operation_options.defaults_table()"
    )


def test_every_face_that_takes_options_has_its_contract_test() -> None:
    """tests/contract/test_<face>.py turns the table's cases into real calls of that face."""
    contract = Path(__file__).resolve().parents[1] / "contract"
    taking = {face for option in options() for face in option.faces}
    missing = [face.value for face in taking if not (contract / f"test_{face.value}.py").is_file()]
    assert not missing, f"faces whose options no contract test covers: {missing}"
