"""Moved to ``natsobj.orchestration.lineage``: the old path works for one release,
with a DeprecationWarning."""

from natsobj.deprecation import moved_module

moved_module(__name__, "natsobj.orchestration.lineage")
