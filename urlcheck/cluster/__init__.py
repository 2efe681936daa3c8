"""Distributed mode: one job, many processes, one polite visitor per host (docs/distributed.md).

A per-host frontier in Redis (Lua scripts timed by Redis's TIME) leases each host to one
process at a time and holds the per-host delay and back-off across all of them; results are
committed once in Redis and written to results.jsonl by the job's coordinator alone.
The Scrapy side is :mod:`urlcheck.cluster.crawl` (scheduler, pipeline, extension); every other
module of this package MUST NOT import Scrapy, Twisted, or the adapters (``crawl``, ``spiders``,
``middlewares``, ``extensions``, ``commands``, ``config.crawlconfig``).
"""

from urlcheck.cluster.collector import ResultCollector
from urlcheck.cluster.connection import connect
from urlcheck.cluster.errors import ClusterError, ClusterUnavailableError
from urlcheck.cluster.frontier import MAX_REAPS, Claim, Completion, Frontier, Lease, Renewal, Then
from urlcheck.cluster.job import ClusterJob, ClusterStatus
from urlcheck.cluster.keys import JobKeys, check_job_name
from urlcheck.cluster.task import Task, TaskCodecError, decode_entry, encode_entry
from urlcheck.cluster.workers import WorkerInfo, WorkerStatus

__all__ = [
    "MAX_REAPS",
    "Claim",
    "ClusterError",
    "ClusterJob",
    "ClusterStatus",
    "ClusterUnavailableError",
    "Completion",
    "Frontier",
    "JobKeys",
    "Lease",
    "Renewal",
    "ResultCollector",
    "Task",
    "TaskCodecError",
    "Then",
    "WorkerInfo",
    "WorkerStatus",
    "check_job_name",
    "connect",
    "decode_entry",
    "encode_entry",
]
