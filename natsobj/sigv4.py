"""Moved to ``natsobj.s3.sigv4``: the old path works for one release,
with a DeprecationWarning."""

from natsobj.deprecation import moved_module

moved_module(__name__, "natsobj.s3.sigv4")
