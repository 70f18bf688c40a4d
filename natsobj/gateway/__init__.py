"""An S3-compatible gateway in front of NATS object stores: a face on the async core.

``natsobj gateway --listen HOST:PORT --credentials FILE`` runs it; ``start`` embeds it in a
running event loop. See docs/gateway.md for what it serves and how it maps S3 onto ADR-20.
"""

from natsobj.extras import require_extra

require_extra("gateway", "natsobj.gateway")

from natsobj.gateway.observability import Observability
from natsobj.gateway.server import BadTlsFiles, Running, serve, start, tls_context
from natsobj.s3.access_keys import AccessKey, BadCredentialsFile
from natsobj.s3.gateway_limits import Limits

__all__ = [
    "AccessKey",
    "BadCredentialsFile",
    "BadTlsFiles",
    "Limits",
    "Observability",
    "Running",
    "serve",
    "start",
    "tls_context",
]
