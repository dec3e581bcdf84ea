/**
 * `npm run bench -- http`: http source ingest rate (JSON handler).
 *
 * A client process (a second Bun) keeps 16 requests in flight, each a JSON array of 100
 * events of about 100 bytes, to the http source; the source writes each request to a
 * MemoryChannel in one transaction, and a drain loop empties it as a sink would. Prints
 * events/s and requests/s, and the agent process's peak RSS.
 */
import { componentContext } from "../../src/components/component.ts";
import { spawn } from "node:child_process";
import { peakRssMb } from "./_util.ts";
import { definition as httpSource } from "../../src/components/sources/http.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { systemClock } from "../../src/core/clock.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 10_000);
const PER_REQUEST = 100;
const CONCURRENCY = 16;

const CLIENT = `
const [port, total, per, conc] = process.argv.slice(1).map(Number);
const events = [];
for (let i = 0; i < per; i++) events.push({ headers: { host: "web-01", seq: String(i) }, body: "GET /index.html HTTP/1.1 200 512 " + "x".repeat(60) });
const body = JSON.stringify(events);
let next = 0, failed = 0;
async function worker() {
  while (next < total) {
    next++;
    const res = await fetch("http://127.0.0.1:" + port + "/", { method: "POST", headers: { "Content-Type": "application/json" }, body });
    await res.arrayBuffer();
    if (res.status !== 200) failed++;
  }
}
await Promise.all(Array.from({ length: conc }, worker));
if (failed) console.error(failed + " requests failed");
`;

export async function run(): Promise<void> {
  const { options: config } = httpSource.parse({ bind: "127.0.0.1", port: "0" });
  const source = httpSource.create(config, componentContext("r1", { agentName: "bench", clock: systemClock, logger: silentLogger }));
  const channel = new MemoryChannel("c1", { capacity: 100_000, transactionCapacity: 1000 });
  channel.start();
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  await source.start();
  const expected = REQUESTS * PER_REQUEST;
  let taken = 0;
  let draining = true;
  const drain = (async () => {
    while (draining || channel.size > 0) {
      const tx = channel.getTransaction();
      tx.begin();
      let n = 0;
      while (n < 1000 && tx.take() !== null) n++;
      await tx.commit();
      tx.close();
      taken += n;
      if (n < 1000) await new Promise((r) => setTimeout(r, 1));
    }
  })();
  const t0 = performance.now();
  const client = spawn(process.execPath, ["-e", CLIENT, String(source.port), String(REQUESTS), String(PER_REQUEST), String(CONCURRENCY)], { stdio: "inherit" });
  await new Promise((r) => client.on("exit", r));
  draining = false;
  await drain;
  const seconds = (performance.now() - t0) / 1000;
  await source.stop();
  if (taken !== expected) console.log(`warning: ${taken} events taken, ${expected} sent`);
  console.log(
    `http source (JSON, ${PER_REQUEST} events per request, ${CONCURRENCY} in flight): ${REQUESTS.toLocaleString("en-US")} requests in ${seconds.toFixed(2)} s = ` +
      `${Math.round(REQUESTS / seconds).toLocaleString("en-US")} requests/s, ${Math.round(taken / seconds).toLocaleString("en-US")} events/s`,
  );
  console.log(`peak RSS ${peakRssMb().toFixed(0)} MB`);
}

if (import.meta.main) await run();
