"""Deterministic ids: Kafka Uuids, cluster ids and secrets drawn from one seeded generator."""

from __future__ import annotations

import random

from ..wire.frames import LOST_DIR, MIGRATING_DIR, UNASSIGNED_DIR
from ..wire.primitives import uuid_str

_RESERVED = {MIGRATING_DIR, UNASSIGNED_DIR, LOST_DIR}


class Ids:
    """Everything random in generated data comes from here, so a seed fixes every byte."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def uuid(self) -> bytes:
        """Like Kafka's Uuid.randomUuid: never a reserved id, never a string starting '-'."""
        while True:
            raw = self.rng.getrandbits(128).to_bytes(16, "big")
            if raw not in _RESERVED and not uuid_str(raw).startswith("-"):
                return raw

    def secret(self, n: int) -> bytes:
        return self.rng.getrandbits(8 * n).to_bytes(n, "big")

    def token_id(self) -> str:
        """Delegation token ids look like base64 of 16 random bytes (22 chars)."""
        return uuid_str(self.secret(16))
