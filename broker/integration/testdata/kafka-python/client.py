"""kafka-python (Debian's python3-kafka) against the brokers in BROKERS.

Creates TOPIC, produces COUNT records with acks=all, consumes them in a
consumer group committing by hand, and prints what it saw as JSON in the
shape the KafkaJS client prints. No api_version is set: the client probes
the brokers the way it does by default. With SASL_MECHANISM set, every
client authenticates as SASL_USERNAME with SASL_PASSWORD over
SASL_PLAINTEXT (kafka-python's SaslHandshake v0 and bare SASL frames).
"""
import json
import os
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

brokers = os.environ["BROKERS"].split(",")
topic = os.environ["TOPIC"]
count = int(os.environ["COUNT"])
security = {}
if os.environ.get("SASL_MECHANISM"):
    security = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": os.environ["SASL_MECHANISM"],
                "sasl_plain_username": os.environ["SASL_USERNAME"], "sasl_plain_password": os.environ["SASL_PASSWORD"]}

admin = KafkaAdminClient(bootstrap_servers=brokers, client_id="kafka-python-test", **security)
admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3,
                              topic_configs={"min.insync.replicas": "2"})])
admin.close()

producer = KafkaProducer(bootstrap_servers=brokers, acks="all", retries=20,
                         max_in_flight_requests_per_connection=1, **security)
futures = [producer.send(topic, key=b"k%d" % (i % 7), value=b"v%d" % i) for i in range(count)]
producer.flush()
acked = sum(1 for f in futures if f.get(timeout=60) is not None)
producer.close()

consumer = KafkaConsumer(topic, bootstrap_servers=brokers, group_id="kafka-python-group",
                         auto_offset_reset="earliest", enable_auto_commit=False, **security)
seen = []
polls = 0
while len(seen) < count and polls < 120:
    polls += 1
    for tp, records in sorted(consumer.poll(timeout_ms=500).items()):
        for r in records:
            seen.append({"Partition": tp.partition, "Offset": str(r.offset),
                         "Key": r.key.decode(), "Value": r.value.decode()})
    consumer.commit()
parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
ends = consumer.end_offsets(parts)
committed = [{"Partition": tp.partition, "Offset": str(consumer.committed(tp))} for tp in parts]
consumer.close()

json.dump({"Acked": acked, "Seen": seen, "Committed": committed,
           "Ends": [{"Partition": tp.partition, "High": str(ends[tp])} for tp in parts]}, sys.stdout)
