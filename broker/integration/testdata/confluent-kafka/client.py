"""librdkafka, through Debian's python3-confluent-kafka, against the brokers
in BROKERS.

Without arguments it creates TOPIC through the admin client, produces COUNT
records with the producer settings a current application uses (idempotent,
acks=all, five requests in flight) and zstd, consumes them in the consumer
group TOPIC-group with the cooperative-sticky assignor committing by hand,
makes the admin calls this client has (topics, partitions, configs,
groups), and prints what it saw as JSON in the shape the other client
programs print. With produce-until-eof it produces to an existing TOPIC of
PARTITIONS partitions while the test kills brokers, and prints a line per
outcome.

KAFKA_PROPERTIES adds librdkafka properties, one key=value per line (the
security ones). librdkafka reads a PKCS#12 key store
(ssl.keystore.location) but no PKCS#12 trust store, so
ssl.truststore.location and ssl.truststore.password, Java's names, are
read here and handed to librdkafka as the PEM of the CAs inside.
"""
import json
import os
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic


def properties():
    conf = {"bootstrap.servers": os.environ["BROKERS"]}
    for line in os.environ.get("KAFKA_PROPERTIES", "").splitlines():
        key, eq, value = line.partition("=")
        if eq:
            conf[key.strip()] = value.strip()
    store = conf.pop("ssl.truststore.location", None)
    password = conf.pop("ssl.truststore.password", "")
    if store:
        from cryptography.hazmat.primitives.serialization import Encoding, pkcs12
        with open(store, "rb") as f:
            bundle = pkcs12.load_pkcs12(f.read(), password.encode())
        certs = [c.certificate for c in bundle.additional_certs]
        if bundle.cert is not None:
            certs.append(bundle.cert.certificate)
        if not certs:
            sys.exit("%s holds no certificate" % store)
        conf["ssl.ca.pem"] = "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)
    return conf


def check(cond, what):
    if not cond:
        sys.exit("check failed: %s" % what)


def wait_all(futures):
    for f in futures.values():
        f.result(timeout=30)


def produce_until_eof(conf, topic, partitions):
    """Produces records numbered 0, 1, ... to the partitions of topic in turn
    until stdin closes, with the producer's settings for no loss and no
    duplicates and retries until delivery.timeout.ms, and prints "ack
    <partition> <offset> <value>" or "fail <value> <error>" per record."""
    stopped = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stopped.set()), daemon=True).start()
    producer = Producer(dict(conf, **{"enable.idempotence": True, "acks": "all",
                                      "request.timeout.ms": 5000, "retry.backoff.ms": 100}))

    def report(err, msg):
        if err is None:
            print("ack", msg.partition(), msg.offset(), msg.value().decode(), flush=True)
        else:
            print("fail", msg.value().decode(), str(err).replace("\n", " "), flush=True)

    i = 0
    while not stopped.is_set():
        try:
            producer.produce(topic, value=str(i), partition=i % partitions, on_delivery=report)
        except BufferError:
            producer.poll(0.1)
            continue
        i += 1
        producer.poll(0.005 if i % 50 == 0 else 0)
    check(producer.flush(120) == 0, "records left unflushed")


def round_trip(conf, topic, count):
    admin = AdminClient(conf)
    wait_all(admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})]))
    md = admin.list_topics(topic, timeout=10).topics[topic]
    check(len(md.partitions) == 3 and len(md.partitions[0].replicas) == 3, "described %s" % md.partitions)

    producer = Producer(dict(conf, **{"enable.idempotence": True, "compression.type": "zstd", "linger.ms": 5}))
    acked = [0]

    def delivered(err, msg):
        if err is None:
            acked[0] += 1
    for i in range(count):
        producer.produce(topic, key="k%d" % (i % 7), value="v%d" % i, on_delivery=delivered)
        producer.poll(0)
    check(producer.flush(60) == 0, "records left unflushed")

    group = topic + "-group"
    consumer = Consumer(dict(conf, **{"group.id": group, "enable.auto.commit": False,
                                      "auto.offset.reset": "earliest",
                                      "partition.assignment.strategy": "cooperative-sticky"}))
    consumer.subscribe([topic])
    seen = []
    for _ in range(120):
        if len(seen) >= count:
            break
        for r in consumer.consume(num_messages=500, timeout=0.5):
            if r.error():
                raise KafkaException(r.error())
            seen.append({"Partition": r.partition(), "Offset": str(r.offset()),
                         "Key": r.key().decode(), "Value": r.value().decode()})
        if seen:
            try:
                consumer.commit(asynchronous=False)
            except KafkaException as e:
                if e.args[0].code() != KafkaError._NO_OFFSET:
                    raise
    parts = [TopicPartition(topic, p) for p in range(3)]
    ends = [{"Partition": tp.partition, "High": str(consumer.get_watermark_offsets(tp, timeout=10)[1])} for tp in parts]
    committed = [{"Partition": tp.partition, "Offset": str(tp.offset)} for tp in consumer.committed(parts, timeout=10)]
    consumer.close()

    administer(admin, topic)
    json.dump({"Acked": acked[0], "Seen": seen, "Committed": committed, "Ends": ends}, sys.stdout)


def administer(admin, topic):
    """What Kafka's tools do through this client's admin API: the cluster's
    brokers, topics created, grown, configured and deleted, and the group
    listed. The test reads the outcome back with franz-go: TOPIC-grown has 4
    partitions and retention.ms 3600000, and TOPIC-deleted is gone."""
    md = admin.list_topics(timeout=10)
    check(len(md.brokers) == 3, "brokers %s" % md.brokers)
    grown, deleted = topic + "-grown", topic + "-deleted"
    wait_all(admin.create_topics([NewTopic(grown, 2, 3), NewTopic(deleted, 1, 1)]))
    wait_all(admin.create_partitions([NewPartitions(grown, 4)]))
    resource = ConfigResource("topic", grown, set_config={"retention.ms": "3600000"})
    wait_all(admin.alter_configs([resource]))
    for _ in range(100):
        configs = admin.describe_configs([ConfigResource("topic", grown)])
        retention = list(configs.values())[0].result(timeout=10)["retention.ms"].value
        if retention == "3600000":
            break
        time.sleep(0.1)  # the broker asked may apply the change a moment later
    check(retention == "3600000", "describe_configs: retention.ms %s" % retention)
    wait_all(admin.delete_topics([deleted]))
    groups = [g.id for g in admin.list_groups(timeout=10)]
    check(topic + "-group" in groups, "list_groups: %s" % groups)


def main():
    conf = properties()
    topic = os.environ["TOPIC"]
    if sys.argv[1:] == ["produce-until-eof"]:
        produce_until_eof(conf, topic, int(os.environ["PARTITIONS"]))
    else:
        round_trip(conf, topic, int(os.environ["COUNT"]))


main()
