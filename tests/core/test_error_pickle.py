"""Errors cross process boundaries by pickle (Spark executors, multiprocessing): each must arrive
exactly as it was raised, not with its location and hint written in a second time."""

from __future__ import annotations

import inspect
import pickle

import pytest

import natsobj.errors
from natsobj import pipes
from natsobj.archive.target import ArchiveTargetError
from natsobj.errors import NatsObjError
from natsobj.retry import RetryableError
from natsobj.spark import errors as spark_errors

pytestmark = pytest.mark.unit


def _error_classes() -> list[type[NatsObjError]]:
    """Every error class of natsobj.errors, plus those other modules derive with their own
    ``__init__`` (Spark's) or bases, so a subclass added later is covered without a list."""
    modules = (natsobj.errors, spark_errors, pipes)
    found = {
        cls
        for module in modules
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, NatsObjError)
    }
    return sorted(found | {RetryableError, ArchiveTargetError}, key=lambda cls: cls.__name__)


def _same(original: NatsObjError, copy: NatsObjError) -> None:
    assert type(copy) is type(original)
    assert str(copy) == str(original)
    assert copy.args == original.args
    assert (copy.bucket, copy.name, copy.hint, copy.message) == (
        original.bucket,
        original.name,
        original.hint,
        original.message,
    )
    assert vars(copy) == vars(original)


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("protocol", [2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL])
def test_pickle_round_trip_is_exact(cls: type[NatsObjError], protocol: int) -> None:
    for error in (
        cls("object is gone", bucket="models", name="a/b.bin"),
        cls("object is gone", bucket="models", name="a/b.bin", hint="Do this instead."),
        cls("nothing to say"),
    ):
        copy = pickle.loads(pickle.dumps(error, protocol=protocol))
        _same(error, copy)
        # twice over, as an error re-raised by a second process would be
        _same(error, pickle.loads(pickle.dumps(copy, protocol=protocol)))


def test_hint_appears_once_after_a_round_trip() -> None:
    error = natsobj.errors.BucketNotFound("bucket does not exist", bucket="models")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy).count(error.hint) == 1
    assert str(copy).count("bucket 'models'") == 1


def test_an_extra_attribute_and_a_second_base_survive() -> None:
    error = natsobj.errors.ChunkTooLarge("chunk of 9 MiB", bucket="b", name="n")
    error.limit = 1024  # type: ignore[attr-defined]
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, ValueError)
    assert copy.limit == 1024  # type: ignore[attr-defined]
    _same(error, copy)


def test_the_classes_under_test_include_every_error_of_the_module() -> None:
    names = {cls.__name__ for cls in _error_classes()}
    assert {"NatsObjError", "ChunkTooLarge", "NotConnected", "SparkSourceError"} <= names
    assert "PipesParamsMismatch" in names
