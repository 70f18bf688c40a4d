"""How results look: rich tables for people, sorted JSON for scripts.

Piped tables are rendered without width limit or trailing padding, so object names are never
wrapped or truncated and ``awk``/``cut`` see clean lines.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

import click
from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from natsobj.model import DIGEST_PREFIX, ObjectInfo

SHORT_DIGEST = 12
_PIPED_WIDTH = 100_000
_SHELL_SPECIAL = frozenset(" !\"$&'()*;<=>?[\\^`|")
_SPECIAL_FIRST = frozenset("#~")
_C_ESCAPES = {"\a": "a", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t", "\v": "v"}


def show(renderable: RenderableType) -> None:
    """Print a table: styled for a terminal; plain, unwrapped and without padding when piped."""
    if sys.stdout.isatty():
        Console(file=sys.stdout, highlight=False).print(renderable)
        return
    console = Console(file=io.StringIO(), width=_PIPED_WIDTH, no_color=True, highlight=False)
    with console.capture() as captured:
        console.print(renderable)
    click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


def emit_json(doc: Any) -> None:
    """Stable machine output: sorted keys, one document, a trailing newline."""
    click.echo(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False))


def emit_json_line(doc: Any) -> None:
    click.echo(json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")))


_BINARY_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def size(n: int | None) -> str:
    """A size in binary units, as chunk sizes and object sizes are counted (a 128 KiB chunk
    reads ``128.0 KiB``, not ``131.1 kB``), in the shape ``aws s3 ls --human-readable``
    prints: ``1 byte``, ``512 bytes``, ``1.5 MiB``."""
    if n is None:
        return ""
    if abs(n) < 1024:
        return f"{n} byte" if n == 1 else f"{n} bytes"
    value, unit = n / 1024, 0
    while abs(value) >= 1024 and unit < len(_BINARY_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.1f} {_BINARY_UNITS[unit]}"


def short_digest(digest: str) -> str:
    if not digest:
        return ""
    return digest.removeprefix(DIGEST_PREFIX)[:SHORT_DIGEST]


def when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else ""


def link_target(info: ObjectInfo) -> str:
    if info.link is None:
        return ""
    return f"{info.link.bucket}/" + (info.link.name or "")


def shell_escape(name: str) -> str:
    """``name`` as coreutils' ``ls --quoting-style=shell-escape`` prints it: bare when
    nothing in it is special, else one shell word, with ``$'\\n'``-style escapes for what a
    terminal would act on. Names are written by anyone with publish rights on the bucket;
    printed raw, a newline fakes a line of output and an ESC sequence rewrites the screen.
    Characters Python deems unprintable are escaped, a little more than glibc (e.g. the
    bidirectional overrides that make a name read backwards)."""
    if not name:
        return "''"
    if not any(_needs_quotes(name, i, ch) for i, ch in enumerate(name)):
        return name
    if "'" in name and all(_double_quotable(name, i, ch) for i, ch in enumerate(name)):
        return f'"{name}"'
    out, escaping = ["'"], False
    for i, ch in enumerate(name):
        if ch == "'":
            out.append("'\\''")
            escaping = False
        elif not ch.isprintable():
            out.append("" if escaping else "'$'")
            out.append(_escape(ch, name[i + 1 : i + 2]))
            escaping = True
        else:
            out.append("''" if escaping else "")
            out.append(ch)
            escaping = False
    out.append("'")
    return "".join(out)


def visible(text: str) -> str:
    """Free text from a record (a description, a header, a metadata value, a store's
    description) with each character a terminal would act on written as its escape (as in
    ``shell_escape``, unquoted): another client wrote it, and printed raw an ESC sequence
    rewrites the screen or a newline fakes a line of output."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else _escape(ch, text[i + 1 : i + 2]) for i, ch in enumerate(text)
    )


def _needs_quotes(name: str, i: int, ch: str) -> bool:
    return (
        ch in _SHELL_SPECIAL
        or not ch.isprintable()
        or (i == 0 and ch in _SPECIAL_FIRST)
        or name in ("{", "}")
    )


def _double_quotable(name: str, i: int, ch: str) -> bool:
    """coreutils prefers ``"it's"`` to ``'it'\\''s'`` when every character means the same
    inside double quotes."""
    if ch in ("'", " "):
        return True
    if ch in _SPECIAL_FIRST:
        return i == 0
    if ch in ("{", "}"):
        return len(name) == 1
    return ch.isprintable() and ch not in _SHELL_SPECIAL


def _escape(ch: str, following: str) -> str:
    if ch in _C_ESCAPES:
        return "\\" + _C_ESCAPES[ch]
    if ch == "\0":
        return "\\000" if following.isascii() and following.isdigit() else "\\0"
    return "".join(f"\\{byte:03o}" for byte in ch.encode("utf-8", "surrogatepass"))


def display_name(info: ObjectInfo) -> str:
    """The name, escaped, with what a person needs to know about it: link target, tombstone."""
    name = shell_escape(info.name)
    if info.link is not None:
        name += f" -> {shell_escape(link_target(info))}"
    if info.deleted:
        name += " (deleted)"
    return name


def table(
    columns: Sequence[str], rows: Iterable[Sequence[str]], *, right: Collection[str] = ()
) -> None:
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in columns:
        grid.add_column(column, justify="right" if column in right else "left", no_wrap=True)
    for row in rows:
        # never markup ('[red]' is part of a name), never a terminal's control sequence
        grid.add_row(*(Text(visible(cell)) for cell in row))
    show(grid)


def fields(pairs: Iterable[tuple[str, str]]) -> None:
    """A two-column key/value listing, for one object or one store."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for key, value in pairs:
        grid.add_row(Text(visible(key)), Text(visible(value)))
    show(grid)


def info_fields(info: ObjectInfo) -> list[tuple[str, str]]:
    pairs = [("bucket", info.bucket), ("name", shell_escape(info.name))]
    if info.link is not None:
        kind = "bucket link" if info.link.is_bucket_link else "object link"
        pairs.append((kind, shell_escape(link_target(info))))
    else:
        pairs += [
            ("size", f"{size(info.size)} ({info.size} bytes)"),
            ("chunks", str(info.chunks)),
            ("digest", info.digest),
        ]
        if info.chunk_size:
            pairs.append(("chunk size", size(info.chunk_size)))
    pairs += [("modified", when(info.mtime)), ("nuid", info.nuid)]
    if info.expires is not None:
        pairs.append(("expires", when(info.expires)))
    if info.deleted:
        pairs.append(("deleted", "expired" if info.expired else "yes"))
    if info.description:
        pairs.append(("description", info.description))
    pairs += [(f"header {k}", ", ".join(v)) for k, v in sorted(info.headers.items())]
    pairs += [(f"metadata {k}", v) for k, v in sorted(info.metadata.items())]
    return pairs
