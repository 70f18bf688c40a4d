"""S3 lifecycle configuration through the gateway (Put/Get/DeleteBucketLifecycle), mapped onto
the bucket's natsobj lifecycle rules (``natsobj.lifecycle.LifecycleRule``), so the CLI, Python
and every other face apply what an S3 client set.

Each S3 rule is one natsobj rule: its prefix a glob (``prefix**``), ``Expiration Days`` its TTL,
``ExpiredObjectDeleteMarker`` and ``NoncurrentVersionExpiration`` its version actions, its
``ID`` the rule's label. What natsobj cannot do (transitions, an expiration date, tag and size
filters, AbortIncompleteMultipartUpload) is NotImplemented, never stored and ignored.

S3 applies every rule that matches a key; natsobj the first one. So the natsobj rules are kept
ordered by TTL (S3 takes the shortest expiration when rules overlap), and two enabled rules
with overlapping prefixes that both act on kept versions are refused: natsobj would apply only
one of them. The configuration as S3 sees it (its order, which rules are Disabled, which used
the older rule-level ``Prefix``) is kept beside the rules under ``S3_METADATA``, with the rules
text it was put with: once the rules are set by another face, that record no longer matches
and Get shows the rules as they are (a Disabled rule is then gone, as the rules were
replaced). A disabled rule is never among the rules puts and sweeps read, so no natsobj,
however old, applies it."""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from xml.etree import ElementTree

from aiohttp import web

from natsobj.aio import Client, ObjectStore
from natsobj.errors import BadLifecycleRule, ExpiryNotEnabled
from natsobj.gateway import xml
from natsobj.gateway.s3errors import S3Error
from natsobj.lifecycle import (
    LIFECYCLE_METADATA_KEY,
    MAX_TTL,
    LifecycleRule,
    decode_rules,
    encode_rules,
)
from natsobj.store_config import NATSOBJ_METADATA
from natsobj.versioning import Versioning

S3_METADATA = NATSOBJ_METADATA + ".s3.lifecycle"
MAX_RULES = 1000  # S3's limit of rules in one configuration
MAX_ID = 255  # S3's longest rule ID
MAX_NEWER_NONCURRENT = 100  # S3's largest NewerNoncurrentVersions
_BODY = 1 << 20
_EVERYTHING = "**"
_RULE_FIELDS = {
    "ID",
    "Status",
    "Filter",
    "Prefix",
    "Expiration",
    "NoncurrentVersionExpiration",
    "Transition",
    "NoncurrentVersionTransition",
    "AbortIncompleteMultipartUpload",
}


@dataclass(frozen=True)
class S3Rule:
    """One rule as S3 sees it: the natsobj rule it is, whether it is enabled, and whether it
    named its prefix the older way (``Prefix`` in the rule rather than in a ``Filter``)."""

    rule: LifecycleRule
    prefix: str
    enabled: bool = True
    legacy_prefix: bool = False


# -- prefixes and globs --------------------------------------------------------------------------


def prefix_glob(prefix: str) -> str:
    """The glob matching exactly the names that start with ``prefix``: its wildcards each a
    class of one (``[*]``, ``[?]``), then ``**``. A ``[`` is a wildcard only with a ``]`` after
    it, and a class of ``[`` alone cannot be written, so a prefix with a ``[`` before a ``]``,
    ``*`` or ``?`` is refused (NotImplemented) rather than matched differently."""
    opening = prefix.find("[")
    if opening != -1 and any(ch in prefix[opening:] for ch in "]*?"):
        raise S3Error(
            "NotImplemented",
            f"the prefix {prefix!r} holds a '[' before a ']', '*' or '?', which natsobj's"
            " lifecycle globs cannot match literally",
        )
    return "".join(f"[{ch}]" if ch in "*?" else ch for ch in prefix) + _EVERYTHING


def glob_prefix(pattern: str) -> str | None:
    """The prefix whose ``prefix_glob`` is ``pattern``; None when it is no such glob (a rule
    set by another face, ``tmp/*.csv``), which an S3 prefix cannot say."""
    if not pattern.endswith(_EVERYTHING):
        return None
    head, prefix, i = pattern[: -len(_EVERYTHING)], [], 0
    while i < len(head):
        if head[i] == "[" and head[i + 2 : i + 3] == "]" and head[i + 1 : i + 2] in ("*", "?"):
            prefix.append(head[i + 1])
            i += 3
        elif head[i] in "*?":
            return None
        else:
            prefix.append(head[i])
            i += 1
    text = "".join(prefix)
    try:
        return text if prefix_glob(text) == pattern else None
    except S3Error:
        return None


# -- PutBucketLifecycleConfiguration -------------------------------------------------------------


def _tag(element: ElementTree.Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def _children(element: ElementTree.Element, allowed: set[str]) -> dict[str, ElementTree.Element]:
    """An element's children by tag, each known and at most once (MalformedXML otherwise)."""
    found: dict[str, ElementTree.Element] = {}
    for child in element:
        tag = _tag(child)
        if tag in found or tag not in allowed:
            raise S3Error("MalformedXML", f"unexpected or repeated <{tag}> in <{_tag(element)}>")
        found[tag] = child
    return found


def _text(element: ElementTree.Element | None) -> str | None:
    return (element.text or "").strip() if element is not None else None


def _count(value: str | None, what: str, *, most: int) -> int:
    if value is None or not value.isdigit() or not 1 <= int(value) <= most:
        raise S3Error("InvalidArgument", f"'{what}' must be a positive integer up to {most}")
    return int(value)


def _prefix(fields: Mapping[str, ElementTree.Element]) -> tuple[str, bool]:
    """The rule's prefix and whether it was given the older way (``Prefix`` in the rule)."""
    if ("Filter" in fields) == ("Prefix" in fields):
        raise S3Error("MalformedXML", "a Rule has either a Filter or a Prefix")
    if "Prefix" in fields:
        return _text(fields["Prefix"]) or "", True
    parts = _children(
        fields["Filter"], {"Prefix", "Tag", "And", "ObjectSizeGreaterThan", "ObjectSizeLessThan"}
    )
    if len(parts) > 1:
        raise S3Error("MalformedXML", "a Filter holds one condition; several go in an <And>")
    if "And" in parts:
        parts = _children(
            parts["And"], {"Prefix", "Tag", "ObjectSizeGreaterThan", "ObjectSizeLessThan"}
        )
    unserved = sorted(set(parts) - {"Prefix"})
    if unserved:
        raise S3Error(
            "NotImplemented",
            f"lifecycle filters by {', '.join(unserved)} are not implemented by this gateway:"
            " natsobj's rules match names only",
        )
    return _text(parts.get("Prefix")) or "", False


def _expiration(fields: Mapping[str, ElementTree.Element]) -> tuple[timedelta | None, bool]:
    """``Expiration``: its ``Days`` as a TTL, and ``ExpiredObjectDeleteMarker``."""
    if "Expiration" not in fields:
        return None, False
    parts = _children(fields["Expiration"], {"Days", "Date", "ExpiredObjectDeleteMarker"})
    if "Date" in parts:
        raise S3Error(
            "NotImplemented",
            "an Expiration Date is not implemented by this gateway: natsobj expires an object"
            " a TTL after it is written (give Days)",
        )
    marker = _text(parts.get("ExpiredObjectDeleteMarker"))
    if marker not in (None, "true", "false"):
        raise S3Error("MalformedXML", "ExpiredObjectDeleteMarker is true or false")
    if "Days" in parts and marker is not None:
        raise S3Error(
            "InvalidArgument",
            "ExpiredObjectDeleteMarker cannot be specified with Days or Date in a Lifecycle"
            " Expiration Policy",
        )
    if "Days" not in parts and marker is None:
        raise S3Error("MalformedXML", "an Expiration has Days or ExpiredObjectDeleteMarker")
    days = _text(parts.get("Days"))
    ttl = timedelta(days=_count(days, "Days", most=MAX_TTL.days)) if days is not None else None
    return ttl, marker == "true"


def _noncurrent(fields: Mapping[str, ElementTree.Element]) -> tuple[int | None, int | None]:
    """``NoncurrentVersionExpiration``: ``NoncurrentDays`` and ``NewerNoncurrentVersions``."""
    if "NoncurrentVersionExpiration" not in fields:
        return None, None
    parts = _children(
        fields["NoncurrentVersionExpiration"], {"NoncurrentDays", "NewerNoncurrentVersions"}
    )
    if not parts:
        raise S3Error("MalformedXML", "a NoncurrentVersionExpiration has NoncurrentDays")
    days, newer = _text(parts.get("NoncurrentDays")), _text(parts.get("NewerNoncurrentVersions"))
    return (
        _count(days, "NoncurrentDays", most=MAX_TTL.days) if days is not None else None,
        _count(newer, "NewerNoncurrentVersions", most=MAX_NEWER_NONCURRENT)
        if newer is not None
        else None,
    )


def _check_dates(rule: ElementTree.Element) -> None:
    """Every ``Date`` of a rule (its Expiration's, its Transitions') is checked as S3 checks it,
    midnight UTC in ISO 8601, before the rule is refused for having one: an invalid date is
    the caller's error (InvalidArgument) whatever this gateway serves."""
    for element in rule.iter():
        if _tag(element) != "Date":
            continue
        text = _text(element) or ""
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise S3Error("InvalidArgument", f"Invalid date {text!r}") from None
        if when.tzinfo is None or when.utcoffset() or when.timetz() != time(tzinfo=when.tzinfo):
            raise S3Error("InvalidArgument", "'Date' must be at midnight GMT")


def _refuse_unserved(fields: Mapping[str, ElementTree.Element]) -> None:
    for name in ("Transition", "NoncurrentVersionTransition"):
        if name in fields:
            raise S3Error(
                "NotImplemented",
                f"{name} is not implemented by this gateway: a NATS object store has one"
                " storage class (natsobj's archive tiers objects out: `natsobj archive offload`)",
            )
    if "AbortIncompleteMultipartUpload" in fields:
        raise S3Error(
            "NotImplemented",
            "AbortIncompleteMultipartUpload is not implemented by this gateway: an upload"
            " neither completed nor aborted expires on its own after 7 days",
        )


def parse_rule(element: ElementTree.Element, given_ids: set[str]) -> S3Rule:
    """One ``Rule`` of a configuration as the natsobj rule it is; S3's errors otherwise."""
    if _tag(element) != "Rule":
        raise S3Error(
            "MalformedXML", f"a LifecycleConfiguration holds Rules, not <{_tag(element)}>"
        )
    fields = _children(element, _RULE_FIELDS)
    status = _text(fields.get("Status"))
    if status not in ("Enabled", "Disabled"):
        raise S3Error("MalformedXML", "a Rule's Status is Enabled or Disabled")
    rule_id = _text(fields.get("ID")) or secrets.token_hex(16)
    if len(rule_id) > MAX_ID:
        raise S3Error("InvalidArgument", f"ID length should not exceed allowed limit of {MAX_ID}")
    if rule_id in given_ids:
        raise S3Error(
            "InvalidArgument", "Rule ID must be unique. Found same ID for more than one rule"
        )
    given_ids.add(rule_id)
    prefix, legacy = _prefix(fields)
    _check_dates(element)
    _refuse_unserved(fields)
    ttl, markers = _expiration(fields)
    noncurrent_days, newer = _noncurrent(fields)
    if ttl is None and not markers and noncurrent_days is None and newer is None:
        raise S3Error("InvalidRequest", "At least one action needs to be specified in a rule")
    try:
        rule = LifecycleRule(
            prefix_glob(prefix),
            ttl,
            noncurrent_days=noncurrent_days,
            newer_noncurrent=newer,
            expired_delete_markers=markers,
            rule_id=rule_id,
        )
    except BadLifecycleRule as exc:
        raise S3Error("InvalidArgument", exc.message) from None
    return S3Rule(rule, prefix, status == "Enabled", legacy)


def parse_configuration(body: bytes) -> list[S3Rule]:
    root = xml.parse(body)
    if _tag(root) != "LifecycleConfiguration":
        raise S3Error("MalformedXML", "The XML you provided was not well-formed")
    rules = list(root)
    if not rules or len(rules) > MAX_RULES:
        raise S3Error("MalformedXML", f"a LifecycleConfiguration holds 1 to {MAX_RULES} Rules")
    given_ids: set[str] = set()
    parsed = [parse_rule(rule, given_ids) for rule in rules]
    _refuse_overlapping_version_rules([r for r in parsed if r.enabled])
    return parsed


def _refuse_overlapping_version_rules(rules: list[S3Rule]) -> None:
    """Two enabled rules acting on kept versions whose prefixes overlap: natsobj applies one
    rule's version actions to a name (the first), S3 every rule's, so it is refused. Sorted,
    a prefix of another comes right before some prefix it starts."""
    acting = sorted((r for r in rules if r.rule.governs_versions), key=lambda r: r.prefix)
    for one, two in itertools.pairwise(acting):
        if two.prefix.startswith(one.prefix):
            raise S3Error(
                "InvalidArgument",
                f"rules {one.rule.rule_id!r} and {two.rule.rule_id!r} both act on noncurrent"
                f" versions or delete markers and their prefixes overlap ({one.prefix!r},"
                f" {two.prefix!r}): natsobj applies one rule's version actions per key; give"
                " them in one rule, or make the prefixes disjoint",
            )


def _kept(rules: list[S3Rule]) -> tuple[list[LifecycleRule], str]:
    """The natsobj rules puts and sweeps read (the enabled ones, shortest TTL first: S3 takes
    the shortest expiration where rules overlap, natsobj the first match), and the record of
    the configuration as S3 sees it, kept under ``S3_METADATA``."""
    enabled = sorted(
        (r for r in rules if r.enabled), key=lambda r: r.rule.ttl or timedelta.max
    )  # stable: equal TTLs keep their order
    at = {id(r): i for i, r in enumerate(enabled)}
    disabled: list[LifecycleRule] = []
    shape: list[dict[str, object]] = []
    for r in rules:
        entry: dict[str, object] = {"at": at[id(r)]} if r.enabled else {"disabled": len(disabled)}
        if not r.enabled:
            disabled.append(r.rule)
        if r.legacy_prefix:
            entry["legacy"] = True
        shape.append(entry)
    kept = [r.rule for r in enabled]
    record = {
        "with": encode_rules(kept) if kept else "",
        "disabled": encode_rules(disabled) if disabled else "",
        "rules": shape,
    }
    return kept, json.dumps(record, separators=(",", ":"))


async def put_configuration(client: Client, request: web.Request, bucket: str) -> web.Response:
    """PutBucketLifecycleConfiguration: the bucket's rules replaced by these."""
    rules = parse_configuration(await xml.read_body(request, _BODY))
    kept, record = _kept(rules)
    store = await client.store(bucket)
    if any(rule.ttl for rule in kept) and await store.versioning() is not Versioning.UNVERSIONED:
        raise S3Error(
            "NotImplemented",
            "an Expiration of Days in a versioned bucket is not implemented by this gateway: S3"
            " makes the current version noncurrent behind a delete marker, natsobj's expiry"
            " removes the version itself; expire noncurrent versions instead"
            " (NoncurrentVersionExpiration)",
            bucket=bucket,
        )
    try:
        await store.set_lifecycle_rules(kept)
    except ExpiryNotEnabled as exc:
        raise S3Error(
            "InvalidBucketState",
            f"an Expiration needs per-object expiry on the bucket: {exc}",
            bucket=bucket,
        ) from None
    await store.bucket_stream.set_metadata(S3_METADATA, record)
    return web.Response()


# -- GetBucketLifecycleConfiguration -------------------------------------------------------------


def _shown(rules: list[LifecycleRule], record: str | None, text: str) -> list[S3Rule]:
    """The configuration as S3 sees it: as it was put when ``record`` was written with the
    rules now kept (``text``); else (the rules set since by another face, or a record anyone
    allowed to update the stream could have written that does not fit) the rules as they are,
    in their order, each with a Filter."""
    plain = [S3Rule(rule, _prefix_of(rule)) for rule in rules]
    try:
        doc = json.loads(record or "null")
        if not isinstance(doc, dict) or doc.get("with") != text:
            return plain
        disabled = decode_rules({LIFECYCLE_METADATA_KEY: doc.get("disabled") or ""})
        shown, used = [], set()
        for entry in doc["rules"]:
            legacy = entry.get("legacy") is True
            if "at" in entry:
                rule, enabled = rules[entry["at"]], True
                used.add(entry["at"])
            else:
                rule, enabled = disabled[entry["disabled"]], False
            if rule.problem:
                return plain
            shown.append(S3Rule(rule, _prefix_of(rule), enabled, legacy))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return plain
    return shown if used == set(range(len(rules))) else plain


def _prefix_of(rule: LifecycleRule) -> str:
    """The S3 prefix of a kept rule; NotImplemented for one S3 cannot state (a glob that is
    no prefix, ``never``, a TTL of hours, a TTL with ExpiredObjectDeleteMarker, an unusable
    rule), rather than a configuration that says less."""
    prefix = None if rule.problem else glob_prefix(rule.pattern)
    days = rule.ttl is None or not rule.ttl % timedelta(days=1)
    stated = days and not (rule.ttl and rule.expired_delete_markers)
    if prefix is None or not stated or not (rule.ttl or rule.governs_versions):
        raise S3Error(
            "NotImplemented",
            f"the bucket's lifecycle rule {str(rule)!r} cannot be shown as S3 lifecycle"
            " configuration (S3 rules match a prefix and expire something); see it with"
            " `natsobj store lifecycle BUCKET`",
        )
    return prefix


def _rule_xml(shown: S3Rule) -> str:
    rule = shown.rule
    parts = [xml.element("ID", rule.rule_id)] if rule.rule_id is not None else []
    if shown.legacy_prefix:
        parts.append(xml.element("Prefix", shown.prefix))
    else:
        parts.append("<Filter>" + xml.element("Prefix", shown.prefix) + "</Filter>")
    parts.append(xml.element("Status", "Enabled" if shown.enabled else "Disabled"))
    if rule.ttl is not None:
        parts.append("<Expiration>" + xml.element("Days", rule.ttl.days) + "</Expiration>")
    elif rule.expired_delete_markers:
        parts.append(
            "<Expiration>" + xml.element("ExpiredObjectDeleteMarker", True) + "</Expiration>"
        )
    if rule.noncurrent_days is not None or rule.newer_noncurrent is not None:
        inner = []
        if rule.noncurrent_days is not None:
            inner.append(xml.element("NoncurrentDays", rule.noncurrent_days))
        if rule.newer_noncurrent is not None:
            inner.append(xml.element("NewerNoncurrentVersions", rule.newer_noncurrent))
        parts.append(
            "<NoncurrentVersionExpiration>" + "".join(inner) + "</NoncurrentVersionExpiration>"
        )
    return "<Rule>" + "".join(parts) + "</Rule>"


async def _metadata(store: ObjectStore) -> dict[str, str]:
    return dict((await store.bucket_stream.info()).config.get("metadata") or {})


async def get_configuration(client: Client, bucket: str) -> web.Response:
    """GetBucketLifecycleConfiguration: the rules as they were put (IDs, order, Disabled
    rules, the form of each prefix); NoSuchLifecycleConfiguration when there are none."""
    metadata = await _metadata(await client.store(bucket))
    try:
        rules = decode_rules(metadata)
    except ValueError as exc:
        raise S3Error("InternalError", str(exc), bucket=bucket) from None
    text = metadata.get(LIFECYCLE_METADATA_KEY) or ""
    shown = _shown(rules, metadata.get(S3_METADATA), text)
    if not shown:
        raise S3Error(
            "NoSuchLifecycleConfiguration",
            "The lifecycle configuration does not exist",
            bucket=bucket,
        )
    body = xml.document("LifecycleConfiguration", [_rule_xml(r) for r in shown])
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


# -- DeleteBucketLifecycle -----------------------------------------------------------------------


async def delete_configuration(client: Client, bucket: str) -> web.Response:
    """DeleteBucketLifecycle: no rules (204 whether or not there were any, as S3 answers)."""
    store = await client.store(bucket)
    await store.set_lifecycle_rules([])
    await store.bucket_stream.set_metadata(S3_METADATA, None)
    return web.Response(status=204)
