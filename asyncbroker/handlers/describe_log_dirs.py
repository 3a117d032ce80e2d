"""DescribeLogDirs (API 35): each log directory with the size of every partition in it.

Sizes come from the Log objects (no directory walk). Disk totals (v4) come
from one statvfs per directory, run on the executor because a slow or hung
mount must not stall the event loop.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DESCRIBE_LOG_DIRS


def _disk_usage(dirs: list[str]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for d in dirs:
        try:
            usage = shutil.disk_usage(d)
            out[d] = (usage.total, usage.free)
        except OSError:
            out[d] = (-1, -1)
    return out


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return rb.entity("DescribeLogDirsResponse", throttle_time=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                         results=())
    dirs = [os.path.abspath(d) for d in ctx.broker.config.log_dirs]
    wanted: dict[str, set[int] | None] | None = None
    if request.topics is not None:
        wanted = {}
        for t in request.topics:
            wanted.setdefault(t.topic, set()).update(t.partitions)  # type: ignore[union-attr]
    # log dir -> topic -> [(partition, size)]
    per_dir: dict[str, dict[str, list[tuple[int, int]]]] = {d: {} for d in dirs}
    for lg in ctx.broker.log_manager.all_logs():
        tp = lg.topic_partition
        if wanted is not None and tp.partition not in (wanted.get(tp.topic) or ()):
            continue
        parent = os.path.abspath(Path(lg.dir).parent)
        per_dir.setdefault(parent, {}).setdefault(tp.topic, []).append((tp.partition, int(lg.size_in_bytes)))
    usage = await ctx.broker.run_blocking(_disk_usage, list(per_dir)) if header.api_version >= 4 else {}
    results = []
    for log_dir, topics in per_dir.items():
        topic_entities = tuple(
            rb.entity(
                "DescribeLogDirsTopic",
                name=topic,
                partitions=tuple(
                    rb.entity(
                        "DescribeLogDirsPartition",
                        partition_index=p,
                        partition_size=size,
                        offset_lag=0,  # no future (moving) replicas on this ctx.broker
                        is_future_key=False,
                    )
                    for p, size in sorted(parts)
                ),
            )
            for topic, parts in sorted(topics.items())
        )
        total, free = usage.get(log_dir, (-1, -1))
        results.append(
            rb.entity(
                "DescribeLogDirsResult",
                error_code=ErrorCode.NONE,
                log_dir=log_dir,
                topics=topic_entities,
                total_bytes=total,
                usable_bytes=free,
                is_cordoned=False,  # v5: asyncbroker has no log-dir cordoning; every dir takes new partitions
            )
        )
    return rb.entity("DescribeLogDirsResponse", throttle_time=0, error_code=ErrorCode.NONE, results=tuple(results))
