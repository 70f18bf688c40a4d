"""The async client: connection, bucket management, and the typed errors around them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from dataclasses import replace
from pathlib import Path
from typing import Any, Unpack

import nats.errors
from nats.aio.client import Client as NatsConnection

from natsobj.aio import name_sync
from natsobj.aio.jetstream.jsapi import JetStreamApi
from natsobj.aio.jetstream.socket_reads import enlarge_reads
from natsobj.aio.ranges import ClientRanges
from natsobj.aio.store import ObjectStore
from natsobj.errors import (
    BucketExists,
    BucketNotFound,
    ExpiryNotEnabled,
    NatsObjError,
    NotConnected,
    PermissionDenied,
    UnsafeLocalState,
)
from natsobj.lifecycle import server_supports_ttl
from natsobj.local.embedded import prove_peer
from natsobj.local.embedded_rule import resolve_server
from natsobj.model import StreamInfo
from natsobj.names import all_meta_subject, check_bucket, stream_name
from natsobj.settings import ConnectionSettings
from natsobj.store_config import (
    STORE_SETTINGS,
    StoreConfig,
    StoreSettings,
    retagged_metadata,
    users_metadata,
)
from natsobj.versioning import VERSIONING_METADATA_KEY, Versioning
from natsobj.wire import OBJECT_STREAM_PREFIX, STREAM_NAMES, stream_api

log = logging.getLogger("natsobj")

DEFAULT_PUT_WINDOW = 8 * 1024 * 1024
DEFAULT_READ_WINDOW = 8 * 1024 * 1024
RECONNECT_ATTEMPTS = 120  # with 0.5 s between attempts: ride out a restart of about a minute
# close(): drain for up to the API timeout, then this long at most to close the socket.
CLOSE_GRACE_SECONDS = 1.0


class _TlsNotOffered(nats.errors.Error):
    """Raised inside nats-py's connect, before CONNECT is written: TLS is configured and the
    server did not offer it. A ``nats.errors.Error`` so nats-py treats it as a failed
    attempt (error callback, next server) on first connects and reconnects alike."""

    def __init__(self, server: str) -> None:
        super().__init__(
            f"the server at {server} did not offer TLS; natsobj refuses to send credentials"
            " (or anything else) in clear"
        )
        self.server = server


class _NotTheEmbeddedServer(nats.errors.Error):
    """Raised inside nats-py's connect, before CONNECT is written: the peer is not the
    embedded server of the data directory (another process took its port). A
    ``nats.errors.Error`` so nats-py treats it as a failed attempt, as ``_TlsNotOffered``."""

    def __init__(self, server: str, data_dir: Path) -> None:
        super().__init__(
            f"the process listening at {server} is not the embedded server of {data_dir};"
            " natsobj sends it nothing"
        )
        self.server = server


class _Connection(NatsConnection):
    """nats-py's client with checks per connection attempt, made before the CONNECT line
    (which carries user/password, token or signature), or anything else, is written: when
    TLS is configured, the connection is encrypted; for an embedded server, its peer is
    proven to be the data directory's server (``natsobj.local.embedded.prove_peer``).

    nats-py upgrades to TLS only when the server's INFO sets ``tls_required``; otherwise it
    writes CONNECT in clear even when it was given a TLS context, so an impostor on the
    server's address would read the credentials. ``_connect_command`` is the last step before
    that write on every attempt; it is private, so ``__init__`` refuses to run (rather than
    silently not checking) on a nats-py that no longer has it."""

    def __init__(self, *, require_tls: bool, embedded_dir: Path | None = None) -> None:
        super().__init__()
        self._require_tls = require_tls
        self._embedded_dir = embedded_dir
        if (require_tls or embedded_dir) and not _has_connect_hook(self):
            raise NotConnected(
                "the installed nats-py no longer has the hook natsobj uses to check a server"
                " before sending it anything, so TLS or the embedded server's identity cannot"
                " be enforced",
                hint="Install the nats-py version natsobj declares (pip install natsobj).",
            )

    def _connect_command(self) -> bytes:
        server = self._current_server
        where = f"{server.uri.hostname}:{server.uri.port}" if server else "the server"
        if self._require_tls and not self._encrypted():
            self._drop_transport()
            raise _TlsNotOffered(where)
        if self._embedded_dir is not None and not self._proven_embedded():
            self._drop_transport()
            raise _NotTheEmbeddedServer(where, self._embedded_dir)
        return super()._connect_command()

    def _drop_transport(self) -> None:
        """Closed at once: nats-py would otherwise flush publishes buffered during a
        reconnect into this socket when the client is closed."""
        if self._transport is not None:
            self._transport.close()

    def _proven_embedded(self) -> bool:
        """Whether the socket's peer is the embedded server of the data directory (a few
        reads of /proc, once per connection attempt)."""
        assert self._embedded_dir is not None
        writer = getattr(self._transport, "_io_writer", None)
        sock = writer.get_extra_info("socket") if writer is not None else None
        if sock is None or sock.family != socket.AF_INET:
            return False
        local, peer = sock.getsockname(), sock.getpeername()
        try:
            return prove_peer(self._embedded_dir, (local[0], local[1]), (peer[0], peer[1]))
        except UnsafeLocalState:  # the directory or its record changed hands: nothing proven
            return False

    def _encrypted(self) -> bool:
        """Mirrors how nats-py 2.x decides to use TLS before CONNECT: a ``wss://`` socket is
        TLS from the start, a handshake-first one too; otherwise it upgrades (never on
        ``ws://``) only when the INFO just read asks for it."""
        scheme = self._current_server.uri.scheme if self._current_server else ""
        if scheme == "wss" or self.options.get("tls_handshake_first"):
            return True
        return bool(self._server_info.get("tls_required")) and scheme != "ws"


def _has_connect_hook(connection: NatsConnection) -> bool:
    return (
        callable(getattr(NatsConnection, "_connect_command", None))
        and isinstance(getattr(connection, "_server_info", None), dict)
        and hasattr(connection, "_current_server")
        and hasattr(connection, "_transport")
    )


class Client:
    def __init__(
        self,
        settings: ConnectionSettings,
        *,
        put_window_bytes: int = DEFAULT_PUT_WINDOW,
        read_window_bytes: int = DEFAULT_READ_WINDOW,
    ) -> None:
        self.settings = settings
        self.put_window_bytes = put_window_bytes
        self.read_window_bytes = read_window_bytes
        # chunk maps and fetch slots of this client's ranged reads, not the process's: another
        # client may be on another server, with a bucket of the same name
        self.ranges = ClientRanges(read_window_bytes)
        self.nc: Any = None
        self.api: JetStreamApi = None  # type: ignore[assignment]
        self._connect_errors: list[Exception] | None = None  # set while the first connect runs
        self._tls = False
        self._violation: str | None = None  # why natsobj cut the connection (socket_reads)

    def __repr__(self) -> str:
        return f"Client({self.settings.redacted_url()!r})"

    async def _connect(self) -> Client:
        # finding or starting the embedded server touches files and processes: not on the loop
        resolved = await asyncio.to_thread(resolve_server, self.settings)
        options = resolved.nats_options()
        self._tls = "tls" in options
        self._connect_errors = []
        nc = _Connection(require_tls=self._tls, embedded_dir=self.settings.embedded_dir)
        try:
            # The first connect tries each server twice (nats-py reads 0 as "forever"), so a
            # wrong address or refused credentials is reported at once; reconnects keep trying.
            await nc.connect(
                **options,
                error_cb=self._on_error,
                disconnected_cb=self._on_disconnected,
                max_reconnect_attempts=1,
                reconnect_time_wait=0.5,  # type: ignore[arg-type]  # nats-py says int, sleeps a float
            )
        except Exception as exc:
            with contextlib.suppress(Exception):  # a failed TLS transport can hang on close
                await asyncio.wait_for(nc.close(), 0.5)
            raise _connect_failure(resolved, self._connect_errors or [exc]) from None
        finally:
            self._connect_errors = None
        nc.options["max_reconnect_attempts"] = RECONNECT_ATTEMPTS
        enlarge_reads(nc, self._on_violation)
        self.nc = nc
        self.api = JetStreamApi(self.nc, resolved)
        await self.api.start()
        return self

    def _on_violation(self, text: str) -> None:
        self._violation = text

    async def _on_disconnected(self) -> None:
        if self.api is not None:
            self.api.connection_lost(self._violation)
        self._violation = None

    async def _on_error(self, error: Exception) -> None:
        if self._connect_errors is not None:
            self._connect_errors.append(error)
            if _definitive(error, tls=self._tls):
                # nats-py re-raises what error_cb raises, ending its first-connect loop before
                # it closes a half-open TLS transport (which can hang)
                raise error
            log.debug("NATS connect attempt failed: %s", type(error).__name__)
            return
        if isinstance(error, _TlsNotOffered | _NotTheEmbeddedServer):
            log.warning("NATS reconnect refused: %s", error)
            return
        text = str(error)
        if self.api is not None and self.api.on_permission_error(text):
            log.warning("NATS permission error: %s", text)
            return
        log.debug("NATS connection error: %s", type(error).__name__)

    # -- buckets ----------------------------------------------------------------------------------

    async def create_store(
        self,
        bucket: str | StoreConfig,
        *,
        versioning: Versioning | str | None = None,
        **settings: Unpack[StoreSettings],
    ) -> ObjectStore:
        """Create the bucket's stream as ADR-20 lays it out; idempotent for the same config.

        ``bucket`` is a name or a ``StoreConfig``; the keywords are StoreConfig's fields
        (description, metadata, ttl, max_bytes, storage, replicas, placement, compression)
        and override it. ``versioning="Enabled"`` creates it keeping versions from its first
        write (docs/versioning.md). The server refuses a different config for an existing
        bucket (BucketExists); a bucket an earlier release created with the same settings,
        before per-object expiry and atomic batches, counts as the same (``update_store``
        turns expiry on for it), and so does one whose metadata natsobj's own calls have added
        to since (lifecycle rules, versioning, an archive, a gateway's ACL), unless it was
        asked for with another ``versioning`` than it has now."""
        requested = StoreConfig.build(bucket, **settings)
        config = self._with_expiry(requested)
        stream = config.stream_config()
        state = _created_versioning(config.bucket, versioning)
        if state is not Versioning.UNVERSIONED:
            stream["metadata"] = {
                **stream.get("metadata", {}),
                VERSIONING_METADATA_KEY: state.value,
            }
        try:
            info = await self.api.call(
                stream_api("CREATE", stream["name"]), stream, bucket=config.bucket
            )
        except BucketExists:
            earlier = await self._same_bucket(config, requested)
            if earlier is None or (
                versioning is not None and await earlier.versioning() is not state
            ):
                raise
            return earlier
        return ObjectStore(self, config.bucket, StreamInfo.from_response(info))

    async def _same_bucket(self, config: StoreConfig, requested: StoreConfig) -> ObjectStore | None:
        """The existing bucket, if it differs from ``config`` only in what was added since
        (per-object expiry left to its default by the caller; atomic batches; natsobj's own
        metadata keys): create_store stays idempotent, across an upgrade and after
        ``set_versioning`` or ``set_lifecycle_rules``, for every caller that creates its
        bucket on each run."""
        name = stream_name(config.bucket)
        info = StreamInfo.from_response(
            await self.api.call(stream_api("INFO", name), bucket=config.bucket)
        )
        present = StoreConfig.from_stream_config(config.bucket, info.config)
        if requested.allow_msg_ttl is None and requested.delete_marker_ttl is None:
            present = replace(
                present,
                allow_msg_ttl=config.allow_msg_ttl,
                delete_marker_ttl=config.delete_marker_ttl,
            )
        present = replace(present, metadata=users_metadata(present.metadata))
        wanted = replace(config, metadata=users_metadata(config.metadata))
        return ObjectStore(self, config.bucket, info) if present == wanted else None

    async def update_store(
        self,
        bucket: str | StoreConfig,
        *,
        versioning: Versioning | str | None = None,
        **changes: Unpack[StoreSettings],
    ) -> ObjectStore:
        """Change the settings given as keywords and keep the others; a ``StoreConfig``
        replaces every setting (as nats.go's ``UpdateObjectStore``), keywords on top.
        ``metadata=`` replaces the user's keys and keeps natsobj's own (lifecycle rules,
        archive targets), which only their own calls change. ``versioning`` is
        ``ObjectStore.set_versioning``'s (Enabled or Suspended), set after the settings."""
        if (
            isinstance(bucket, str)
            and versioning is not None
            and not any(value is not None for value in changes.values())
        ):
            store = await self.store(bucket)  # nothing of the stream's settings to change
        else:
            store = await self._update_settings(bucket, changes)
        if versioning is not None:
            await store.set_versioning(versioning)
        return store

    async def _update_settings(
        self, bucket: str | StoreConfig, changes: StoreSettings
    ) -> ObjectStore:
        """``update_store``'s change of the stream's settings."""
        name = bucket.bucket if isinstance(bucket, StoreConfig) else check_bucket(bucket)
        current = await self.api.call(stream_api("INFO", stream_name(name)), bucket=name)
        present = current["config"]
        if isinstance(bucket, StoreConfig):
            base, touched = bucket, set(STORE_SETTINGS)
        else:
            base = StoreConfig.from_stream_config(name, present)
            touched = {k for k, v in changes.items() if v is not None}
            tags = changes.get("metadata")
            if tags is not None:
                changes["metadata"] = retagged_metadata(base.metadata, tags)
        config = self._with_expiry(StoreConfig.build(base, **changes))
        if "allow_msg_ttl" in touched and not present.get("subject_delete_marker_ttl"):
            touched.add("delete_marker_ttl")  # turning expiry on turns its markers on
        stream = config.applied_to(present, sorted(touched))
        info = await self.api.call(stream_api("UPDATE", stream_name(name)), stream, bucket=name)
        return ObjectStore(self, name, StreamInfo.from_response(info))

    def _with_expiry(self, config: StoreConfig) -> StoreConfig:
        """``allow_msg_ttl`` left to the default: on where the server has per-message TTLs
        (2.11+); asked for on an older server: ExpiryNotEnabled naming the version needed."""
        version = self.nc.connected_server_version
        supported = server_supports_ttl((version.major, version.minor))
        if config.allow_msg_ttl is None:
            return replace(config, allow_msg_ttl=supported)
        if config.allow_msg_ttl and not supported:
            raise ExpiryNotEnabled(
                "per-object expiry (allow_msg_ttl) needs nats-server 2.11 or later; this"
                f" server is {version.major}.{version.minor}.{version.patch}",
                bucket=config.bucket,
                hint="Upgrade the NATS servers, or create the store without allow_msg_ttl.",
            )
        return config

    async def ensure_store(
        self,
        bucket: str | StoreConfig,
        *,
        versioning: Versioning | str | None = None,
        **settings: Unpack[StoreSettings],
    ) -> ObjectStore:
        """Bind to ``bucket``, creating it with these settings (as ``create_store``, with its
        ``versioning``) when it is missing.

        Many workers may race to create the same bucket: whoever loses the create binds to the
        winner's bucket, whatever configuration it was created with, so no caller fails."""
        config = StoreConfig.build(bucket, **settings)
        try:
            return await self.store(config.bucket)
        except BucketNotFound:
            pass
        try:
            return await self.create_store(config, versioning=versioning)
        except BucketExists:
            return await self.store(config.bucket)

    async def store(self, bucket: str) -> ObjectStore:
        """Bind to an existing bucket; BucketNotFound when it is missing."""
        check_bucket(bucket)
        info = await self.api.call(stream_api("INFO", stream_name(bucket)), bucket=bucket)
        return ObjectStore(self, bucket, StreamInfo.from_response(info))

    async def delete_store(self, bucket: str) -> None:
        """Delete the bucket and everything in it (BucketNotFound when it is missing)."""
        check_bucket(bucket)
        await self.api.call(stream_api("DELETE", stream_name(bucket)), bucket=bucket)
        await asyncio.to_thread(
            name_sync.forget_stream, self.settings, self.api.prefix, stream_name(bucket)
        )

    async def store_names(self) -> list[str]:
        """The names of every object store the account can see, sorted."""
        names: list[str] = []
        offset = 0
        while True:
            page = await self.api.call(
                STREAM_NAMES, {"offset": offset, "subject": all_meta_subject("*")}
            )
            batch = page.get("streams") or []
            names += [
                n.removeprefix(OBJECT_STREAM_PREFIX)
                for n in batch
                if n.startswith(OBJECT_STREAM_PREFIX)
            ]
            offset += len(batch)
            if not batch or offset >= int(page.get("total", 0)):
                return sorted(names)

    # -- lifecycle -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Drain and close the connection, within the API timeout plus a second whatever the
        server does (nats-py's drain alone waits up to 30 s on a server that stopped
        answering); closing twice is a no-op."""
        nc, self.nc = self.nc, None
        if nc is None:
            return
        try:
            async with asyncio.timeout(self.settings.api_timeout):
                if self.api is not None:
                    await self.api.close()
                if not nc.is_closed:
                    await nc.drain()
        except Exception:
            await _close_now(nc)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _close_now(nc: NatsConnection) -> None:
    """Close without draining, bounded: nats-py's close still flushes what is pending into a
    socket the server may not read; past the grace the socket is dropped unflushed."""
    try:
        async with asyncio.timeout(CLOSE_GRACE_SECONDS):
            await nc.close()
    except Exception:  # OSError: the socket is gone already; TimeoutError: see above
        writer = getattr(getattr(nc, "_transport", None), "_io_writer", None)
        if writer is not None:
            writer.transport.abort()


def _refused_credentials(error: Exception) -> bool:
    text = str(error).lower()
    return "authorization violation" in text or "authentication" in text


def _definitive(error: Exception, *, tls: bool) -> bool:
    """Errors that retrying cannot fix: refused credentials, TLS failures, an unreadable
    creds or seed file. A reset during a TLS connect is a refused client certificate."""
    if _refused_credentials(error):
        return True
    refused = _TlsNotOffered | _NotTheEmbeddedServer
    if isinstance(error, refused | ssl.SSLError | FileNotFoundError | PermissionError):
        return True
    return tls and isinstance(error, ConnectionResetError)


def _connect_failure(resolved: ConnectionSettings, errors: list[Exception]) -> NatsObjError:
    where = resolved.redacted_url()
    last = errors[-1]
    if isinstance(last, _NotTheEmbeddedServer):
        return NotConnected(
            str(last),
            hint="Another process holds the embedded server's port: check `natsobj serve"
            " --list`, and start the server again (`natsobj serve`).",
        )
    if isinstance(last, _TlsNotOffered):
        return NotConnected(
            f"TLS is configured for {where}, but {last}",
            hint="Check that the address is your NATS server and that its configuration has a"
            " tls block; a server that answers without TLS may be an impostor.",
        )
    if any(_refused_credentials(e) for e in errors):
        return PermissionDenied(
            f"NATS refused the credentials for {where}",
            hint="Check the user/password, token, nkey seed or creds file.",
        )
    if isinstance(last, ssl.SSLCertVerificationError):
        return NotConnected(
            f"TLS: the certificate of {where} is not trusted ({last.verify_message})",
            hint="Set tls_ca (NATS_CA) to the CA file that signed the server certificate.",
        )
    if isinstance(last, nats.errors.NoServersError):
        return NotConnected(f"cannot reach NATS at {where}")
    text = str(last) or type(last).__name__
    if resolved.ssl_context() is not None and isinstance(last, ssl.SSLError | ConnectionResetError):
        return NotConnected(
            f"TLS connection to {where} refused: {text}",
            hint="If the server requires a client certificate, set tls_cert and tls_key"
            " (NATS_CERT, NATS_KEY) to one its CA trusts.",
        )
    return NotConnected(f"cannot connect to {where}: {text}")


async def connect(
    url_or_settings: str | ConnectionSettings | None = None,
    *,
    put_window_bytes: int = DEFAULT_PUT_WINDOW,
    read_window_bytes: int = DEFAULT_READ_WINDOW,
    **overrides: Any,
) -> Client:
    """Connect from a URL, settings, or (None) the NATS_* environment; ``embedded`` starts or
    finds the local server. ``overrides`` are ``ConnectionSettings`` fields, among them
    ``api_timeout`` and ``failover_timeout`` (in a cluster, how long an operation waits for a
    new stream leader, or for any node to be reachable, before raising ClusterUnavailable)."""
    settings = ConnectionSettings.coerce(url_or_settings, **overrides)
    client = Client(
        settings, put_window_bytes=put_window_bytes, read_window_bytes=read_window_bytes
    )
    return await client._connect()


def _created_versioning(bucket: str, versioning: Versioning | str | None) -> Versioning:
    """The versioning a new bucket is created with: Enabled or none. Suspended describes a
    bucket that kept versions before, which a new one has not (ValueError)."""
    state = Versioning.UNVERSIONED if versioning is None else Versioning.parse(versioning)
    if state is Versioning.SUSPENDED:
        raise ValueError(
            f"bucket {bucket!r}: a new bucket keeps versions (Enabled) or not; Suspended is"
            " for a bucket that has kept them (set_versioning)"
        )
    return state


__all__ = ["BucketNotFound", "Client", "NatsObjError", "connect"]
