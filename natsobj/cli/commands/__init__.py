"""Sub-commands of ``natsobj``, grouped by what they act on; each module exports COMMANDS."""
