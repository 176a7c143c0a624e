"""The tables ``sql`` can query, what each holds and its columns with their Spark
SQL types: what ``tables`` lists, readable without pyspark or pyarrow (``sql`` needs them,
``tables`` does not).

Generated from the tables' Arrow schemas (``tables.py``) by ``scripts/make_catalog.py``: do not
edit; ``tests/test_tables_catalog.py`` fails when a table changed and this was not made again.
"""

from __future__ import annotations

# name -> (what the table holds, its columns as (name, Spark SQL type))
CATALOG: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    'records': (
        "every record of the log segments (source 'log'), payload as JSON; the kraft data source "
        "gives the same, and adds each snapshot's records (source 'snapshot') with "
        ".option('snapshots', 'true')",
        (
            ('offset', 'bigint'),
            ('epoch', 'int'),
            ('timestamp', 'bigint'),
            ('time', 'timestamp'),
            ('file', 'string'),
            ('source', 'string'),
            ('control', 'boolean'),
            ('type', 'string'),
            ('version', 'int'),
            ('broker_id', 'int'),
            ('topic_id', 'string'),
            ('partition_id', 'int'),
            ('resource_type', 'int'),
            ('resource_name', 'string'),
            ('name', 'string'),
            ('payload', 'string'),
        ),
    ),
    'topics': (
        'topics of the image',
        (
            ('name', 'string'),
            ('topic_id', 'string'),
            ('partitions', 'int'),
            ('replication_factor', 'int'),
        ),
    ),
    'partitions': (
        'partitions of the image, leader/ISR/replicas',
        (
            ('topic', 'string'),
            ('topic_id', 'string'),
            ('partition', 'int'),
            ('leader', 'int'),
            ('leader_epoch', 'int'),
            ('partition_epoch', 'int'),
            ('replicas', 'array<int>'),
            ('isr', 'array<int>'),
            ('elr', 'array<int>'),
            ('last_known_elr', 'array<int>'),
            ('adding_replicas', 'array<int>'),
            ('removing_replicas', 'array<int>'),
            ('leader_recovery_state', 'string'),
            ('directories', 'array<string>'),
        ),
    ),
    'brokers': (
        'registered brokers',
        (
            ('id', 'int'),
            ('epoch', 'bigint'),
            ('incarnation_id', 'string'),
            ('rack', 'string'),
            ('fenced', 'boolean'),
            ('in_controlled_shutdown', 'boolean'),
            ('is_migrating_zk_broker', 'boolean'),
            ('log_dirs', 'array<string>'),
        ),
    ),
    'controllers': (
        'registered controllers',
        (
            ('id', 'int'),
            ('incarnation_id', 'string'),
            ('zk_migration_ready', 'boolean'),
        ),
    ),
    'endpoints': (
        'listeners of brokers and controllers',
        (
            ('node', 'int'),
            ('kind', 'string'),
            ('listener', 'string'),
            ('host', 'string'),
            ('port', 'int'),
            ('protocol', 'string'),
        ),
    ),
    'features': (
        'finalized feature levels (metadata.version included)',
        (
            ('name', 'string'),
            ('level', 'int'),
        ),
    ),
    'supported_features': (
        'feature ranges each broker and controller supports',
        (
            ('node', 'int'),
            ('kind', 'string'),
            ('feature', 'string'),
            ('min_version', 'int'),
            ('max_version', 'int'),
        ),
    ),
    'configs': (
        'dynamic configs (sensitive values redacted)',
        (
            ('resource_type', 'string'),
            ('resource_name', 'string'),
            ('name', 'string'),
            ('value', 'string'),
        ),
    ),
    'acls': (
        'ACL bindings',
        (
            ('id', 'string'),
            ('resource_type', 'string'),
            ('resource_name', 'string'),
            ('pattern_type', 'string'),
            ('principal', 'string'),
            ('host', 'string'),
            ('operation', 'string'),
            ('permission_type', 'string'),
        ),
    ),
    'quotas': (
        'client quotas, one row per value',
        (
            ('entity', 'string'),
            ('user', 'string'),
            ('client_id', 'string'),
            ('ip', 'string'),
            ('key', 'string'),
            ('value', 'double'),
        ),
    ),
    'scram_users': (
        'SCRAM users (credentials redacted)',
        (
            ('user', 'string'),
            ('mechanism', 'string'),
            ('iterations', 'string'),
            ('salt', 'string'),
            ('stored_key', 'string'),
            ('server_key', 'string'),
        ),
    ),
    'tokens': (
        'delegation tokens',
        (
            ('token_id', 'string'),
            ('owner', 'string'),
            ('requester', 'string'),
            ('renewers', 'string'),
            ('issue_timestamp', 'string'),
            ('max_timestamp', 'string'),
            ('expiration_timestamp', 'string'),
        ),
    ),
    'partition_changes': (
        'leader/ISR/replicas of each partition after every change',
        (
            ('offset', 'bigint'),
            ('origin', 'string'),
            ('epoch', 'int'),
            ('timestamp', 'bigint'),
            ('time', 'timestamp'),
            ('type', 'string'),
            ('topic', 'string'),
            ('topic_id', 'string'),
            ('partition', 'int'),
            ('leader', 'int'),
            ('leader_epoch', 'int'),
            ('partition_epoch', 'int'),
            ('replicas', 'array<int>'),
            ('isr', 'array<int>'),
            ('elr', 'array<int>'),
            ('last_known_elr', 'array<int>'),
            ('adding_replicas', 'array<int>'),
            ('removing_replicas', 'array<int>'),
            ('leader_recovery_state', 'string'),
        ),
    ),
    'voters': (
        'KRaft voters from the log (dynamic quorum)',
        (
            ('id', 'int'),
            ('directory_id', 'string'),
            ('endpoints', 'array<string>'),
            ('kraft_min_version', 'int'),
            ('kraft_max_version', 'int'),
        ),
    ),
}
