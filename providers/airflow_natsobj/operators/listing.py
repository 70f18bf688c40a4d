"""List object names, or the common prefixes under a prefix, into XCom: the twins of the
Amazon provider's ``S3ListOperator`` and ``S3ListPrefixesOperator``, with its parameter names.

Both go through the hook's listing (the core's: the name index, then only the matching meta
records), and return plain lists of strings as Amazon's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_natsobj.operators.object_store import NatsBaseOperator
from airflow_natsobj.options import unset
from airflow_natsobj.wording import airflow_words
from natsobj.errors import in_words_of

if TYPE_CHECKING:
    from airflow.sdk import Context


class NatsListOperator(NatsBaseOperator):
    """The names of the objects in ``bucket`` whose names start with ``prefix`` and match
    ``glob``, sorted; returned to XCom.

    ``delimiter`` (as S3's): names that have it after the prefix are left out, so
    ``prefix="customers/2018/04/", delimiter="/"`` lists the objects directly in that
    "directory". ``glob`` takes the place of Amazon's ``apply_wildcard`` (which reads the
    prefix as an ``fnmatch`` pattern): natsobj's path-aware glob (``*`` stays inside one
    ``/`` segment, ``**`` crosses them), the same on every natsobj face.
    """

    template_fields: Sequence[str] = ("bucket", "prefix", "delimiter", "glob")
    ui_color = "#ffd700"

    def __init__(
        self,
        *,
        bucket: str,
        prefix: str = "",
        delimiter: str = "",
        glob: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.prefix = prefix
        self.delimiter = delimiter
        self.glob = glob

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> list[str]:
        with self.hook() as hook:
            listed = hook.list(
                self.bucket,
                prefix=unset(self.prefix),
                glob=unset(self.glob),
                delimiter=unset(self.delimiter),
            )
        found = [info.name for info in listed]
        self.log.info(
            "Listed %d name(s) in bucket %s (prefix %r, glob %r, delimiter %r)",
            len(found),
            self.bucket,
            self.prefix,
            self.glob,
            self.delimiter,
        )
        return found


class NatsListPrefixesOperator(NatsBaseOperator):
    """The common prefixes under ``prefix`` (S3's ``CommonPrefixes``: the prefix and the rest
    of a name up to and including the first ``delimiter`` after it), sorted and each once;
    returned to XCom. ``prefix="customers/2018/", delimiter="/"`` gives
    ``["customers/2018/04/", "customers/2018/05/"]``.
    """

    template_fields: Sequence[str] = ("bucket", "prefix", "delimiter")
    ui_color = "#ffd700"

    def __init__(self, *, bucket: str, prefix: str, delimiter: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.prefix = prefix
        self.delimiter = delimiter

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> list[str]:
        with self.hook() as hook:
            found = hook.list_prefixes(
                self.bucket, prefix=unset(self.prefix), delimiter=unset(self.delimiter) or ""
            )
        self.log.info(
            "Listed %d prefix(es) in bucket %s under %r (delimiter %r)",
            len(found),
            self.bucket,
            self.prefix,
            self.delimiter,
        )
        return found
