"""Moved to ``natsobj.aio.restate_proof``: the old path works for one release,
with a DeprecationWarning."""

from natsobj.deprecation import moved_module

moved_module(__name__, "natsobj.aio.restate_proof")
