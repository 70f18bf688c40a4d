"""Issue 29: a core that names no face. Core errors name the operations and options their hints
suggest by core name (``natsobj.hints``); each face says them in its own words. Before, the core
error module wrote CLI command lines, flags and Spark option names into its hints, so renaming a
face's option meant editing ``natsobj/errors.py``, and a Spark job was told about a flag.

The faces' own tests show the words in place: tests/cli/test_exit_codes.py, the
``test_missing_digest`` tests of tests/security, tests/spark, tests/airflow and tests/dagster.
"""

from __future__ import annotations

import inspect
import pickle
import re
from pathlib import Path

import pytest

import natsobj.errors
from natsobj.cli.app import cli
from natsobj.cli.wording import COMMANDS, cli_words, command_at
from natsobj.errors import (
    BucketNotFound,
    ExpiryNotEnabled,
    MissingDigest,
    NatsObjError,
    NoServer,
    UnsafeLocalPath,
    in_words_of,
    reword,
)
from natsobj.hints import Hint, Operation, Option
from natsobj.operation_options import options
from natsobj.spark.stream_options import STREAM_KEYS
from natsobj.spark.wording import spark_words

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CORE_MODULES = ("natsobj/errors.py", "natsobj/model.py")


def _spark_only() -> list[str]:
    """The Spark streaming options' Spark spellings: not the core names the options table
    gives them (``start``, ``on_recreated``), which the core may say."""
    core_names = {option.name for option in options()}
    return sorted(key for key in STREAM_KEYS if key not in core_names)


def _face_words() -> list[tuple[str, re.Pattern[str]]]:
    """What only a face says, read from the faces themselves so a command or option added
    later is covered: a CLI command line, a flag, a Spark streaming option, the orchestrators."""
    commands = "|".join(sorted(map(re.escape, cli.commands), key=len, reverse=True))
    return [
        ("a command line", re.compile(rf"\bnatsobj (?:{commands})\b")),
        ("a flag", re.compile(r"(?<![\w-])--[a-z][\w-]*")),
        *((f"Spark option {key}", re.compile(re.escape(key), re.I)) for key in _spark_only()),
        *((word, re.compile(rf"\b{word}\b", re.I)) for word in ("Airflow", "Dagster", "XCom")),
    ]


@pytest.mark.parametrize("module", CORE_MODULES)
def test_the_core_error_and_record_modules_name_no_face(module: str) -> None:
    text = (ROOT / module).read_text()
    found = [
        f"{what}: {match.group(0)!r} (line {text.count(chr(10), 0, match.start()) + 1})"
        for what, pattern in _face_words()
        for match in pattern.finditer(text)
    ]
    assert found == [], f"{module} names a face: {found}"


def _hinted_errors() -> list[type[NatsObjError]]:
    return [
        cls
        for _, cls in inspect.getmembers(natsobj.errors, inspect.isclass)
        if issubclass(cls, NatsObjError) and isinstance(cls.hint, Hint) and cls.hint.refs
    ]


def test_every_command_the_cli_says_exists_and_every_hint_has_cli_words() -> None:
    for path, _subject in COMMANDS.values():
        command_at(cli, path)  # a KeyError for a command renamed or gone
    assert _hinted_errors(), "no core error names an operation or option"
    for cls in _hinted_errors():
        for ref in cls.hint.refs:
            if isinstance(ref, Operation):
                assert ref.name in COMMANDS, f"{cls.__name__}: no command for {ref.name}"
    words = cli_words(cli)
    assert words(Option("allow_missing_digest", True)) == "`--allow-missing-digest`"
    assert words(Option("no_such_option", True)) is None  # the core's words then


def test_each_face_says_the_same_hint_in_its_own_words() -> None:
    from airflow_natsobj.wording import airflow_words

    from dagster_natsobj.errors import dagster_words

    error = MissingDigest("the meta record has no digest", bucket="b", name="plain")
    python = str(error)
    assert "with allow_missing_digest=True (its size" in python
    words = {
        error.said_in(cli_words(cli)): "with `--allow-missing-digest` (its size",
        error.said_in(spark_words): 'with .option("allow_missing_digest", "true") (its size',
        error.said_in(airflow_words): "allow_missing_digest=True on NatsGetObjectOperator",
        error.said_in(dagster_words): "allow_missing_digest=True on NatsObjectStoreIOManager",
    }
    for text, expected in words.items():
        assert expected in text
        assert text.startswith("bucket 'b', object 'plain': the meta record has no digest. ")

    created = BucketNotFound("bucket does not exist", bucket="b")
    assert "(create_store(bucket))" in str(created)
    assert "(`natsobj store create BUCKET`)" in created.said_in(cli_words(cli))
    assert '(.option("create_bucket", "true") on a write)' in created.said_in(spark_words)
    assert "(`NatsCreateObjectStoreOperator`)" in created.said_in(airflow_words)

    ttl = ExpiryNotEnabled("no TTLs here", bucket="b")
    assert "update_store(bucket, allow_msg_ttl=True)" in str(ttl)
    assert "`natsobj store update BUCKET --allow-msg-ttl`" in ttl.said_in(cli_words(cli))
    assert "`natsobj get BUCKET NAME PATH`" in UnsafeLocalPath("symlink", name="n").said_in(
        cli_words(cli)
    )
    assert "`--url nats://HOST:4222`" in NoServer("no server").said_in(cli_words(cli))


def test_an_error_reworded_by_a_face_keeps_its_type_and_crosses_processes_as_said() -> None:
    @in_words_of(spark_words)
    def rows():
        yield 1
        raise MissingDigest("no digest", bucket="b", name="n")

    with pytest.raises(MissingDigest) as raised:
        list(rows())
    assert '.option("allow_missing_digest", "true")' in str(raised.value)
    copy = pickle.loads(pickle.dumps(raised.value))
    assert str(copy) == str(raised.value)
    assert str(reword(copy, cli_words(cli))).count("`--allow-missing-digest`") == 1
    assert pickle.loads(pickle.dumps(MissingDigest.hint)).refs == MissingDigest.hint.refs
