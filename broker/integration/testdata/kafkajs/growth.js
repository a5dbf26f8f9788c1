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
      try {
        await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
      } catch (err) {
        // A growth makes the group rebalance; a commit of the generation
        // before is refused (ILLEGAL_GENERATION), and KafkaJS's retrier
        // then throws it as non-retriable, which would crash the
        // consumer. The partition's next owner starts at the last commit
        // and processes these records again, as the test allows.
        const cause = err.cause || err;
        if (!['ILLEGAL_GENERATION', 'REBALANCE_IN_PROGRESS', 'UNKNOWN_MEMBER_ID'].includes(cause.type)) {
          throw err;
        }
      }
    },
  });
}

main().catch((err) => { console.error(err); process.exit(1); });
