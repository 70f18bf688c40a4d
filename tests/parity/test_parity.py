"""Every call of the parity matrix (tests/parity/matrix.py) passes on ``s3://`` (s3fs and the
libraries' own S3 readers on a moto server process) and gives the same result on ``nats://``;
each route it takes for ``nats://`` is documented in docs/data-stack.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parity.matrix import CASES, Case, Side

ROOT = Path(__file__).resolve().parents[2]


def case_id(case: Case) -> str:
    return f"{case.library}: {case.name}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_nats_gives_what_s3_gives(
    case: Case, s3_side: Side, nats_side: Side, tmp_path: Path
) -> None:
    slug = "".join(c if c.isalnum() else "-" for c in case_id(case)).strip("-")
    (tmp_path / "s3").mkdir()
    (tmp_path / "nats").mkdir()
    expected = case.call(s3_side.at(slug, tmp_path / "s3"))
    nats = nats_side.at(slug, tmp_path / "nats")
    got = (case.route or case.call)(nats)
    assert got == expected


def test_every_route_is_in_the_data_stack_doc() -> None:
    doc = (ROOT / "docs" / "data-stack.md").read_text()
    routed = [case for case in CASES if case.route is not None]
    assert routed and all(case.doc for case in routed)
    missing = [case.doc for case in routed if case.doc not in doc]
    assert not missing, f"docs/data-stack.md has no row for {missing}"
