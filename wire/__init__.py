"""The Kafka protocol, sans-io: bytes in, objects out.

No asyncio, no files, no sockets: framing (`wire.framing`), headers
(`wire.headers`), message bodies via kio (`wire.messages`, with a hand-written
Produce request decoder in `wire.produce_request` and Produce/Fetch response
encoders in `wire.response_encoders`), RecordBatch v2
(`wire.records`), codecs (`wire.compression`) and Kafka's error codes
(`wire.errors`). Submodules are imported explicitly; this package imports
nothing so that `import wire.errors` stays cheap.
"""
