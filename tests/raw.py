"""Raw JetStream access through nats-py, to check what natsobj wrote on the wire."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import nats

from natsobj.names import meta_subject
from natsobj.sync import run


@dataclass
class RawMsg:
    data: bytes
    headers: dict[str, str]
    seq: int
    time: str


class RawJetStream:
    def __init__(self, url: str) -> None:
        self.nc = run(nats.connect(url))
        self.js = self.nc.jetstream()
        self.jsm = self.nc.jsm()

    def stream_config(self, bucket: str) -> dict[str, Any]:
        async def go() -> dict[str, Any]:
            reply = await self.nc.request(f"$JS.API.STREAM.INFO.OBJ_{bucket}", b"")
            return json.loads(reply.data)["config"]

        return run(go())

    def last_msg(self, subject: str, bucket: str) -> RawMsg:
        """The last message on a subject via STREAM.MSG.GET (not the code under test)."""

        async def go() -> RawMsg:
            request = json.dumps({"last_by_subj": subject}).encode()
            reply = await self.nc.request(f"$JS.API.STREAM.MSG.GET.OBJ_{bucket}", request)
            message = json.loads(reply.data)["message"]
            headers = {}
            if message.get("hdrs"):
                lines = base64.b64decode(message["hdrs"]).decode().split("\r\n")[1:]
                headers = dict(line.split(": ", 1) for line in lines if ": " in line)
            data = base64.b64decode(message.get("data") or b"")
            return RawMsg(data, headers, int(message["seq"]), message["time"])

        return run(go())

    def subject_count(self, bucket: str, subject: str) -> int:
        async def go() -> int:
            info = await self.jsm.stream_info(f"OBJ_{bucket}", subjects_filter=subject)
            return sum((info.state.subjects or {}).values())

        return run(go())

    def publish(self, subject: str, data: bytes, headers: dict[str, str] | None = None) -> int:
        return run(self.js.publish(subject, data, headers=headers)).seq

    def close(self) -> None:
        run(self.nc.close())


FORGED_DIGEST = "SHA-256=" + base64.urlsafe_b64encode(b"\0" * 32).decode()
"""A well-formed digest no data has: what a writer forging a record would put there."""


def rewrite_record(raw: RawJetStream, bucket: str, name: str, **fields: Any) -> dict[str, Any]:
    """Republish ``name``'s meta record with ``fields`` changed, as any writer to the bucket
    can (the chunks stay); returns the record as it was."""
    subject = meta_subject(bucket, name)
    record = json.loads(raw.last_msg(subject, bucket).data)
    raw.publish(subject, json.dumps({**record, **fields}).encode(), {"Nats-Rollup": "sub"})
    return record
