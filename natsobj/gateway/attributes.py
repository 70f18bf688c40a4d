"""GetObjectAttributes (``GET ?attributes``): what ``x-amz-object-attributes`` asks for of an
object (ETag, Checksum, ObjectParts, StorageClass, ObjectSize), from its record alone."""

from __future__ import annotations

from aiohttp import web

from natsobj.aio import Client, links
from natsobj.gateway import checksums, metadata, parts, versions, xml
from natsobj.gateway.s3errors import S3Error

NAMES = frozenset({"ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"})
MAX_PARTS = 1000  # S3's page of parts


def _number(request: web.Request, header: str, default: int) -> int:
    try:
        value = int(request.headers.get(header, default))
    except ValueError:
        raise S3Error("InvalidArgument", f"{header} must be an integer") from None
    if value < 0:
        raise S3Error("InvalidArgument", f"{header} must be at least 0")
    return value


async def get_attributes(
    client: Client, request: web.Request, bucket: str, key: str, version: str | None = None
) -> web.Response:
    """The attributes asked for (of ``version``, the current one unless named); ObjectParts
    only for an object completed from parts (its parts after ``x-amz-part-number-marker``, at
    most ``x-amz-max-parts``)."""
    wanted = {
        name.strip()
        for name in request.headers.get("x-amz-object-attributes", "").split(",")
        if name.strip()
    }
    if not wanted or not wanted <= NAMES:
        raise S3Error(
            "InvalidArgument",
            f"x-amz-object-attributes must name some of {', '.join(sorted(NAMES))}",
        )
    store = await client.store(bucket)
    # a link answers for the object it names, as a GET of it does; one into another bucket
    # is refused (LinkError), never described
    if version is None:
        found = await store.get_info(key)
        _, info = await links.follow(store, found, client.store, follow_links=False)
    else:
        info = await versions.named(version, lambda: store.get_info(key, version=version))
    kept = checksums.stored(info)
    fields: list[str] = []
    if "ETag" in wanted:
        fields.append(xml.element("ETag", metadata.etag(info).strip('"')))
    if "Checksum" in wanted and kept is not None:
        fields.append(
            "<Checksum>"
            + checksums.element(kept)
            + xml.element("ChecksumType", kept.kind)
            + "</Checksum>"
        )
    layout = parts.layout(info)
    if "ObjectParts" in wanted and layout is not None:
        marker = _number(request, "x-amz-part-number-marker", 0)
        limit = min(_number(request, "x-amz-max-parts", MAX_PARTS), MAX_PARTS)
        after = [part for part in layout if part.number > marker]
        page = after[:limit]
        fields.append(
            "<ObjectParts>"
            + xml.element("PartsCount", len(layout))
            + xml.element("PartNumberMarker", marker)
            + xml.element("NextPartNumberMarker", page[-1].number if page else marker)
            + xml.element("MaxParts", limit)
            + xml.element("IsTruncated", len(after) > limit)
            + "".join(
                "<Part>"
                + xml.element("PartNumber", part.number)
                + xml.element("Size", part.size)
                + (checksums.element(kept, part.checksum) if part.checksum else "")
                + "</Part>"
                for part in page
            )
            + "</ObjectParts>"
        )
    if "StorageClass" in wanted:
        fields.append(xml.element("StorageClass", "STANDARD"))
    if "ObjectSize" in wanted:
        fields.append(xml.element("ObjectSize", info.size))
    headers = await versions.id_headers(store, info.nuid)
    if info.mtime is not None:
        headers["Last-Modified"] = metadata.response_headers(info)["Last-Modified"]
    body = xml.document("GetObjectAttributesResponse", fields)
    return web.Response(body=body, content_type=xml.CONTENT_TYPE, headers=headers)
