"""The dict an object's record becomes in a task's XCom and in a trigger's event.

``ObjectInfo.as_dict()`` plus what an S3 user looks for in an S3 event or a boto3 answer:
``version_id``, the id to hand back as ``version_id=`` / ``source_version_id=``
(``ObjectInfo.version_id``: the record's nuid, docs/versioning.md; None for a plain tombstone
or an expiry, which are no version), and ``delete_marker``, whether the record is a versioned
delete's marker.
"""

from __future__ import annotations

from typing import Any

from natsobj.model import ObjectInfo


def object_payload(info: ObjectInfo) -> dict[str, Any]:
    """``info`` as JSON-safe XCom and trigger-event content, with its version id and marker flag."""
    return {**info.as_dict(), "version_id": info.version_id, "delete_marker": info.delete_marker}
