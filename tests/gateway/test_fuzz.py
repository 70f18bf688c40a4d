"""The gateway's parsers fuzzed (tests/gateway/fuzzing.py): coverage-guided with atheris for a
fixed budget per target (slow: ``make test-slow``), and every input of the corpus, the seeds
and each input that once found a defect, replayed in every run. No input may end in anything
but an S3 error: the gateway would answer it 500 with a traceback.

Found so far, kept in the corpus (``found-*``): a signed header whose bytes are not UTF-8
(aiohttp hands them on as surrogate escapes, and hashing the canonical request raised
UnicodeEncodeError), such bytes in x-amz-copy-source's key (measuring the key raised the
same), and a correctly signed x-amz-content-sha256 that is not ASCII (comparing it with the
body's hash raised TypeError). Two more were the harness's own, sending what aiohttp refuses
before the gateway sees it (raw bytes in the query); they stay as inputs all the same."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gateway.fuzzing import TARGETS, run

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).parent / "fuzz_corpus"
FUZZ_SECONDS = 60
CASES = sorted(
    (target.name, case) for target in CORPUS.iterdir() for case in sorted(target.iterdir())
)


def test_every_target_has_a_corpus() -> None:
    assert {target.name for target in CORPUS.iterdir()} == set(TARGETS)


@pytest.mark.parametrize(("target", "case"), CASES, ids=[f"{t}/{c.name}" for t, c in CASES])
def test_no_input_of_the_corpus_ends_in_anything_but_an_s3_error(target: str, case: Path) -> None:
    run(target, case.read_bytes())


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzzing_finds_no_input_that_ends_in_a_500(target: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS / target, corpus)  # libFuzzer adds what it finds to its corpus
    findings = tmp_path / "findings"
    findings.mkdir()
    done = subprocess.run(
        [
            sys.executable, "-m", "tests.gateway.fuzzing", target,
            f"-max_total_time={FUZZ_SECONDS}", f"-artifact_prefix={findings}/",
            "-rss_limit_mb=2048", str(corpus),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=FUZZ_SECONDS * 4, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    found = sorted(findings.iterdir())
    assert done.returncode == 0 and not found, (
        f"{target}: {[p.name for p in found]}: copy each into tests/gateway/fuzz_corpus/{target}/"
        f" as a regression input, then fix the parser.\n{done.stderr[-4000:]}"
    )


def test_a_signed_header_that_is_not_utf8_is_answered_403_not_500(gateway) -> None:  # type: ignore[no-untyped-def]
    """The sigv4 finding through a real gateway: the request's bytes as a client sends them."""
    import socket
    from datetime import UTC, datetime

    from tests.gateway.conftest import ACCESS_KEY

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    authorization = (
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{stamp[:8]}/us-east-1/s3/aws4_request,"
        " SignedHeaders=host;x-amz-content-sha256;x-amz-copy-source;x-amz-date,"
        f" Signature={'0' * 64}"
    )
    request = (
        b"PUT /b/k HTTP/1.1\r\nHost: x\r\nx-amz-copy-source: b/\xf5\xc2\r\n"
        + f"x-amz-date: {stamp}\r\nx-amz-content-sha256: UNSIGNED-PAYLOAD\r\n".encode()
        + f"Authorization: {authorization}\r\nContent-Length: 0\r\n\r\n".encode()
    )
    host, port = gateway.endpoint.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 403 "), answer[:300]
    assert b"<Code>SignatureDoesNotMatch</Code>" in answer
