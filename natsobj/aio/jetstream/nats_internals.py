"""The nats-py and asyncio internals natsobj's fast paths use, checked before they are used.

Two paths go under nats-py's public API because its own copies and builds objects per message, which
a large transfer pays on every chunk (docs/performance.md): the raw deliveries and direct publishes
of ``jsapi`` and the whole-buffer socket reads of ``socket_reads``. pyproject.toml bounds nats-py to
the minor versions they are tested on; should one of the names they need be gone anyway (a nats-py
patched or released later, another Python), that path is left out and nats-py's own is used: slower,
never wrong.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

log = logging.getLogger(__name__)


def internals_present(path: str, owner: object, names: Iterable[str]) -> bool:
    """Whether ``owner`` has every one of ``names``; when not, says once (debug) which
    are missing and that ``path`` falls back to nats-py's stock code."""
    missing = [name for name in names if not hasattr(owner, name)]
    if missing:
        log.debug(
            "%s: %s has no %s (nats-py changed?); using nats-py's stock path",
            path,
            type(owner).__name__,
            ", ".join(missing),
        )
    return not missing
