"""mdshell: an interactive metadata shell for Apache Kafka KRaft clusters."""

__version__ = "0.1.0"
