// Drives KafkaJS against the brokers named in BROKERS and prints what it saw
// as one JSON line; the Go test asserts on it.
const { Kafka, logLevel } = require('kafkajs');

const brokers = process.env.BROKERS.split(',');
const topic = process.env.TOPIC;
const count = Number(process.env.COUNT);
const kafka = new Kafka({ clientId: 'raftka-kafkajs-test', brokers, logLevel: logLevel.ERROR });

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true });

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  let acked = 0;
  for (let i = 0; i < count; i += 10) {
    const messages = [];
    for (let j = i; j < Math.min(i + 10, count); j++) messages.push({ key: `k${j % 7}`, value: `v${j}` });
    const res = await producer.send({ topic, acks: -1, messages });
    if (res.some((r) => r.errorCode !== 0)) throw new Error(`produce: ${JSON.stringify(res)}`);
    acked += messages.length;
  }
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: 'kafkajs-group' });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${seen.length} of ${count}`)), 60000);
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        seen.push({ partition, offset: message.offset, key: message.key.toString(), value: message.value.toString() });
        await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
        if (seen.length === count) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.disconnect();

  const committed = await admin.fetchOffsets({ groupId: 'kafkajs-group', topics: [topic] });
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  console.log(JSON.stringify({ acked, seen, committed: committed[0].partitions, ends }));
}

main().catch((err) => { console.error(err); process.exit(1); });
