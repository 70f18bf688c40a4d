"""S3's rules that need no HTTP server: Signature Version 4, presigned URLs and the
gateway's access keys. The CLI and the ``nats://`` filesystem presign with them without
the gateway extra; ``natsobj.gateway`` (aiohttp) serves S3 with them."""
