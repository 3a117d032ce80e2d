"""`__transaction_state` key and value formats (asyncbroker/transaction_log.py).

The bytes are pinned here by hand from Kafka 4.4's TransactionLog{Key,Value}.json; that
Kafka's own decoder reads them is tests/logs/test_transaction_log_decoder.py.
"""
from __future__ import annotations

import pytest

from asyncbroker.transaction_log import (
    TransactionLogFormatError,
    TransactionLogValue,
    TxnRecord,
    TxnTombstone,
    UnknownKeyVersion,
    UnknownValueVersion,
    encode_key,
    encode_value,
    read,
    value_version_for,
)
from asyncbroker.transaction_state import TransactionState
from storage.topic_partition import TopicPartition

ONGOING = TransactionLogValue(
    producer_id=5, producer_epoch=3, transaction_timeout_ms=60_000, state=TransactionState.ONGOING,
    partitions=(TopicPartition("a", 0), TopicPartition("b", 1), TopicPartition("a", 2)),
    last_update_timestamp_ms=10, start_timestamp_ms=9)


def test_key_is_record_type_zero_then_the_transactional_id() -> None:
    assert encode_key("tx") == b"\x00\x00\x00\x02tx"


def test_value_v0_bytes() -> None:
    assert encode_value(ONGOING, 0).hex() == (
        "0000" "0000000000000005" "0003" "0000ea60" "01"
        "00000002" "0001" "61" "00000002" "00000000" "00000002" "0001" "62" "00000001" "00000001"
        "000000000000000a" "0000000000000009")


def test_value_v1_bytes_with_default_tags_left_out() -> None:
    assert encode_value(ONGOING, 1).hex() == (
        "0001" "0000000000000005" "0003" "0000ea60" "01"
        "03" "0261" "03" "00000000" "00000002" "00" "0262" "02" "00000001" "00"
        "000000000000000a" "0000000000000009" "00")


def test_value_v1_tags_in_ascending_order_when_set() -> None:
    value = TransactionLogValue(7, 1, 1000, TransactionState.COMPLETE_COMMIT, (), 5, 4, previous_producer_id=6,
                                next_producer_id=8, next_producer_epoch=0, client_transaction_version=2)
    tail = encode_value(value, 1)[-(1 + 10 + 10 + 4 + 4):]
    assert tail.hex() == ("04" "0008" "0000000000000006" "0108" "0000000000000008" "0202" "0002" "0302" "0000")


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("state", list(TransactionState))
def test_every_state_round_trips(state: TransactionState, version: int) -> None:
    partitions = () if state == TransactionState.EMPTY else (TopicPartition("t", 3), TopicPartition("u", 0))
    value = TransactionLogValue(11, 2, 900_000, state, partitions, 1_700_000_000_123, 1_700_000_000_000)
    if version == 1:
        value = TransactionLogValue(11, 2, 900_000, state, partitions, 1_700_000_000_123, 1_700_000_000_000,
                                    previous_producer_id=10, next_producer_id=12, next_producer_epoch=0,
                                    client_transaction_version=2)
    record = read(encode_key("my-txn"), encode_value(value, version))
    assert record == TxnRecord("my-txn", value)


def test_v0_drops_the_tagged_fields() -> None:
    value = TransactionLogValue(1, 0, 1000, TransactionState.ONGOING, (TopicPartition("t", 0),), 2, 1,
                                previous_producer_id=9, client_transaction_version=2)
    got = read(encode_key("x"), encode_value(value, 0))
    assert isinstance(got, TxnRecord)
    assert got.value.previous_producer_id == -1 and got.value.client_transaction_version == 0


def test_empty_state_writes_null_partitions_and_refuses_any() -> None:
    empty = TransactionLogValue(1, 0, 1000, TransactionState.EMPTY, (), 2, -1)
    assert encode_value(empty, 0)[2 + 8 + 2 + 4 + 1:][:4] == b"\xff\xff\xff\xff"
    assert encode_value(empty, 1)[2 + 8 + 2 + 4 + 1] == 0  # compact null
    with pytest.raises(TransactionLogFormatError):
        encode_value(TransactionLogValue(1, 0, 1000, TransactionState.EMPTY, (TopicPartition("t", 0),), 2, -1), 1)


def test_tombstone_unknown_key_and_value_versions() -> None:
    assert read(encode_key("gone"), None) == TxnTombstone("gone")
    assert read(b"\x00\x01\x00\x01g", b"\x00\x01") == UnknownKeyVersion(1)
    assert read(encode_key("t"), b"\x00\x02" + bytes(40)) == UnknownValueVersion("t", 2)


@pytest.mark.parametrize("cut", [1, 5, 12, 20, 30])
def test_truncated_values_are_format_errors(cut: int) -> None:
    data = encode_value(ONGOING, 1)
    with pytest.raises(TransactionLogFormatError):
        read(encode_key("tx"), data[:cut])


def test_unknown_status_is_a_format_error() -> None:
    data = bytearray(encode_value(ONGOING, 0))
    data[2 + 8 + 2 + 4] = 9
    with pytest.raises(TransactionLogFormatError, match="Unknown transaction state id 9"):
        read(encode_key("tx"), bytes(data))


def test_value_version_follows_transaction_version() -> None:
    assert [value_version_for(tv) for tv in (0, 1, 2)] == [0, 1, 1]


def test_state_machine_edges_are_kafkas() -> None:
    S = TransactionState
    assert S.PREPARE_COMMIT.can_follow(S.ONGOING) and not S.PREPARE_COMMIT.can_follow(S.EMPTY)
    assert S.PREPARE_ABORT.can_follow(S.COMPLETE_COMMIT)  # transactions v2: abort when unsure
    assert not S.COMPLETE_COMMIT.can_follow(S.PREPARE_ABORT)
    assert S.DEAD.valid_previous_states == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert [s.expiration_allowed for s in S] == [True, False, False, False, True, True, False, False]
    assert S.from_name("PrepareEpochFence") is S.PREPARE_EPOCH_FENCE and S.from_name("ongoing") is None
