"""Control records of the KRaft log, keyed by control type (the i16 after the key's version).

Values are flexible messages; see ``schema.py`` for the notation. ABORT (0) and COMMIT (1)
are transaction markers of ordinary topics and carry a 6-byte non-flexible value.
"""

from __future__ import annotations

from .schema import Message, parse_schemas

ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER = 0, 1, 2, 3
SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = 4, 5, 6

CONTROL_SCHEMAS = """
2 LeaderChangeMessage 0-1
  Version int16
  LeaderId int32
  Voters []Voter
    VoterId int32
    VoterDirectoryId uuid v1+
  GrantingVoters []Voter
    VoterId int32
    VoterDirectoryId uuid v1+

3 SnapshotHeaderRecord 0
  Version int16
  LastContainedLogTimestamp int64

4 SnapshotFooterRecord 0
  Version int16

5 KRaftVersionRecord 0
  Version int16
  KRaftVersion int16

6 VotersRecord 0
  Version int16
  Voters []Voter
    VoterId int32
    VoterDirectoryId uuid
    Endpoints []Endpoint
      Name string
      Host string
      Port uint16
    KRaftVersionFeature KRaftVersionFeature
      MinSupportedVersion int16
      MaxSupportedVersion int16
"""

CONTROL: dict[int, Message] = parse_schemas(CONTROL_SCHEMAS)

CONTROL_NAMES = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}


def control_name(ctype: int) -> str:
    return CONTROL_NAMES.get(ctype, f"UNKNOWN_CONTROL_{ctype}")
