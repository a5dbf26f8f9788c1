"""A keyed producer for broker/integration/growth_test.go on librdkafka
(Debian's python3-confluent-kafka) with its default partitioner,
consistent_random (CRC32). It writes "seq" under 64 keys at about 600
records/s until its stdin closes, then flushes, and prints "key seq" for
every record acknowledged."""

import os
import sys
import threading
import time

from confluent_kafka import Producer

stopped = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stopped.set()), daemon=True).start()

producer = Producer({
    "bootstrap.servers": os.environ["BROKERS"],
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "topic.metadata.refresh.interval.ms": 2000,
})
topic = os.environ["TOPIC"]


def acked(err, msg):
    if err is None:
        print(msg.key().decode(), msg.value().decode(), flush=True)


seqs = {}
i, start = 0, time.monotonic()
while not stopped.is_set():
    key = "key-%d" % (i % 64)
    seq = seqs.get(key, 0)
    seqs[key] = seq + 1
    producer.produce(topic, key=key, value=str(seq), on_delivery=acked)
    i += 1
    producer.poll(max(0.0, start + i / 600 - time.monotonic()))
producer.flush(30)
