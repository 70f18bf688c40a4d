"""A persistent local index of a bucket's object names, so a prefix listing costs its matches.

Meta subjects are ``$O.<bucket>.M.<base64(name)>``: one token, which no subject filter can
narrow by a name prefix, and nats-server walks every subject of the bucket to page them. This
index keeps the meta subject tokens of one stream in SQLite (WAL mode, so processes on one
machine share it), with the decoded names in a B-tree for range queries, and the stream
sequence it is complete up to.

**Why it stays exact.** The index is a *superset* of the live names: every subject whose last
message is at or below ``complete_seq`` is in it, and anything newer is read by the catch-up
(``natsobj.aio.name_sync``) from the meta messages after ``complete_seq``. ADR-20 never adds a
meta subject without a meta message, so nothing is missed; a subject removed by a purge or a
compaction stays here until a listing sees that it is gone (``prune``). A deleted and
re-created bucket has a new ``created`` time, hence a new file.

**Meta records.** Beside each name the index keeps the newest meta record it has seen for it
(payload, sequence and server time), from the catch-up and from the batched gets of earlier
listings. A listing may serve them instead of fetching every match again, but only after
proving that no name vanished without a message (``natsobj.aio.listing``); otherwise it
fetches the current record of every match, so a stale entry costs a lookup, never a wrong
result.

This module is the storage only (plain SQLite, no asyncio); the sequence-driven sync lives
with the listing.
"""

from __future__ import annotations

import binascii
import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from natsobj.errors import UnsafeLocalState
from natsobj.local.files import OTHERS_WRITE, check_private
from natsobj.names import decode_name
from natsobj.parsing import parse_bool

log = logging.getLogger(__name__)

CACHE_DIR_ENV = "NATSOBJ_CACHE_DIR"
NAME_INDEX_ENV = "NATSOBJ_NAME_INDEX"
SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 30_000  # another process's write transaction: wait for it, do not fail
FETCH_ROWS = 1024  # rows per fetch while streaming a lookup
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

_SCHEMA = """
CREATE TABLE IF NOT EXISTS names (
    token TEXT PRIMARY KEY,  -- the meta subject's last token (base64 of the name)
    name TEXT,               -- the decoded name; NULL for a token no client would write
    seq INTEGER NOT NULL,    -- the meta sequence it was last seen at (0: from a name page)
    mtime_us INTEGER,        -- that message's server time, microseconds since the epoch
    meta BLOB                -- that message's payload; NULL when only the name is known
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS names_by_name ON names(name);
CREATE TABLE IF NOT EXISTS state (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    complete_seq INTEGER NOT NULL,  -- every subject whose last message is <= this is here
    generation INTEGER NOT NULL,    -- bumped by a rebuild: older catch-ups claim nothing
    identity TEXT NOT NULL
);
"""


IndexRow = tuple[str, int, int | None, bytes | None]  # token, meta seq, mtime (µs), meta
Entry = tuple[str, str | None, int, int | None, bytes | None]  # token, name, then as IndexRow


class NameIndexUnavailable(Exception):
    """The index cannot be used here (disabled, unwritable directory, SQLite error)."""


def index_enabled(setting: bool | str | None) -> bool:
    """The connection setting wins when given; else ``NATSOBJ_NAME_INDEX`` (on by default),
    read as every face reads a true/false value."""
    value = (os.environ.get(NAME_INDEX_ENV) or "on") if setting is None else setting
    return parse_bool(value, what=NAME_INDEX_ENV if setting is None else "name_index")


def cache_dir(setting: str | None) -> Path:
    """The setting, else ``NATSOBJ_CACHE_DIR``, else ``$XDG_CACHE_HOME/natsobj`` (that is,
    ``~/.cache/natsobj``)."""
    chosen = setting or os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "natsobj"


@dataclass(frozen=True)
class StreamIdentity:
    """What tells one stream from every other: where it is reached (servers, JetStream API
    prefix or domain, user), its name, and when it was created, so a re-created bucket never
    inherits the old one's names."""

    servers: tuple[str, ...]
    api_prefix: str
    user: str
    stream: str
    created: str

    def key(self) -> str:
        return json.dumps(
            [sorted(self.servers), self.api_prefix, self.user, self.stream, self.created]
        )

    def same_stream_name(self, key: str) -> bool:
        """Whether ``key`` (another index's) names this stream, in any incarnation."""
        try:
            other = json.loads(key)
        except ValueError:
            return False
        return isinstance(other, list) and other[:4] == json.loads(self.key())[:4]

    def file_name(self) -> str:
        digest = hashlib.sha256(self.key().encode()).hexdigest()[:32]
        return f"{self.stream}-{digest}.sqlite3"


def remove_other_incarnations(
    directory: Path, identity: StreamIdentity, *, keep_current: bool = True
) -> int:
    """Delete the index files of ``identity``'s stream name (same servers, prefix and user)
    other than its own: those of a deleted or re-created bucket, whose names are never read
    again, and those of an older schema. With ``keep_current=False`` its own goes too (the
    bucket was deleted). Returns how many were removed; a file that cannot be read or removed
    is left alone, and so is any in a directory another user could write."""
    own = directory / f"names-v{SCHEMA_VERSION}" / identity.file_name()
    removed = 0
    for path in directory.glob(f"names-v*/{identity.stream}-*.sqlite3"):
        if keep_current and path == own:
            continue
        try:
            _check_private_dir(path.parent.parent)
            _check_private_dir(path.parent)
        except UnsafeLocalState:
            continue  # another user's files: neither read nor removed
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                (key,) = db.execute("SELECT identity FROM state WHERE id = 0").fetchone()
        except (sqlite3.Error, TypeError, ValueError):
            continue
        if identity.same_stream_name(key):
            for part in (
                path,
                path.with_name(path.name + "-wal"),
                path.with_name(path.name + "-shm"),
            ):
                part.unlink(missing_ok=True)
            removed += 1
    return removed


def prefix_upper_bound(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix`` (None: no bound).

    SQLite compares TEXT bytewise in UTF-8, which orders like Python compares code points."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < 0x10FFFF:
            following = last + 1 if not 0xD800 <= last + 1 <= 0xDFFF else 0xE000
            return "".join(chars) + chr(following)
    return None


def decoded(token: str) -> str | None:
    try:
        return decode_name(token)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


class NameIndex:
    """One stream's names on disk. Every method is a short transaction; several processes
    (and several clients in one process) may use the same file at once."""

    def __init__(self, path: Path, identity: StreamIdentity) -> None:
        self.path = path
        self.identity = identity
        try:
            _create_private(path)
            # Writes go through a connection of their own: a listing writes the records it
            # fetched while its lookup's cursor is still open on the reading one.
            self._writer = _connect(path)
            self._writer.executescript(_SCHEMA)  # idempotent; executescript commits by itself
            self._writer.execute(
                "INSERT OR IGNORE INTO state VALUES (0, 0, 0, ?)", (identity.key(),)
            )
            self._db = _connect(path)
            self._writing = threading.Lock()  # one write transaction at a time on _writer
        except UnsafeLocalState as exc:
            raise NameIndexUnavailable(str(exc)) from exc
        except (OSError, sqlite3.Error) as exc:
            raise NameIndexUnavailable(f"{path}: {exc}") from exc

    @classmethod
    def open(cls, directory: Path, identity: StreamIdentity) -> NameIndex:
        return cls(directory / f"names-v{SCHEMA_VERSION}" / identity.file_name(), identity)

    def close(self) -> None:
        self._db.close()
        self._writer.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._writer, self._writing)

    def progress(self) -> tuple[int, int]:
        """``(complete_seq, generation)``: where a catch-up starts, and what it must still
        find when it records how far it got."""
        row = self._db.execute("SELECT complete_seq, generation FROM state WHERE id = 0")
        complete_seq, generation = row.fetchone()
        return int(complete_seq), int(generation)

    def add(
        self,
        rows: Iterable[IndexRow],
        *,
        complete_seq: int | None = None,
        generation: int = 0,
    ) -> None:
        """Record ``(token, meta sequence, mtime, meta)`` rows (the last two None when only the
        name is known) and, in the same transaction, that the index is complete up to
        ``complete_seq``: never lowered (another process may be ahead), and only if no rebuild
        started since the caller read ``generation`` (its rows may be gone). A row never
        replaces a newer record of its name, whichever process wrote that."""
        named = (
            (token, decoded(token), seq, mtime_us, meta) for token, seq, mtime_us, meta in rows
        )
        with self._transaction():
            self._writer.executemany(
                "INSERT INTO names VALUES (?, ?, ?, ?, ?) ON CONFLICT(token) DO UPDATE SET"
                " seq = max(seq, excluded.seq),"
                " mtime_us = CASE WHEN excluded.seq > seq THEN excluded.mtime_us"
                "  WHEN excluded.seq = seq THEN coalesce(excluded.mtime_us, mtime_us)"
                "  ELSE mtime_us END,"
                " meta = CASE WHEN excluded.seq > seq THEN excluded.meta"
                "  WHEN excluded.seq = seq THEN coalesce(excluded.meta, meta) ELSE meta END",
                named,
            )
            if complete_seq is not None:
                self._writer.execute(
                    "UPDATE state SET complete_seq = max(complete_seq, ?)"
                    " WHERE id = 0 AND generation = ?",
                    (complete_seq, generation),
                )

    def keep_records(self, rows: Iterable[IndexRow]) -> None:
        """Keep meta records a listing fetched beside names the index has (a name it lacks is
        left to the catch-up), unless it holds a newer record already."""
        with self._transaction():
            self._writer.executemany(
                "UPDATE names SET seq = ?, mtime_us = ?, meta = ? WHERE token = ? AND seq <= ?",
                ((seq, mtime_us, meta, token, seq) for token, seq, mtime_us, meta in rows),
            )

    def restart(self) -> int:
        """Forget every name (the stream was purged past what the index knew); returns the
        new generation, which the rebuild that follows records its progress under."""
        with self._transaction():
            self._writer.execute("DELETE FROM names")
            self._writer.execute(
                "UPDATE state SET complete_seq = 0, generation = generation + 1 WHERE id = 0"
            )
        return self.progress()[1]

    def prune(self, tokens: Iterable[str], *, absent_at: int) -> None:
        """Forget subjects a listing found gone as of sequence ``absent_at``; one that got a
        meta message after that (seen by another process's catch-up) is kept."""
        with self._transaction():
            self._writer.executemany(
                "DELETE FROM names WHERE token = ? AND seq <= ?",
                ((token, absent_at) for token in tokens),
            )

    def lookup(self, literal_prefix: str) -> Iterator[list[Entry]]:
        """``(token, name, meta seq, mtime, meta)`` of every name starting with
        ``literal_prefix``, in batches; tokens that do not decode come too (their meta record
        decides). Two plain index searches, not one ``OR`` (SQLite would collect every row of
        it in a temporary set first)."""
        columns = "SELECT token, name, seq, mtime_us, meta FROM names"
        if not literal_prefix:
            yield from self._rows(columns, ())
            return
        where, args = _name_range(literal_prefix)
        yield from self._rows(f"{columns} WHERE {where}", args)
        yield from self._rows(f"{columns} WHERE name IS NULL", ())

    def names_from(
        self, literal_prefix: str, lower: str, *, inclusive: bool, limit: int
    ) -> list[Entry]:
        """Up to ``limit`` rows of the names starting with ``literal_prefix`` from ``lower``
        on (above it unless ``inclusive``), in name order: one range of the name index, so a
        page of a listing reads its own rows, never the bucket's. Tokens that do not decode
        have no name and no place in the order: they are left out."""
        where, args = _name_range(literal_prefix) if literal_prefix else ("1", ())
        above = ">=" if inclusive else ">"
        query = (
            "SELECT token, name, seq, mtime_us, meta FROM names"
            f" WHERE {where} AND name {above} ? ORDER BY name LIMIT ?"
        )
        return list(self._db.execute(query, (*args, lower, limit)).fetchall())

    def count(self, literal_prefix: str = "") -> int:
        """How many names start with ``literal_prefix`` (all of them for ""), plus the tokens
        that do not decode: what ``lookup`` would return."""
        if not literal_prefix:
            return int(self._db.execute("SELECT count(*) FROM names").fetchone()[0])
        where, args = _name_range(literal_prefix)
        query = f"SELECT (SELECT count(*) FROM names WHERE {where})"
        query += " + (SELECT count(*) FROM names WHERE name IS NULL)"
        return int(self._db.execute(query, args).fetchone()[0])

    def _rows(self, query: str, args: tuple[str, ...]) -> Iterator[list[Entry]]:
        cursor = self._db.execute(query, args)
        try:
            while rows := cursor.fetchmany(FETCH_ROWS):
                yield rows
        finally:
            cursor.close()


def _create_private(path: Path) -> None:
    """The cache directory and the index directory 0700, the index file 0600: names and meta
    records are the bucket's, not for every local user. SQLite gives the -wal and -shm files
    the database file's mode, so creating that one first covers them.

    Each must also be the current user's and writable by no one else (the rule the embedded
    server's data directory follows, ``check_private``), found or made: another user who can
    rename a file over the index decides which objects a listing shows, so ``ls`` and
    ``get -r`` would leave one out and ``sync --delete`` delete its local copy."""
    for directory in (path.parent.parent, path.parent):
        directory.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        _check_private_dir(directory)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeLocalState(f"{path} is not a regular file", hint=_fix(path))
        check_private(path, st, OTHERS_WRITE, _fix(path), _WHAT)
    finally:
        os.close(fd)


_WHAT = "a name index"


def _fix(path: Path) -> str:
    return (
        f"If {path} is yours, `chmod go-w {path}`; otherwise remove it, or set "
        f"{CACHE_DIR_ENV} (or the cache_dir setting) to a directory of your own."
    )


def _check_private_dir(directory: Path) -> None:
    """``directory`` (its real path: a symlink the user made to it is theirs to make) is a
    directory of the current user that no one else can write (``UnsafeLocalState``)."""
    real = directory.resolve()
    st = os.lstat(real)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeLocalState(f"{real} is not a directory", hint=_fix(real))
    check_private(real, st, OTHERS_WRITE, _fix(real), _WHAT)


def _connect(path: Path) -> sqlite3.Connection:
    # used from worker threads too (asyncio.to_thread), one call at a time
    db = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def _name_range(literal_prefix: str) -> tuple[str, tuple[str, ...]]:
    """The ``WHERE`` clause (an index range) of the names starting with ``literal_prefix``."""
    upper = prefix_upper_bound(literal_prefix)
    if upper is None:
        return "name >= ?", (literal_prefix,)
    return "name >= ? AND name < ?", (literal_prefix, upper)


class _Transaction:
    """``BEGIN IMMEDIATE`` so a writer takes the lock up front (no upgrade deadlocks between
    processes), commit on success, roll back on error; ``lock`` keeps this process's threads
    (a listing's writes run on worker threads) to one transaction at a time."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self.db = db
        self.lock = lock

    def __enter__(self) -> None:
        self.lock.acquire()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.lock.release()
            raise

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            self.lock.release()
