"""Continuous archive of object stores to S3-compatible storage, and restore from it.

Needs the ``archive`` extra (``pip install 'natsobj[archive]'``). See docs/archive.md.
"""

from natsobj.extras import require_extra

require_extra("archive", "natsobj.archive")

from natsobj.archive.archiver import Archiver, ArchiveTotals
from natsobj.archive.index import ArchiveRecord
from natsobj.archive.restore import RestoreResult, plan_restore, restore
from natsobj.archive.status import ArchiveStatus, archive_status
from natsobj.archive.target import ArchiveTarget, ArchiveTargetError, S3Options
from natsobj.archive.targets import STRATEGIES, ArchiveTargets, load_index
from natsobj.archive.verify import VerifyReport, verify

__all__ = [
    "STRATEGIES",
    "ArchiveRecord",
    "ArchiveStatus",
    "ArchiveTarget",
    "ArchiveTargetError",
    "ArchiveTargets",
    "ArchiveTotals",
    "Archiver",
    "RestoreResult",
    "S3Options",
    "VerifyReport",
    "archive_status",
    "load_index",
    "plan_restore",
    "restore",
    "verify",
]
