"""The archiver never archives a version whose record has no digest: it would be restored as
if verified. The version is indexed as skipped with MissingDigest's message, as verify would
flag it (issue 21, point 9)."""

from __future__ import annotations

import asyncio

import natsobj
from natsobj.archive import Archiver, ArchiveTarget
from natsobj.model import digest_of
from tests.security.test_missing_digest_faces import CONTENT, refusal, strip_digest


def test_a_version_without_digest_is_skipped_with_a_clear_message(
    nats_url, store, raw, archive_url, caplog
):
    store.put("plain", CONTENT)
    strip_digest(raw, store.bucket, "plain")
    store.put("fine", b"verified")

    async def body():
        async with await natsobj.aio.connect(nats_url) as client:
            archiver = Archiver(await client.store(store.bucket), ArchiveTarget(archive_url))
            await archiver.run(once=True)
            return archiver.totals, await archiver.targets.load_index()

    totals, records = asyncio.run(body())
    by_kind = {(r.kind, r.name) for r in records}
    assert ("put", "fine") in by_kind and ("put", "plain") not in by_kind
    (without,) = [r for r in records if r.name == "plain" and r.digest == ""]
    assert without.kind == "skipped" and without.key == ""
    assert refusal(store.bucket, "plain") in without.description
    assert "archive keeps only versions it can verify" in without.description
    assert without.sequence in totals.skipped
    assert refusal(store.bucket, "plain") in caplog.text
    assert [r.digest for r in records if r.name == "fine"] == [digest_of(b"verified")]
