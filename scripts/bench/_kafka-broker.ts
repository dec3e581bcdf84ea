/**
 * Holds one local Kafka broker (as `npm run bench -- kafka` starts it) until killed, printing its
 * bootstrap address and creating the topics named on the command line: for profiling an agent
 * (`bun --cpu-prof src/cli.ts run ...`) against the same broker as the benchmark.
 */
import { KAFKA_SERVER_START_JVM, startKafka } from "../../test/support/kafka.ts";

const kafka = await startKafka({ brokerJvm: KAFKA_SERVER_START_JVM });
for (const t of process.argv.slice(2)) await kafka.createTopic(t);
console.log(`bootstrap ${kafka.bootstrap}`);
const stop = async () => {
  await kafka.stop();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
setInterval(() => {}, 1 << 30);
