"""A short round trip through the embedded server: what `make demo` showed before the
pipelines existed, and still the quickest smoke test of an installation."""

from __future__ import annotations

import os

import natsobj


def main() -> None:
    with natsobj.connect("embedded") as client:
        print(f"connected to the embedded server at {client.settings.redacted_url()}")
        store = client.create_store("demo", description="natsobj round trip")
        data = os.urandom(3 * 1024 * 1024)
        info = store.put("roundtrip/random.bin", data, metadata={"made-by": "make demo"})
        print(f"put   {info.name}: {info.size} bytes in {info.chunks} chunks, {info.digest}")
        assert store.get_bytes(info.name) == data
        print(f"get   {info.name}: digest verified")
        print(f"list  {[i.name for i in store.list()]}")


if __name__ == "__main__":
    main()
