"""Kafka's own jars and processes, for tests that use Kafka as the oracle or the live peer."""
