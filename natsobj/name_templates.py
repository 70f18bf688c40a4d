"""Moved to ``natsobj.orchestration.name_templates``: the old path works for one release,
with a DeprecationWarning."""

from natsobj.deprecation import moved_module

moved_module(__name__, "natsobj.orchestration.name_templates")
