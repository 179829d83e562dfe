#!/usr/bin/env python3
"""Reads Avro records with Confluent's Python client and its AvroDeserializer.

Usage: consumer.py BOOTSTRAP REGISTRY_URL TOPIC=COUNT [TOPIC=COUNT ...]

For each topic (partition 0, from the beginning) it reads COUNT records, decodes key and
value with confluent-kafka's AvroDeserializer (schemas fetched from the registry by the id in
each record) and prints one JSON line per record: {"topic", "offset", "key", "value"}, with
decimals as strings and bytes as hex. It exits 1 if a record does not decode or a topic does
not hold COUNT records within 60 seconds.
"""
import json
import os
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext


def plain(v):
    """JSON-friendly form of what fastavro decodes."""
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return str(v)


def read_topic(consumer, deserializer, topic, count):
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    deadline = time.time() + 60
    got = 0
    while got < count:
        if time.time() > deadline:
            sys.exit(f"consumer.py: {topic}: {got} of {count} records within 60 s")
        m = consumer.poll(0.5)
        if m is None:
            continue
        if m.error():
            sys.exit(f"consumer.py: {topic}: {m.error()}")

        def part(data, field):
            if data is None:
                return None
            return deserializer(data, SerializationContext(topic, field))

        record = {
            "topic": topic,
            "offset": m.offset(),
            "key": part(m.key(), MessageField.KEY),
            "value": part(m.value(), MessageField.VALUE),
        }
        print(json.dumps(record, default=plain), flush=True)
        got += 1


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    bootstrap, registry = sys.argv[1], sys.argv[2]
    # The subject name strategy is set, so that the client does not first ask the registry for
    # topic associations (Confluent's newer API), which Apicurio's does not serve.
    deserializer = AvroDeserializer(
        SchemaRegistryClient({"url": registry}),
        conf={"subject.name.strategy.type": "TOPIC"},
    )
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"pgcdc-avro-consumer-{os.getpid()}",
        "enable.auto.commit": False,
    })
    try:
        for spec in sys.argv[3:]:
            topic, count = spec.rsplit("=", 1)
            read_topic(consumer, deserializer, topic, int(count))
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
