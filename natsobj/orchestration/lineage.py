"""The lineage identity of an object: the one OpenLineage (namespace, name) every face reports.

OpenLineage names an object-store dataset by its bucket and key (``spec/Naming.md``: namespace
``s3://{bucket}``, name ``{key}``; ``gs://`` alike), so lineage from any tool joins on it. An
object of a NATS bucket is named the same way: namespace ``nats://{bucket}``, name the object
name. Joined by a slash the two are the object's ``nats://`` URL, the URI of its Airflow asset.
The server it was reached through is not part of it, as the connection id is not part of an
asset URI: it says how to reach the data, not what the data is.
"""

from __future__ import annotations

from natsobj.paths import SCHEME

# The name of a dataset that is a whole bucket (as for an S3 bucket with no key).
WHOLE_BUCKET = "/"


def dataset_identity(bucket: str, name: str = "") -> tuple[str, str]:
    """(namespace, name) of object ``name`` of ``bucket`` (of the bucket, when ``name`` is
    empty) as an OpenLineage dataset."""
    return f"{SCHEME}{bucket}", name or WHOLE_BUCKET
