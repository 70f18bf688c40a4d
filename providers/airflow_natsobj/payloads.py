"""The dict an object's record becomes in a task's XCom and in a trigger's event.

``ObjectInfo.as_dict()`` plus what an S3 user looks for in an S3 event or a boto3 answer:
``version_id``, the id to hand back as ``version_id=`` / ``source_version_id=`` (the
record's nuid, docs/versioning.md), and ``delete_marker``, whether the record is a versioned
delete's marker. A record that is no version (a plain tombstone, a link, a record without a
digest: ``natsobj.aio.versions.keepable``) has ``version_id`` None, since no version id
reads it back.
"""

from __future__ import annotations

from typing import Any

from natsobj.aio.versions import keepable
from natsobj.model import ObjectInfo
from natsobj.versioning import is_delete_marker


def object_payload(info: ObjectInfo) -> dict[str, Any]:
    """``info`` as JSON-safe XCom and trigger-event content, with its version id and marker flag."""
    return {
        **info.as_dict(),
        "version_id": info.nuid if keepable(info) else None,
        "delete_marker": is_delete_marker(info),
    }
