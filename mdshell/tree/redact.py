"""What counts as a secret in the image, redacted unless ``--show-secrets`` is given.

SCRAM salts/keys are always secret; a delegation token record holds no HMAC, so nothing of it
is. A config value is secret when its key is one of Kafka's PASSWORD-type configs (also behind a
``listener.name.<listener>.<mechanism>.`` prefix) or looks like a credential.
"""

from __future__ import annotations

import re

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
