"""Errors of live mode: each one line saying what, where, and what to do."""

from __future__ import annotations

from ...problems import SourceError


class LiveError(SourceError):
    """A live-mode failure (network, security, protocol, authorization)."""


class RetriableError(LiveError):
    """A failure worth another try (connection dropped, timeout, leader moved)."""


class Refused(RetriableError):
    """Nothing listens at the endpoint (the TCP connection was refused): known at once."""


class NoAnswer(RetriableError):
    """A request got no answer within the answer timeout: the peer may be frozen."""


# Kafka error codes live mode reacts to (clients/.../common/protocol/Errors.java).
NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
BROKER_NOT_AVAILABLE = 8
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
SNAPSHOT_NOT_FOUND = 98
POSITION_OUT_OF_RANGE = 99
INCONSISTENT_CLUSTER_ID = 104
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115

LEADER_ERRORS = (NOT_LEADER_OR_FOLLOWER, BROKER_NOT_AVAILABLE, FENCED_LEADER_EPOCH,
                 UNKNOWN_LEADER_EPOCH)


def code_name(code: int) -> str:
    from kio.schema.errors import ErrorCode

    try:
        return f"{ErrorCode(int(code)).name.upper()} ({int(code)})"
    except ValueError:
        return f"error {int(code)}"


KIP919 = ("is a broker listener: -q/--bootstrap-controller wants the controllers' listener "
          "(controller.listener.names, e.g. CONTROLLER://host:9093), as KIP-919 defines; give "
          "those host:port pairs")


class AuthorizationError(LiveError):
    """The principal lacks an ACL; the message names it."""
