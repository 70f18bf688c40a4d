"""The adversary's own access to the server: nats-py, never natsobj, on the facade's loop.

Publishing needs only publish rights on ``$O.<bucket>.>``; ``purge`` and ``set_metadata`` are
the stream-admin rights (``STREAM.PURGE``, ``STREAM.UPDATE``) of the admin rule group. The
read-back helpers (``msg``, ``last_seq``, ``chunks_before``) are the test's view of the
server's truth, used to judge what natsobj reports; they go through the server's own
``STREAM.MSG.GET`` so no code under test decides what the truth is.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import nats
from nats.errors import Error as NatsError

from natsobj.model import parse_server_time
from natsobj.names import stream_name
from natsobj.sync import run


@dataclass
class StoredMsg:
    subject: str
    seq: int
    time: datetime
    data: bytes
    headers: dict[str, str]


class AdversaryWire:
    def __init__(self, url: str) -> None:
        self.nc = run(nats.connect(url))
        self.js = self.nc.jetstream()

    def close(self) -> None:
        run(self.nc.close())

    def _request(self, subject: str, payload: dict[str, Any]) -> dict[str, Any]:
        async def go() -> dict[str, Any]:
            reply = await self.nc.request(subject, json.dumps(payload).encode(), timeout=5)
            return json.loads(reply.data)

        return run(go())

    # -- the adversary's writes -------------------------------------------------------------

    def publish(
        self, subject: str, data: bytes, headers: dict[str, str] | None = None
    ) -> int | None:
        """Publish as any writer of the bucket may; the sequence, or None when the server
        refused the message (a header it does not take, say)."""

        async def go() -> int | None:
            try:
                return (await self.js.publish(subject, data, headers=headers, timeout=5)).seq
            except NatsError:
                return None

        return run(go())

    def purge(self, bucket: str, subject: str) -> None:
        self._request(f"$JS.API.STREAM.PURGE.{stream_name(bucket)}", {"filter": subject})

    def set_metadata(self, bucket: str, key: str, value: str) -> bool:
        """Write one stream-metadata value as a stream admin would, bypassing natsobj's checks."""
        stream = stream_name(bucket)
        config = self._request(f"$JS.API.STREAM.INFO.{stream}", {})["config"]
        config["metadata"] = {**(config.get("metadata") or {}), key: value}
        reply = self._request(f"$JS.API.STREAM.UPDATE.{stream}", config)
        return "error" not in reply

    # -- the server's truth -------------------------------------------------------------------

    def _get(self, bucket: str, request: dict[str, Any]) -> StoredMsg | None:
        reply = self._request(f"$JS.API.STREAM.MSG.GET.{stream_name(bucket)}", request)
        message = reply.get("message")
        if message is None:
            return None
        headers: dict[str, str] = {}
        if message.get("hdrs"):
            lines = base64.b64decode(message["hdrs"]).decode(errors="replace").split("\r\n")[1:]
            headers = dict(line.split(": ", 1) for line in lines if ": " in line)
        return StoredMsg(
            message["subject"],
            int(message["seq"]),
            parse_server_time(message["time"]),
            base64.b64decode(message.get("data") or b""),
            headers,
        )

    def msg(self, bucket: str, seq: int) -> StoredMsg | None:
        return self._get(bucket, {"seq": seq})

    def last(self, bucket: str, subject: str) -> StoredMsg | None:
        return self._get(bucket, {"last_by_subj": subject})

    def last_seq(self, bucket: str) -> int:
        info = self._request(f"$JS.API.STREAM.INFO.{stream_name(bucket)}", {})
        return int(info["state"]["last_seq"])

    def chunks_before(self, bucket: str, subject: str, before: int) -> list[bytes]:
        """The messages stored on ``subject`` before sequence ``before``, in order."""
        out: list[bytes] = []
        seq = 1
        while (found := self._get(bucket, {"seq": seq, "next_by_subj": subject})) is not None:
            if found.seq >= before:
                break
            out.append(found.data)
            seq = found.seq + 1
        return out
