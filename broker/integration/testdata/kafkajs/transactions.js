// KafkaJS's transactions against the brokers in BROKERS: one committed
// transaction of COMMITTED records and one aborted of ABORTED to TOPIC,
// then a copy of IN's COUNT records to OUT in transactions that also
// commit the consumer group IN-group's offsets (sendOffsets). Prints one
// JSON line: how many records each part wrote.
const { Kafka, logLevel } = require('kafkajs');

const kafka = new Kafka({ clientId: 'kafkajs-txn', brokers: process.env.BROKERS.split(','), logLevel: process.env.KAFKAJS_LOG === 'debug' ? logLevel.DEBUG : logLevel.ERROR });
const env = (k) => process.env[k];

async function commitAndAbort(topic, committed, aborted) {
  const producer = kafka.producer({ transactionalId: 'kafkajs-commit-abort', maxInFlightRequests: 1, idempotent: true });
  await producer.connect();
  for (const [prefix, count, commit] of [['c', committed, true], ['a', aborted, false]]) {
    const txn = await producer.transaction();
    const messages = [];
    for (let i = 0; i < count; i++) messages.push({ key: String(i), value: prefix + i });
    await txn.send({ topic, messages });
    if (commit) await txn.commit(); else await txn.abort();
    console.error('ended', prefix);
  }
  await producer.disconnect();
}

async function copy(src, dst, count) {
  const group = src + '-group';
  const consumer = kafka.consumer({ groupId: group, readUncommitted: false });
  const producer = kafka.producer({ transactionalId: 'kafkajs-copy', maxInFlightRequests: 1, idempotent: true });
  await Promise.all([consumer.connect(), producer.connect()]);
  await consumer.subscribe({ topic: src, fromBeginning: true });
  let copied = 0;
  await new Promise((resolve, reject) => {
    consumer.on(consumer.events.CRASH, (e) => reject(e.payload.error));
    consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.messages.length === 0) return;
        const txn = await producer.transaction();
        try {
          await txn.send({ topic: dst, messages: batch.messages.map((m) => ({ key: m.key, value: 'out-' + m.value.toString() })) });
          const last = batch.messages[batch.messages.length - 1];
          await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic: batch.topic, partitions: [
            { partition: batch.partition, offset: String(BigInt(last.offset) + 1n) }] }] });
          await txn.commit();
        } catch (e) {
          await txn.abort();
          reject(e);
          return;
        }
        copied += batch.messages.length;
        console.error('copied', copied);
        if (copied >= count) resolve();
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  await producer.disconnect();
  return copied;
}

(async () => {
  await commitAndAbort(env('TOPIC'), Number(env('COMMITTED')), Number(env('ABORTED')));
  const copied = await copy(env('IN'), env('OUT'), Number(env('COUNT')));
  console.log(JSON.stringify({ committed: Number(env('COMMITTED')), aborted: Number(env('ABORTED')), copied }));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
