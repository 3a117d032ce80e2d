"""S3RemoteStorageManager: the remote tier in an S3 bucket (AWS S3, or any S3-compatible store:
MinIO, Ceph, R2, moto's server in the tests).

Object keys are `LocalTieredStorage`'s file names below an optional prefix, so a bucket and a
local tier directory hold the same tree:

    <prefix>/<topic>-<partition>-<topic id>/<start offset, 20 digits>-<segment id>.log
                                            ... .index .timeindex .txnindex .snapshot
                                            ... .leader_epoch_checkpoint

boto3 is imported, and its client built, at the first call rather than at construction: the
broker constructs its RemoteStorageManager at startup, and boto3 with an S3 client costs about
0.3 s and 40 MB of RSS that a broker not yet tiering anything should not pay.

Every call blocks and runs in a worker thread (one boto3 client serves them all: botocore
clients are thread-safe). Timeouts and a bounded retry count keep an unreachable or silent
endpoint from holding a worker thread: a call fails with RemoteStorageError within about
`max_attempts * (connect or read timeout) + backoff` seconds, and the RemoteLogManager retries
later. Every botocore, boto3 and socket failure becomes a RemoteStorageError whose message names
the operation, the bucket and key, the endpoint, and S3's error code and HTTP status
(SlowDown 503, InvalidAccessKeyId 403, NoSuchBucket 404, ...); a missing object alone is a
RemoteResourceNotFoundError.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from storage.config_def import ConfigException
from storage.local_tiered_storage import LOG_SUFFIX, remote_segment_file_name
from storage.remote_storage_manager import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentMetadata,
    RemoteResourceNotFoundError,
    RemoteStorageError,
)

__all__ = ["S3RemoteStorageManager", "DEFAULT_REGION", "DEFAULT_CONNECT_TIMEOUT_MS", "DEFAULT_READ_TIMEOUT_MS",
           "DEFAULT_MAX_ATTEMPTS", "DEFAULT_PART_SIZE"]

DEFAULT_REGION = "us-east-1"
DEFAULT_CONNECT_TIMEOUT_MS = 3_000
# Per socket read, not per request: a 1 GiB GET that keeps streaming never hits it.
DEFAULT_READ_TIMEOUT_MS = 30_000
DEFAULT_MAX_ATTEMPTS = 3  # the first try and two retries
DEFAULT_PART_SIZE = 16 * 1024 * 1024  # multipart part (and threshold): a 1 GiB segment in 64 parts
UPLOAD_CONCURRENCY = 4  # parts in flight per file; the broker has few cores and copies one segment at a time

# S3's answers for an object or key that is not there. NoSuchBucket is not one of them: a
# missing bucket is a misconfiguration the operator must see, never a segment to forget.
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class S3RemoteStorageManager:
    """RemoteStorageManager over an S3-compatible bucket (`rsm.config.s3.*`, see `from_configs`)."""

    def __init__(self, bucket: str, prefix: str = "", endpoint_url: str | None = None, region: str = DEFAULT_REGION,
                 access_key_id: str | None = None, secret_access_key: str | None = None, *,
                 connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS, read_timeout_ms: int = DEFAULT_READ_TIMEOUT_MS,
                 max_attempts: int = DEFAULT_MAX_ATTEMPTS, path_style_access: bool | None = None,
                 part_size: int = DEFAULT_PART_SIZE) -> None:
        if not bucket:
            raise ValueError("An S3 bucket name is required")
        if (access_key_id is None) != (secret_access_key is None):
            raise ValueError("An S3 access key id and secret access key go together: set both or neither "
                             "(neither: boto3's usual chain, AWS_ACCESS_KEY_ID, profiles, instance roles)")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
        if part_size < 5 * 1024 * 1024:
            raise ValueError(f"part_size must be at least 5 MiB (S3's smallest multipart part), not {part_size}")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = endpoint_url or None
        self.region = region
        self.connect_timeout_ms = connect_timeout_ms
        self.read_timeout_ms = read_timeout_ms
        self.max_attempts = max_attempts
        # Path-style URLs (endpoint/bucket/key) for a custom endpoint: MinIO, Ceph and a server on
        # 127.0.0.1 have no per-bucket DNS names. AWS itself gets boto3's choice.
        self.path_style_access = self.endpoint_url is not None if path_style_access is None else path_style_access
        self.part_size = part_size
        self._access_key_id = access_key_id
        self._secret_access_key = secret_access_key
        self._client: Any = None
        self._transfer_config: Any = None
        self._errors: tuple[type[BaseException], ...] = ()
        self._client_error: type[BaseException] = BaseException
        self._lock = threading.Lock()

    @classmethod
    def from_configs(cls, configs: Mapping[str, str], *, config_prefix: str = "rsm.config.") -> S3RemoteStorageManager:
        """Build from Kafka-style plugin settings, `rsm.config.` already stripped:

        s3.bucket (required), s3.prefix (""), s3.endpoint.url (AWS when unset), s3.region
        (us-east-1), s3.access.key.id and s3.secret.access.key (boto3's environment chain when
        unset), s3.path.style.access.enabled (true for a custom endpoint), s3.connect.timeout.ms
        (3000), s3.read.timeout.ms (30000), s3.max.attempts (3), s3.multipart.part.size (16 MiB).

        `config_prefix` only names the keys in error messages as the operator wrote them."""

        def text(key: str) -> str | None:
            value = configs.get(key)
            return value.strip() if value is not None and value.strip() else None

        def integer(key: str, default: int, minimum: int) -> int:
            raw = text(key)
            if raw is None:
                return default
            try:
                value = int(raw)
            except ValueError:
                raise ConfigException(config_prefix + key, f"Invalid value {raw} for configuration "
                                      f"{config_prefix}{key}: Not a number of type INT") from None
            if value < minimum:
                raise ConfigException(config_prefix + key, f"Invalid value {value} for configuration "
                                      f"{config_prefix}{key}: Value must be at least {minimum}")
            return value

        bucket = text("s3.bucket")
        if bucket is None:
            raise ConfigException(config_prefix + "s3.bucket", f"Missing required configuration {config_prefix}s3.bucket "
                                  "which has no default value: the S3 remote storage needs a bucket")
        key_id, secret = text("s3.access.key.id"), text("s3.secret.access.key")
        if (key_id is None) != (secret is None):
            missing = "s3.secret.access.key" if secret is None else "s3.access.key.id"
            raise ConfigException(config_prefix + missing, f"Missing configuration {config_prefix}{missing}: "
                                  f"{config_prefix}s3.access.key.id and {config_prefix}s3.secret.access.key go together")
        path_style_raw = text("s3.path.style.access.enabled")
        path_style: bool | None = None
        if path_style_raw is not None:
            if path_style_raw.lower() not in ("true", "false"):
                raise ConfigException(config_prefix + "s3.path.style.access.enabled",
                                      f"Invalid value {path_style_raw} for configuration "
                                      f"{config_prefix}s3.path.style.access.enabled: Expected value to be either true or false")
            path_style = path_style_raw.lower() == "true"
        return cls(bucket, text("s3.prefix") or "", text("s3.endpoint.url"), text("s3.region") or DEFAULT_REGION,
                   key_id, secret,
                   connect_timeout_ms=integer("s3.connect.timeout.ms", DEFAULT_CONNECT_TIMEOUT_MS, 1),
                   read_timeout_ms=integer("s3.read.timeout.ms", DEFAULT_READ_TIMEOUT_MS, 1),
                   max_attempts=integer("s3.max.attempts", DEFAULT_MAX_ATTEMPTS, 1),
                   path_style_access=path_style,
                   part_size=integer("s3.multipart.part.size", DEFAULT_PART_SIZE, 5 * 1024 * 1024))

    def __repr__(self) -> str:
        where = self.endpoint_url or f"AWS {self.region}"
        return f"S3RemoteStorageManager(s3://{self.bucket}/{self.prefix} at {where})"

    # -- the client, built at first use --------------------------------------------------------
    def _s3(self) -> Any:
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                try:
                    self._client = self._build_client()
                except Exception as exc:  # an endpoint URL or region botocore refuses, boto3 missing
                    raise RemoteStorageError(f"Cannot create an S3 client for s3://{self.bucket} at "
                                             f"{self.endpoint_url or f'AWS {self.region}'}: "
                                             f"{type(exc).__name__}: {exc}") from exc
            return self._client

    def _build_client(self) -> Any:
        import boto3
        import boto3.exceptions
        import botocore.exceptions
        from boto3.s3.transfer import TransferConfig
        from botocore.config import Config

        custom_endpoint = self.endpoint_url is not None
        config = Config(
            region_name=self.region,
            connect_timeout=self.connect_timeout_ms / 1000,
            read_timeout=self.read_timeout_ms / 1000,
            # "standard" retries throttling (SlowDown), 5xx and connection errors with
            # exponential backoff and jitter, max_attempts in all.
            retries={"mode": "standard", "total_max_attempts": self.max_attempts},
            s3={"addressing_style": "path" if self.path_style_access else "auto"},
            # boto3 >= 1.36 sends CRC checksums on every upload by default, which several
            # S3-compatible stores reject; AWS gets them, other endpoints only where S3 requires one.
            request_checksum_calculation="when_required" if custom_endpoint else "when_supported",
            response_checksum_validation="when_required" if custom_endpoint else "when_supported",
            max_pool_connections=max(10, UPLOAD_CONCURRENCY * 2),
        )
        # A session of our own: boto3's default session is shared, and not thread-safe to create.
        session = boto3.session.Session(aws_access_key_id=self._access_key_id,
                                        aws_secret_access_key=self._secret_access_key, region_name=self.region)
        client = session.client("s3", endpoint_url=self.endpoint_url, config=config)
        self._transfer_config = TransferConfig(multipart_threshold=self.part_size, multipart_chunksize=self.part_size,
                                               max_concurrency=UPLOAD_CONCURRENCY)
        self._client_error = botocore.exceptions.ClientError
        # Boto3Error: S3UploadFailedError (a ClientError during a managed upload, its __context__).
        self._errors = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError,
                        boto3.exceptions.Boto3Error, OSError)
        return client

    # -- keys and errors -----------------------------------------------------------------------
    def object_key(self, metadata: RemoteLogSegmentMetadata, suffix: str) -> str:
        name = remote_segment_file_name(metadata.segment_id, metadata.start_offset, suffix)
        return f"{self.prefix}/{name}" if self.prefix else name

    def _s3_error(self, exc: BaseException) -> tuple[str | None, int | None, str]:
        """(S3 error code, HTTP status, text) of a failure; the code and status of the ClientError
        behind a boto3 S3UploadFailedError too."""
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, self._client_error):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            return None, None, f"{type(exc).__name__}: {exc}"
        response: Mapping[str, Any] = getattr(cause, "response", {}) or {}
        error: Mapping[str, Any] = response.get("Error", {}) or {}
        code = error.get("Code")
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        message = error.get("Message") or str(cause)
        return (str(code) if code is not None else None, int(status) if status is not None else None,
                f"{code} (HTTP {status}): {message}")

    def _failure(self, operation: str, key: str, exc: BaseException) -> RemoteStorageError:
        code, _, text = self._s3_error(exc)
        where = f"s3://{self.bucket}/{key} at {self.endpoint_url or f'AWS {self.region}'}"
        hint = ""
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken"):
            hint = " (check the S3 credentials and the bucket policy)"
        elif code in ("SlowDown", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests"):
            hint = f" (throttled by the store, after {self.max_attempts} attempts)"
        elif code == "NoSuchBucket":
            hint = f" (bucket {self.bucket} does not exist)"
        return RemoteStorageError(f"S3 {operation} of {where} failed: {text}{hint}")

    # -- RemoteStorageManager ------------------------------------------------------------------
    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> bytes | None:
        files: list[tuple[Path, str]] = [(data.log_segment, LOG_SUFFIX), (data.offset_index, IndexType.OFFSET.value),
                                         (data.time_index, IndexType.TIMESTAMP.value),
                                         (data.producer_snapshot_index, IndexType.PRODUCER_SNAPSHOT.value)]
        if data.transaction_index is not None:
            files.append((data.transaction_index, IndexType.TRANSACTION.value))
        s3 = self._s3()
        for source, suffix in files:
            key = self.object_key(metadata, suffix)
            try:
                # The managed upload: multipart above part_size, parts in parallel, each retried.
                s3.upload_file(str(source), self.bucket, key, Config=self._transfer_config)
            except self._errors as exc:
                raise self._failure(f"upload of {source}", key, exc) from exc
        key = self.object_key(metadata, IndexType.LEADER_EPOCH.value)
        try:
            s3.put_object(Bucket=self.bucket, Key=key, Body=data.leader_epoch_index)
        except self._errors as exc:
            raise self._failure("PutObject", key, exc) from exc
        return None

    def fetch_log_segment(self, metadata: RemoteLogSegmentMetadata, start_position: int,
                          end_position: int | None = None) -> bytes:
        if start_position < 0:
            raise ValueError(f"start_position must not be negative, not {start_position}")
        if end_position is not None and end_position < start_position:
            return b""  # S3 would ignore such a Range and answer the whole object
        key = self.object_key(metadata, LOG_SUFFIX)
        byte_range = f"bytes={start_position}-" if end_position is None else f"bytes={start_position}-{end_position}"
        return self._get(key, "ranged GetObject", byte_range)

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> bytes:
        return self._get(self.object_key(metadata, index_type.value), f"GetObject ({index_type.name} index)", None)

    def _get(self, key: str, operation: str, byte_range: str | None) -> bytes:
        s3 = self._s3()
        try:
            if byte_range is None:
                response = s3.get_object(Bucket=self.bucket, Key=key)
            else:
                response = s3.get_object(Bucket=self.bucket, Key=key, Range=byte_range)
            body = response["Body"]
            try:
                return bytes(body.read())
            finally:
                body.close()
        except self._errors as exc:
            code, status, _ = self._s3_error(exc)
            if byte_range is not None and (code == "InvalidRange" or status == 416):
                return b""  # the range starts at or past the end of the object
            if code in _NOT_FOUND_CODES:
                raise RemoteResourceNotFoundError(f"No remote object s3://{self.bucket}/{key} ({code})") from exc
            raise self._failure(operation, key, exc) from exc

    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        # One DeleteObject per key rather than DeleteObjects: every S3-compatible store has it
        # (GCS's XML API has no multi-delete), it needs no Content-MD5, and a key already gone
        # answers 204 as a deleted one does.
        s3 = self._s3()
        for suffix in (LOG_SUFFIX, *(t.value for t in IndexType)):
            key = self.object_key(metadata, suffix)
            try:
                s3.delete_object(Bucket=self.bucket, Key=key)
            except self._errors as exc:
                code, _, _ = self._s3_error(exc)
                if code in _NOT_FOUND_CODES:
                    continue  # stores that answer 404 for a missing key: already deleted
                raise self._failure("DeleteObject", key, exc) from exc

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
