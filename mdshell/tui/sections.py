"""The friendly top of the tree: (label, path), "/" last (everything, as the shell sees it).
No textual."""

from __future__ import annotations

SECTIONS = [
    ("Controllers", "/image/cluster/controllers"), ("Brokers", "/image/cluster/brokers"),
    ("Features", "/image/features"), ("Topics", "/image/topics/byName"),
    ("Configs", "/image/configs"), ("Client quotas", "/image/clientQuotas"),
    ("ACLs", "/image/acls"), ("SCRAM users", "/image/scram"),
    ("Delegation tokens", "/image/delegationToken"), ("Producer ids", "/image/producerIds"),
    ("Quorum", "/quorum"), ("Log", "/log"), ("All paths /", "/"),
]
