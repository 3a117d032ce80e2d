"""atheris (libFuzzer) harness over the wire/ decoders; `make torture` runs it.

    .venv/bin/python tests/fuzz/atheris_wire.py -max_total_time=300 -print_final_stats=1 [corpus_dir]

The first input byte picks the target (framing, request header+body, record batches with
or without a valid CRC, decompression); the rest is its input. A typed KafkaError is the
allowed outcome; any other exception, a crash or a hang (-timeout) is a finding, which
libFuzzer saves as crash-<sha1> for replay (`python tests/fuzz/atheris_wire.py crash-...`).
Needs `pip install atheris` (not a project dependency).
"""
from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["wire"]):
    from wire_targets import TARGETS, run_one


def test_one_input(data: bytes) -> None:
    if not data:
        return
    run_one(data[0] % len(TARGETS), data[1:])


def main() -> None:
    argv = list(sys.argv)
    if not any(a.startswith("-max_total_time") or a.startswith("-runs") for a in argv[1:]):
        argv.append("-max_total_time=120")
    if not any(a.startswith("-rss_limit_mb") for a in argv[1:]):
        argv.append("-rss_limit_mb=1024")  # memory stays bounded: a decompression bomb is a finding
    if not any(a.startswith("-timeout") for a in argv[1:]):
        argv.append("-timeout=10")
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
