"""Kafka's error-code table and the typed exceptions that carry those codes.

Every failure inside wire/storage/cleaner is raised as a `KafkaError` subclass;
the service maps `exc.error_code` to the response at a single boundary, so the
numbers here must be exactly Kafka's (clients switch on them).
"""

from __future__ import annotations

import enum
from typing import ClassVar


class ErrorCode(enum.IntEnum):
    """Kafka protocol error codes (org.apache.kafka.common.protocol.Errors)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133

    @property
    def retriable(self) -> bool:
        """Whether clients treat the error as transient and retry."""
        return self in _RETRIABLE


_RETRIABLE: frozenset[ErrorCode] = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.ELECTION_NOT_NEEDED,
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
        ErrorCode.INCONSISTENT_TOPIC_ID,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.INVALID_SHARE_SESSION_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.LISTENER_NOT_FOUND,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.SHARE_SESSION_LIMIT_REACHED,
        ErrorCode.SHARE_SESSION_NOT_FOUND,
        ErrorCode.THROTTLING_QUOTA_EXCEEDED,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
    }
)


_AS_MESSAGE = object()

# Kafka's Errors.INVALID_REQUEST default text, sent when a request is refused as a whole
# (an unknown config resource type, for instance) rather than with a specific message.
INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or the message was "
    "sent to an incompatible broker. See the broker logs for more details."
)


class KafkaError(Exception):
    """Base of every typed error; subclasses fix `error_code`."""

    error_code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "", *, wire_message: str | None | object = _AS_MESSAGE) -> None:
        super().__init__(message or self.error_code.name)
        self.message = message or self.error_code.name
        # The error_message clients are sent: the message, unless Kafka sends none (None)
        # or an empty one ("") for this error at this place.
        self.wire_message: str | None = self.message if wire_message is _AS_MESSAGE else wire_message  # type: ignore[assignment]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # First class registered for a code wins, so subclasses of e.g.
        # FramingError do not shadow the canonical exception for that code.
        _BY_CODE.setdefault(cls.error_code, cls)


_BY_CODE: dict[ErrorCode, type[KafkaError]] = {}


def error_for_code(code: int, message: str = "") -> KafkaError:
    """Build the exception for a Kafka error code (e.g. from a response)."""
    ec = ErrorCode(code)
    cls = _BY_CODE.get(ec)
    if cls is None:
        err = KafkaError(message or ec.name)
        return _with_code(err, ec)
    return cls(message)


def _with_code(err: KafkaError, code: ErrorCode) -> KafkaError:
    # A code without a dedicated class: carry it on the instance.
    err.error_code = code  # type: ignore[misc]
    return err


class UnknownServerError(KafkaError):
    """The server hit an unexpected condition."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(KafkaError):
    """Offset outside [log start, log end]."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class CorruptRecordError(KafkaError):
    """Bad CRC, bad size, or otherwise unparsable record data."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class UnknownTopicOrPartitionError(KafkaError):
    """This broker does not host the topic-partition."""

    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class NotLeaderOrFollowerError(KafkaError):
    """This broker is not the leader/replica for the partition."""

    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class RecordTooLargeError(KafkaError):
    """A batch is larger than message.max.bytes."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class CoordinatorLoadInProgressError(KafkaError):
    """The coordinator is still loading."""

    error_code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


class CoordinatorNotAvailableError(KafkaError):
    """The coordinator is not available."""

    error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE


class NotCoordinatorError(KafkaError):
    """This broker is not the coordinator."""

    error_code = ErrorCode.NOT_COORDINATOR


class InvalidTopicError(KafkaError):
    """The topic name is invalid or the topic is internal."""

    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class RecordBatchTooLargeError(KafkaError):
    """A produced batch exceeds the segment size."""

    error_code = ErrorCode.RECORD_LIST_TOO_LARGE


class NotEnoughReplicasError(KafkaError):
    """Fewer in-sync replicas than min.insync.replicas."""

    error_code = ErrorCode.NOT_ENOUGH_REPLICAS


class InvalidRequiredAcksError(KafkaError):
    """acks is not -1, 0 or 1."""

    error_code = ErrorCode.INVALID_REQUIRED_ACKS


class IllegalGenerationError(KafkaError):
    """The group generation is stale."""

    error_code = ErrorCode.ILLEGAL_GENERATION


class InconsistentGroupProtocolError(KafkaError):
    """The member's protocols do not match the group's."""

    error_code = ErrorCode.INCONSISTENT_GROUP_PROTOCOL


class InvalidGroupIdError(KafkaError):
    """The group id is empty or invalid."""

    error_code = ErrorCode.INVALID_GROUP_ID


class UnknownMemberIdError(KafkaError):
    """The member id is not known to the group."""

    error_code = ErrorCode.UNKNOWN_MEMBER_ID


class InvalidSessionTimeoutError(KafkaError):
    """The session timeout is outside the broker's range."""

    error_code = ErrorCode.INVALID_SESSION_TIMEOUT


class RebalanceInProgressError(KafkaError):
    """The group is rebalancing."""

    error_code = ErrorCode.REBALANCE_IN_PROGRESS


class InvalidCommitOffsetSizeError(KafkaError):
    """The committing offset data size is invalid."""

    error_code = ErrorCode.INVALID_COMMIT_OFFSET_SIZE


class InvalidTimestampError(KafkaError):
    """A record timestamp is outside the accepted range."""

    error_code = ErrorCode.INVALID_TIMESTAMP


class UnsupportedVersionError(KafkaError):
    """The API version is not supported."""

    error_code = ErrorCode.UNSUPPORTED_VERSION


class TopicExistsError(KafkaError):
    """The topic already exists."""

    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(KafkaError):
    """The partition count is invalid."""

    error_code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaError):
    """The replication factor is invalid."""

    error_code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(KafkaError):
    """The replica assignment is invalid."""

    error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class InvalidConfigurationError(KafkaError):
    """A configuration key or value is invalid."""

    error_code = ErrorCode.INVALID_CONFIG


class InvalidRequestError(KafkaError):
    """The request is malformed or violates the protocol."""

    error_code = ErrorCode.INVALID_REQUEST


class UnsupportedForMessageFormatError(KafkaError):
    """The message format (magic 0/1) is not supported."""

    error_code = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


class PolicyViolationError(KafkaError):
    """The request violates a configured policy."""

    error_code = ErrorCode.POLICY_VIOLATION


class OutOfOrderSequenceError(KafkaError):
    """The producer sequence number is out of order."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    """The producer epoch is stale."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(KafkaError):
    """The operation is invalid in the transaction's state."""

    error_code = ErrorCode.INVALID_TXN_STATE


class InvalidPidMappingError(KafkaError):
    """The producer id does not match the transactional id."""

    error_code = ErrorCode.INVALID_PRODUCER_ID_MAPPING


class InvalidTransactionTimeoutError(KafkaError):
    """The transaction timeout exceeds the maximum."""

    error_code = ErrorCode.INVALID_TRANSACTION_TIMEOUT


class ConcurrentTransactionsError(KafkaError):
    """Another transaction for this producer is completing."""

    error_code = ErrorCode.CONCURRENT_TRANSACTIONS


class ThrottlingQuotaExceededError(KafkaError):
    """A topic or partition change refused by the client's controller_mutation_rate quota."""

    error_code = ErrorCode.THROTTLING_QUOTA_EXCEEDED


class TopicAuthorizationFailedError(KafkaError):
    """The principal may not perform the operation on the topic."""

    error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED


class GroupAuthorizationFailedError(KafkaError):
    """The principal may not perform the operation on the group."""

    error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED


class ClusterAuthorizationFailedError(KafkaError):
    """The principal may not perform the operation on the cluster."""

    error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class TransactionalIdAuthorizationFailedError(KafkaError):
    """Not authorized for the transactional id."""

    error_code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class UnsupportedSaslMechanismError(KafkaError):
    """SaslHandshake named a mechanism the listener does not offer."""

    error_code = ErrorCode.UNSUPPORTED_SASL_MECHANISM


class IllegalSaslStateError(KafkaError):
    """A SASL request out of its place in the exchange."""

    error_code = ErrorCode.ILLEGAL_SASL_STATE


class SaslAuthenticationError(KafkaError):
    """The credentials did not hold."""

    error_code = ErrorCode.SASL_AUTHENTICATION_FAILED


class SecurityDisabledError(KafkaError):
    """An ACL request to a broker without an authorizer (Kafka's default)."""

    error_code = ErrorCode.SECURITY_DISABLED


class KafkaStorageError(KafkaError):
    """The log directory is offline or a disk operation failed."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class NonEmptyGroupError(KafkaError):
    """The group is not empty."""

    error_code = ErrorCode.NON_EMPTY_GROUP


class GroupIdNotFoundError(KafkaError):
    """The group id does not exist."""

    error_code = ErrorCode.GROUP_ID_NOT_FOUND


class FencedLeaderEpochError(KafkaError):
    """The request's leader epoch is older than the broker's."""

    error_code = ErrorCode.FENCED_LEADER_EPOCH


class UnknownLeaderEpochError(KafkaError):
    """The request's leader epoch is newer than the broker's."""

    error_code = ErrorCode.UNKNOWN_LEADER_EPOCH


class GroupMaxSizeReachedError(KafkaError):
    """The group has reached its maximum size."""

    error_code = ErrorCode.GROUP_MAX_SIZE_REACHED


class FencedInstanceIdError(KafkaError):
    """A newer member with the same group.instance.id exists."""

    error_code = ErrorCode.FENCED_INSTANCE_ID


class FencedMemberEpochError(KafkaError):
    """A consumer-protocol member's epoch is not the coordinator's: it must rejoin."""

    error_code = ErrorCode.FENCED_MEMBER_EPOCH


class UnreleasedInstanceIdError(KafkaError):
    """A static member's instance id is still held by a member that has not left."""

    error_code = ErrorCode.UNRELEASED_INSTANCE_ID


class UnsupportedAssignorError(KafkaError):
    """A server assignor this broker does not offer (group.consumer.assignors)."""

    error_code = ErrorCode.UNSUPPORTED_ASSIGNOR


class StaleMemberEpochError(KafkaError):
    """An offset commit or fetch with a member epoch that is not the member's current one."""

    error_code = ErrorCode.STALE_MEMBER_EPOCH


class InvalidRecordError(KafkaError):
    """A record failed broker-side validation."""

    error_code = ErrorCode.INVALID_RECORD


class ProducerFencedError(KafkaError):
    """A newer producer with the same transactional id exists."""

    error_code = ErrorCode.PRODUCER_FENCED


class UnsupportedCompressionTypeError(KafkaError):
    """A codec the request's version may not use (zstd before Produce v7)."""

    error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class UnknownTopicIdError(KafkaError):
    """The topic id is not known."""

    error_code = ErrorCode.UNKNOWN_TOPIC_ID


class TransactionalIdNotFoundError(KafkaError):
    """DescribeTransactions for an id the coordinator does not know."""

    error_code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


class InvalidRegularExpressionError(KafkaError):
    """A filter's regular expression does not compile (ListTransactions v2's id pattern)."""

    error_code = ErrorCode.INVALID_REGULAR_EXPRESSION


class FramingError(KafkaError):
    """The byte stream cannot be split into requests; the connection must close."""

    error_code = ErrorCode.INVALID_REQUEST


class InvalidFrameError(FramingError):
    """A frame declared a negative size."""


class FrameTooLargeError(FramingError):
    """A frame declared a size above socket.request.max.bytes."""


class HeaderError(FramingError):
    """A request header could not be parsed."""


class UnsupportedApiError(FramingError):
    """Unknown API key or version for a non-ApiVersions request: Kafka closes the connection."""

    error_code = ErrorCode.UNSUPPORTED_VERSION


class RequestDecodeError(FramingError):
    """A request body could not be decoded by its schema."""


class ShareSessionNotFoundError(KafkaError):
    """A ShareFetch or ShareAcknowledge names a share session this broker does not have."""

    error_code = ErrorCode.SHARE_SESSION_NOT_FOUND


class InvalidShareSessionEpochError(KafkaError):
    """A share session request whose epoch is not the one expected."""

    error_code = ErrorCode.INVALID_SHARE_SESSION_EPOCH


class InvalidRecordStateError(KafkaError):
    """A share group acknowledgement of records not in a state it may change (not acquired by
    that member, or a RENEW the group does not allow)."""

    error_code = ErrorCode.INVALID_RECORD_STATE
