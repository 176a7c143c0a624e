"""What counts as a secret in the image, redacted unless ``--show-secrets`` is given.

Which record fields are secret is declared once, in the schemas (``secret`` in
``wire/records.py``: SCRAM salts/keys; a delegation token record holds no HMAC, so nothing of
it is); every reader asks :func:`secret_fields` or :func:`is_secret`. A config value is secret
when its key is one of Kafka's PASSWORD-type configs (also behind a
``listener.name.<listener>.<mechanism>.`` prefix) or looks like a credential (the schemas'
``secret=config``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from ..wire.records import METADATA
from ..wire.schema import ALWAYS

REDACTED = "[redacted]"

# Kafka's PASSWORD-type broker/topic configs and other credential-bearing keys.
_PASSWORD_KEYS = {
    "sasl.jaas.config",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "delegation.token.secret.key",
    "delegation.token.master.key",
    "password.encoder.secret",
    "password.encoder.old.secret",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "remote.log.metadata.common.client.sasl.jaas.config",
}
_CREDENTIAL_LIKE = re.compile(r"(password|passwd|secret|jaas|credential|private\.key)",
                              re.IGNORECASE)
_LISTENER_PREFIX = re.compile(r"^listener\.name\.[^.]+\.(?:[^.]+\.)?")


def is_sensitive_config(key: str) -> bool:
    """True for config keys whose values must not be printed by default."""
    base = _LISTENER_PREFIX.sub("", key)
    if key in _PASSWORD_KEYS or base in _PASSWORD_KEYS:
        return True
    return bool(_CREDENTIAL_LIKE.search(key))


@cache
def secret_fields(kind: int) -> frozenset[str]:
    """The camelCase fields of record kind ``kind`` that are secret whatever their value
    (the image's models keep those fields under the same names)."""
    msg = METADATA[kind]
    return frozenset(k for k, policy in msg.secret_fields.items() if policy == ALWAYS)


def is_secret(policy: str, value: Any, record: dict[str, Any]) -> bool:
    """Whether a field marked ``secret`` or ``secret=POLICY`` hides ``value`` in ``record``."""
    if policy == ALWAYS:
        return True
    if policy == "config":  # a config value is secret when its key is a password
        return value is not None and is_sensitive_config(str(record.get("name", "")))
    raise ValueError(f"unknown secret policy {policy!r} in the record schemas")
