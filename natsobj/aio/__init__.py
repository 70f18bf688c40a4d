"""The async core: ``client = await natsobj.aio.connect(url)``."""

from natsobj.aio.client import Client, connect
from natsobj.aio.compaction import CompactResult
from natsobj.aio.put_modes import CREATE, OVERWRITE, PutMode
from natsobj.aio.ranges import RangeReader
from natsobj.aio.reader import ObjectReader
from natsobj.aio.scans import Changes
from natsobj.aio.store import ObjectStore
from natsobj.aio.watch import ObjectWatcher

__all__ = [
    "CREATE",
    "OVERWRITE",
    "Changes",
    "Client",
    "CompactResult",
    "ObjectReader",
    "ObjectStore",
    "ObjectWatcher",
    "PutMode",
    "RangeReader",
    "connect",
]
