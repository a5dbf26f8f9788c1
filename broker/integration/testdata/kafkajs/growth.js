// A KafkaJS group member for broker/integration/growth_test.go: it joins
// GROUP on TOPIC from the latest offset, processes each record slowly (the
// group lags), commits after processing, and prints "key value partition"
// for every record it processed.
const { Kafka, logLevel } = require('kafkajs');

const kafka = new Kafka({
  clientId: 'raftka-growth-test',
  brokers: process.env.BROKERS.split(','),
  logLevel: logLevel.ERROR,
});
const topic = process.env.TOPIC;

async function main() {
  const consumer = kafka.consumer({ groupId: process.env.GROUP, metadataMaxAge: 2000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: false });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      process.stdout.write(`${message.key.toString()} ${message.value.toString()} ${partition}\n`);
      await new Promise((resolve) => setTimeout(resolve, 4));
      await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
    },
  });
}

main().catch((err) => { console.error(err); process.exit(1); });
