"""Every KRaft metadata record, declared once (keys 0-29, every version Kafka has shipped).

Checked against Kafka's ``metadata/src/main/resources/common/metadata`` schemas. All metadata
records are flexible from version 0. See ``schema.py`` for the notation (``secret`` marks the
fields redacted by default, ``credential`` the records whose undecodable bytes are hidden).

Each record type is also a member of :class:`~mdshell.wire.kinds.RecordKind`, generated from
these schemas (``scripts/make_kinds.py``). Adding a record type is one entry here, the
regenerated ``kinds.py``, and its rows in ``image/replay.py`` (HANDLERS) and
``tree/touched.py`` (PATHS); ``tests/test_kinds.py`` says what is missing.
"""

from __future__ import annotations

import re

from .schema import Message, parse_schemas

METADATA_SCHEMAS = """
0 RegisterBrokerRecord 0-4
  BrokerId int32
  IsMigratingZkBroker bool v2+ =false
  IncarnationId uuid
  BrokerEpoch int64
  EndPoints []BrokerEndpoint
    Name string
    Host string
    Port uint16
    SecurityProtocol int16
  Features []BrokerFeature
    Name string
    MinSupportedVersion int16
    MaxSupportedVersion int16
  Rack string?
  Fenced bool =true
  InControlledShutdown bool v1+ =false
  LogDirs []uuid v3+ tag=0
  CordonedLogDirs []uuid? v4+ tag=1 =null

1 UnregisterBrokerRecord 0
  BrokerId int32
  BrokerEpoch int64

2 TopicRecord 0
  Name string
  TopicId uuid

3 PartitionRecord 0-2
  PartitionId int32 =-1
  TopicId uuid
  Replicas []int32
  Isr []int32
  RemovingReplicas []int32
  AddingReplicas []int32
  Leader int32 =-1
  LeaderRecoveryState int8 tag=0 =0
  LeaderEpoch int32 =-1
  PartitionEpoch int32 =-1
  Directories []uuid v1+
  EligibleLeaderReplicas []int32? v2+ tag=1 =null
  LastKnownElr []int32? v2+ tag=2 =null

4 ConfigRecord 0
  ResourceType int8
  ResourceName string
  Name string
  Value string? secret=config

5 PartitionChangeRecord 0-2
  PartitionId int32 =-1
  TopicId uuid
  Isr []int32? tag=0 =null
  Leader int32 tag=1 =-2
  Replicas []int32? tag=2 =null
  RemovingReplicas []int32? tag=3 =null
  AddingReplicas []int32? tag=4 =null
  LeaderRecoveryState int8 tag=5 =-1
  Directories []uuid? v1+ tag=8 =null
  EligibleLeaderReplicas []int32? v2+ tag=6 =null
  LastKnownElr []int32? v2+ tag=7 =null

7 FenceBrokerRecord 0
  Id int32
  Epoch int64

8 UnfenceBrokerRecord 0
  Id int32
  Epoch int64

9 RemoveTopicRecord 0
  TopicId uuid

10 DelegationTokenRecord 0 credential
  Owner string
  Requester string
  Renewers []string
  IssueTimestamp int64
  MaxTimestamp int64
  ExpirationTimestamp int64
  TokenId string

11 UserScramCredentialRecord 0 credential
  Name string
  Mechanism int8
  Salt bytes secret
  StoredKey bytes secret
  ServerKey bytes secret
  Iterations int32 secret

12 FeatureLevelRecord 0
  Name string
  FeatureLevel int16

14 ClientQuotaRecord 0
  Entity []EntityData
    EntityType string
    EntityName string?
  Key string
  Value float64
  Remove bool

15 ProducerIdsRecord 0
  BrokerId int32
  BrokerEpoch int64 =-1
  NextProducerId int64

17 BrokerRegistrationChangeRecord 0-3
  BrokerId int32
  BrokerEpoch int64
  Fenced int8 tag=0 =0
  InControlledShutdown int8 v1+ tag=1 =0
  LogDirs []uuid v2+ tag=2
  CordonedLogDirs []uuid? v3+ tag=3 =null

18 AccessControlEntryRecord 0
  Id uuid
  ResourceType int8
  ResourceName string
  PatternType int8
  Principal string
  Host string
  Operation int8
  PermissionType int8

19 RemoveAccessControlEntryRecord 0
  Id uuid

20 NoOpRecord 0

21 ZkMigrationStateRecord 0
  ZkMigrationState int8

22 RemoveUserScramCredentialRecord 0
  Name string
  Mechanism int8

23 BeginTransactionRecord 0
  Name string? tag=0 =null

24 EndTransactionRecord 0

25 AbortTransactionRecord 0
  Reason string? tag=0 =null

26 RemoveDelegationTokenRecord 0
  TokenId string

27 RegisterControllerRecord 0
  ControllerId int32
  IncarnationId uuid
  ZkMigrationReady bool
  EndPoints []ControllerEndpoint
    Name string
    Host string
    Port uint16
    SecurityProtocol int16
  Features []ControllerFeature
    Name string
    MinSupportedVersion int16
    MaxSupportedVersion int16

28 ClearElrRecord 0
  TopicName string

29 UnregisterControllerRecord 0
  ControllerId int32
"""

METADATA: dict[int, Message] = parse_schemas(METADATA_SCHEMAS)

NAME_TO_KEY: dict[str, int] = {m.name: k for k, m in METADATA.items()}


def constant_name(record_name: str) -> str:
    """The kind's name for a record name: ``PartitionChangeRecord`` -> ``PARTITION_CHANGE``."""
    base = record_name.removesuffix("Record")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).upper()


def record_name(api_key: int) -> str:
    msg = METADATA.get(api_key)
    return msg.name if msg else f"UnknownRecord{api_key}"
