"""librdkafka's transactional producer, through Debian's
python3-confluent-kafka, against the brokers in BROKERS.

It commits one transaction of COMMITTED records and aborts one of
ABORTED records to TOPIC, then copies every record of IN to OUT in
transactions of at most 100 records that also commit the consumer group
IN-group's offsets (send_offsets_to_transaction), until IN's COUNT records
are copied. It prints one JSON line: how many records each part wrote.
"""
import json
import os
import sys

from confluent_kafka import Consumer, Producer, TopicPartition


def producer(txn_id):
    p = Producer({"bootstrap.servers": os.environ["BROKERS"], "transactional.id": txn_id,
                  "transaction.timeout.ms": 30000})
    p.init_transactions(30)
    return p


def commit_and_abort(topic, committed, aborted):
    p = producer("librdkafka-commit-abort")
    for prefix, count, commit in (("c", committed, True), ("a", aborted, False)):
        p.begin_transaction()
        for i in range(count):
            p.produce(topic, key=b"%d" % i, value=b"%s%d" % (prefix.encode(), i))
        p.flush(30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)


def copy(src, dst, count):
    group = src + "-group"
    c = Consumer({"bootstrap.servers": os.environ["BROKERS"], "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    c.subscribe([src])
    p = producer("librdkafka-copy")
    copied = 0
    while copied < count:
        msgs = c.consume(num_messages=100, timeout=5)
        msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            p.produce(dst, key=m.key(), value=b"out-" + m.value())
        offsets = {}
        for m in msgs:
            offsets[(m.topic(), m.partition())] = m.offset() + 1
        p.send_offsets_to_transaction([TopicPartition(t, part, o) for (t, part), o in offsets.items()],
                                      c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        copied += len(msgs)
    c.close()
    return copied


def main():
    commit_and_abort(os.environ["TOPIC"], int(os.environ["COMMITTED"]), int(os.environ["ABORTED"]))
    copied = copy(os.environ["IN"], os.environ["OUT"], int(os.environ["COUNT"]))
    print(json.dumps({"committed": int(os.environ["COMMITTED"]), "aborted": int(os.environ["ABORTED"]), "copied": copied}))


if __name__ == "__main__":
    sys.exit(main())
