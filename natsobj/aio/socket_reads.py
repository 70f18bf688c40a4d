"""Moved to ``natsobj.aio.jetstream.socket_reads``: the old path works for one release,
with a DeprecationWarning."""

from natsobj.deprecation import moved_module

moved_module(__name__, "natsobj.aio.jetstream.socket_reads")
