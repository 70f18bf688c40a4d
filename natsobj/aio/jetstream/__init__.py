"""The JetStream layer under the object store, as nats.go's ``jetstream/``: API requests
and their error table, the failover policy, ordered consumers, windowed publishing,
batched direct gets, the connection's socket reads and the nats-py internals they rely
on, and the client's unique tokens. Nothing here knows a bucket of objects:
``natsobj.aio`` builds the object store on it (tests/house/layers.py)."""
