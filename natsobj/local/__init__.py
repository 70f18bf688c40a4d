"""This machine's state: the embedded nats-server and the rule that decides when a face
reaches it, the files natsobj keeps for a user (any file another local user can write
is untrusted input), the listings' local name index, and a prefix mirrored in a local
directory."""
