"""wire.error_messages: Kafka's default message of each error (Errors.<CODE>.message()), read
from kio's source without importing kio's schema modules."""
from __future__ import annotations

import subprocess
import sys

from kio.schema.errors import ErrorCode as KioErrorCode

from wire.error_messages import default_message, message_or_name


def test_kafka_s_messages() -> None:
    assert default_message(0) is None  # NONE: Kafka's message is null
    assert default_message(-1) == "The server experienced an unexpected error when processing the request."
    assert default_message(3) == "This server does not host this topic-partition."
    assert default_message(15) == "The coordinator is not available."
    assert default_message(16) == "This is not the correct coordinator."
    assert message_or_name(0, "NONE") == "NONE"
    assert message_or_name(15, "COORDINATOR_NOT_AVAILABLE") == "The coordinator is not available."
    # Every error kio knows but NONE has its message.
    assert [int(c) for c in KioErrorCode if int(c) != 0 and default_message(int(c)) is None] == []


def test_messages_are_read_without_importing_kio_s_schemas() -> None:
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "from wire.error_messages import default_message\n"
            "assert default_message(15) == 'The coordinator is not available.'\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('kio'))\n"
            "assert loaded == ['kio', 'kio._version', 'kio.schema'], loaded\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
