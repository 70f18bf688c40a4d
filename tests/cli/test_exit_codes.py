"""Each failure class has its own exit code and a one-line message; --debug adds the traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Invoke, lines, publish_raw

from natsobj.cli.exits import ExitCode
from natsobj.local.embedded import NatsServerProcess, free_port
from natsobj.model import digest_of
from natsobj.names import meta_subject


def assert_one_line_error(stderr: str, *needles: str) -> None:
    assert "Traceback" not in stderr
    assert len(lines(stderr)) == 1, stderr
    for needle in needles:
        assert needle in stderr, stderr


def test_usage_errors_exit_2_as_click_and_posix_tools_do(invoke: Invoke) -> None:
    missing_arg = invoke("info", "anybucket")
    assert missing_arg.exit_code == ExitCode.USAGE
    assert "Missing argument 'NAME'" in missing_arg.stderr

    bad_option = invoke("ls", "anybucket", "--bogus")
    assert bad_option.exit_code == ExitCode.USAGE

    bad_kv = invoke("meta", "set", "b", "n", "--metadata", "no-equals-sign")
    assert bad_kv.exit_code == ExitCode.USAGE
    assert "KEY=VALUE" in bad_kv.stderr

    nothing = invoke("meta", "set", "b", "n")
    assert nothing.exit_code == ExitCode.USAGE
    assert_one_line_error(nothing.stderr, "nothing to change")

    bad_bucket = invoke("ls", "no.dots.allowed")
    assert bad_bucket.exit_code == ExitCode.USAGE
    assert_one_line_error(bad_bucket.stderr, "no.dots.allowed")


def test_not_found_exits_3_naming_bucket_and_object(
    invoke: Invoke, bucket_name: str, store
) -> None:
    no_bucket = invoke("ls", "nosuchbucket")
    assert no_bucket.exit_code == ExitCode.NOT_FOUND
    assert_one_line_error(no_bucket.stderr, "nosuchbucket", "natsobj store create")

    no_object = invoke("info", bucket_name, "missing.txt")
    assert no_object.exit_code == ExitCode.NOT_FOUND
    assert_one_line_error(no_object.stderr, bucket_name, "missing.txt")

    get_missing = invoke("get", bucket_name, "missing.txt", "-")
    assert get_missing.exit_code == ExitCode.NOT_FOUND
    assert get_missing.stdout_bytes == b""


def test_exit_code_numbers_follow_the_documented_table() -> None:
    """Scripts hard-code these numbers: changing one is a breaking change."""
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0,
        "FAILED": 1,
        "USAGE": 2,
        "NOT_FOUND": 3,
        "DIGEST_MISMATCH": 4,
        "CONNECTION": 5,
    }


def test_debug_shows_the_traceback(invoke: Invoke) -> None:
    result = invoke("--debug", "ls", "nosuchbucket")
    assert result.exit_code == ExitCode.NOT_FOUND
    assert "Traceback" in result.stderr
    assert "BucketNotFound" in result.stderr


def test_unreachable_server_exits_5(invoke: Invoke) -> None:
    url = f"nats://127.0.0.1:{free_port()}"
    result = invoke("--timeout", "0.5", "stores", url=url)
    assert result.exit_code == ExitCode.CONNECTION
    assert_one_line_error(result.stderr)


def test_no_server_configured_exits_5_and_says_what_to_do(
    invoke: Invoke, isolated_cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NATS_URL", raising=False)
    result = invoke("stores", url=None)
    assert result.exit_code == ExitCode.CONNECTION
    assert_one_line_error(result.stderr, "--url", "natsobj serve")
    assert not (isolated_cwd / ".natsobj" / "server.json").exists()  # nothing was started


def test_bad_url_option_is_a_usage_error(invoke: Invoke) -> None:
    result = invoke("stores", url="nats://127.0.0.1:4222?colour=blue")
    assert result.exit_code == ExitCode.USAGE
    assert_one_line_error(result.stderr, "colour")


def test_digest_mismatch_exits_4_and_leaves_no_file(
    invoke: Invoke, nats_url: str, bucket_name: str, store, tmp_path: Path
) -> None:
    info = store.put("model.bin", b"x" * 300_000)
    forged = info.evolve(digest=digest_of(b"not the content"))
    subject = meta_subject(bucket_name, "model.bin")
    publish_raw(nats_url, subject, forged.encode(), {"Nats-Rollup": "sub"})

    target = tmp_path / "model.bin"
    result = invoke("get", bucket_name, "model.bin", str(target))
    assert result.exit_code == ExitCode.DIGEST_MISMATCH
    assert_one_line_error(result.stderr, bucket_name, "model.bin")
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary

    piped = invoke("get", bucket_name, "model.bin", "-")
    assert piped.exit_code == ExitCode.DIGEST_MISMATCH


PERMISSIONS = """
authorization {
  users = [
    {user: admin, password: adminpw}
    {user: reader, password: readerpw, permissions: {
      publish: {deny: ["$JS.API.STREAM.CREATE.>"]}
    }}
  ]
}
"""


def test_permission_and_auth_problems_exit_5(invoke: Invoke, tmp_path: Path) -> None:
    with NatsServerProcess(tmp_path / "secured", config=PERMISSIONS) as server:
        host = server.url.removeprefix("nats://")
        denied = invoke("store", "create", "forbidden", url=f"nats://reader:readerpw@{host}")
        assert denied.exit_code == ExitCode.CONNECTION
        assert_one_line_error(denied.stderr, "forbidden")

        wrong = invoke("--timeout", "1", "stores", url=f"nats://reader:s3cr3t-pw@{host}")
        assert wrong.exit_code == ExitCode.CONNECTION
        assert_one_line_error(wrong.stderr)
        assert "s3cr3t-pw" not in wrong.stderr  # the password is never echoed
