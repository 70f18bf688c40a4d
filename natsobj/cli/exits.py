"""Exit codes and the one place where exceptions become a one-line message and a code.

Scripts branch on the code (missing object vs corrupt data vs server down), people read the
line; the traceback is kept for ``--debug``. The codes follow click, POSIX tools and ``aws``:
1 is a failure, 2 a usage error; the specific failures take the codes after them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Iterator
from enum import IntEnum
from types import FrameType
from typing import Any

import click

from natsobj.cli.wording import cli_words
from natsobj.errors import (
    BadBucketName,
    BadObjectName,
    BucketNotFound,
    DigestMismatch,
    NatsObjError,
    NotConnected,
    ObjectNotFound,
    PermissionDenied,
)
from natsobj.sync import shared_loop


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    NOT_FOUND = 3
    DIGEST_MISMATCH = 4
    CONNECTION = 5


_CODES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], ExitCode], ...] = (
    ((BucketNotFound, ObjectNotFound), ExitCode.NOT_FOUND),
    (DigestMismatch, ExitCode.DIGEST_MISMATCH),
    ((NotConnected, PermissionDenied), ExitCode.CONNECTION),
    ((BadBucketName, BadObjectName), ExitCode.USAGE),
)


def exit_code_for(exc: BaseException) -> ExitCode:
    for types, code in _CODES:
        if isinstance(exc, types):
            return code
    return ExitCode.FAILED


class CliError(click.ClickException):
    """A failure already phrased for the user, carrying its exit code."""

    def __init__(self, message: str, code: ExitCode = ExitCode.FAILED) -> None:
        super().__init__(message)
        self.exit_code = int(code)  # type: ignore[misc]  # click types it ClassVar, reads it per instance

    def show(self, file: Any = None) -> None:
        click.echo(f"natsobj: {self.format_message()}", file=file or sys.stderr)


class UsageProblem(CliError):
    """Bad input found after parsing (malformed K=V, conflicting options, ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ExitCode.USAGE)


def said(error: NatsObjError) -> str:
    """An error as the command line says it, its hint naming commands and flags (of the
    command line running now)."""
    root = click.get_current_context().find_root().command
    assert isinstance(root, click.Group)
    return error.said_in(cli_words(root))


def _one_line(text: str) -> str:
    return " ".join(text.split())


class NatsobjGroup(click.Group):
    """The root group: usage errors keep click's 2, store errors map to their codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            raise click.Abort() from None
        except BrokenPipeError:
            raise  # the reader went away (`| head`): click ends quietly
        except NatsObjError as exc:
            raise self._translate(ctx, exc, said(exc), exit_code_for(exc)) from exc
        except (ValueError, OSError) as exc:
            raise self._translate(ctx, exc, _describe(exc), ExitCode.FAILED) from exc
        except Exception as exc:
            message = f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for details)"
            raise self._translate(ctx, exc, message, ExitCode.FAILED) from exc

    @staticmethod
    def _translate(
        ctx: click.Context, exc: BaseException, message: str, code: ExitCode
    ) -> CliError:
        if ctx.params.get("debug"):
            traceback.print_exception(exc, file=sys.stderr)
        return CliError(_one_line(message), code)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc) or type(exc).__name__


class Terminated(KeyboardInterrupt):
    """SIGTERM as the exception Ctrl-C raises, so the same clean-up runs (a download's
    ``.part`` file is removed, the connection closed) before the process ends."""


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """For the console script only (it changes process-wide signal handling): on SIGTERM,
    unwind like Ctrl-C, then die of SIGTERM, so a shell or scheduler sees the signal rather
    than an exit code it would read as a failure of the command."""
    received: list[int] = []

    def handle(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut clean-up
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handle)
    _signals_to_the_main_thread()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if received:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)


def _signals_to_the_main_thread() -> None:
    """Python runs signal handlers in the main thread only, and a main thread waiting on a
    blocking call's result wakes only for a signal the kernel gave to it: one given to the
    event-loop thread would wait unseen until the download had finished. The loop thread is
    started with SIGINT and SIGTERM blocked, and every thread it starts inherits that."""
    interrupts = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, interrupts)
    try:
        shared_loop()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupts)
