"""A small schema language for Kafka's flexible messages, and its parser.

Records are declared once, as text (see ``records.py`` and ``control.py``)::

    3 PartitionRecord 0-2
      PartitionId int32 =-1
      TopicId uuid
      Replicas []int32
      LeaderRecoveryState int8 tag=0 =0
      Directories []uuid v1+
      EligibleLeaderReplicas []int32? v2+ tag=1

A header line gives the key, the name and the valid versions. Each indented line is a field:
name, type (``[]`` prefix for arrays, ``?`` suffix for nullable), optional ``vN+``/``vN-M``
versions, optional ``tag=N`` (a tagged field in the versions it exists), ``=default``, and
``secret`` (never printed unless secrets are shown) or ``secret=POLICY`` (secret depending on
the record: the reader names the policy, ``config`` for a value whose config key is a
password). Fields indented below an array-of-struct or struct field are its members. A header
may end with ``credential``: the record is about credentials, so its bytes stay hidden when
they cannot be decoded (an unknown version may hold secrets no schema here locates).
"""

from __future__ import annotations

from dataclasses import dataclass, field

PRIMITIVES = {
    "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool",
    "string", "bytes", "uuid",
}


@dataclass(frozen=True)
class Versions:
    """A version range of a message or field (``high`` None: open-ended)."""

    low: int
    high: int | None  # None: open-ended

    def contains(self, v: int) -> bool:
        return v >= self.low and (self.high is None or v <= self.high)

    @classmethod
    def parse(cls, text: str) -> Versions:
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))


ALL = Versions(0, None)
ALWAYS = "always"  # the ``secret`` marker without a policy


@dataclass
class Field:
    """One field of a record schema, as the schema language declares it."""

    name: str
    type: str  # primitive name or struct name (element type for arrays)
    is_array: bool = False
    nullable: bool = False
    versions: Versions = ALL
    tag: int | None = None
    default: str | None = None
    fields: list[Field] = field(default_factory=list)  # members when type is a struct
    secret: str | None = None  # None, ALWAYS, or the name of a policy

    @property
    def key(self) -> str:
        """camelCase name, as Kafka's JSON converters print it."""
        return self.name[0].lower() + self.name[1:]

    @property
    def is_struct(self) -> bool:
        return self.type not in PRIMITIVES

    def default_value(self) -> object:
        """The value a reader sees when the field is absent at a version (or an absent tag)."""
        if self.default == "null":
            return None
        if self.is_array:
            return []
        if self.is_struct:
            return {f.key: f.default_value() for f in self.fields}
        if self.type == "bool":
            return self.default == "true"
        if self.type == "string":
            return self.default or ""
        if self.type == "bytes":
            return b""
        if self.type == "uuid":
            return bytes(16)
        if self.type == "float64":
            return float(self.default or 0)
        return int(self.default or 0)


@dataclass
class Message:
    """One record type of the schemas: its key, versions and fields."""

    key: int
    name: str
    valid: Versions
    fields: list[Field]
    credential: bool = False  # undecodable bytes of it are hidden (see the module doc)

    def fields_at(self, version: int) -> list[Field]:
        return [f for f in self.fields if f.versions.contains(version)]

    @property
    def secret_fields(self) -> dict[str, str]:
        """camelCase name -> secret policy, for the top-level fields marked ``secret``."""
        return {f.key: f.secret for f in self.fields if f.secret is not None}

    @property
    def holds_secrets(self) -> bool:
        """A credential record, or one with a field marked ``secret``."""
        return self.credential or any(f.secret is not None for f in self.fields)


def _parse_field(tokens: list[str]) -> Field:
    name, typ = tokens[0], tokens[1]
    f = Field(name=name, type=typ)
    if typ.endswith("?"):
        f.nullable = True
        typ = typ[:-1]
    if typ.startswith("[]"):
        f.is_array = True
        typ = typ[2:]
    f.type = typ
    for tok in tokens[2:]:
        if tok.startswith("v"):
            f.versions = Versions.parse(tok[1:])
        elif tok.startswith("tag="):
            f.tag = int(tok[4:])
        elif tok.startswith("="):
            f.default = tok[1:]
        elif tok == "secret":
            f.secret = ALWAYS
        elif tok.startswith("secret="):
            f.secret = tok[len("secret="):]
        else:
            raise ValueError(f"bad schema token {tok!r} in field {name}")
    return f


def parse_schemas(text: str) -> dict[int, Message]:
    """Parse schema text into messages keyed by their key."""
    messages: dict[int, Message] = {}
    stack: list[tuple[int, list[Field]]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        tokens = line.split()
        if indent == 0:
            key, name, valid = int(tokens[0]), tokens[1], Versions.parse(tokens[2])
            if tokens[3:] not in ([], ["credential"]):
                raise ValueError(f"bad schema header {raw!r}")
            msg = Message(key, name, valid, [], credential=tokens[3:] == ["credential"])
            messages[key] = msg
            stack = [(0, msg.fields)]
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not stack:
            raise ValueError(f"bad indentation: {raw!r}")
        f = _parse_field(tokens)
        stack[-1][1].append(f)
        stack.append((indent, f.fields))
    return messages
