/**
 * `npm run bench -- core`: put/take throughput of the transaction core.
 *
 * One put transaction of N events, commit, one take transaction of N events, commit, in a loop,
 * on a MemoryChannel, with 100-byte bodies. Events come from a pool made up front so the
 * figure measures the channel, not allocation. Two queue states: empty (each batch is taken
 * right after it was put) and a 100k-event backlog kept constant under the loop.
 * Prints put+take pairs per second and the process's peak RSS.
 */
import { createEvent, type Event } from "../../src/core/event.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";

const BODY_SIZE = 100;
const BACKLOG = 100_000;
/** How long each scenario runs after its warm-up. */
const MEASURE_MS = Number(process.env.BENCH_MS ?? 1500);
const WARMUP_MS = 300;

interface Scenario {
  batch: number;
  backlog: number;
}

interface Result extends Scenario {
  eventsPerSecond: number;
  batches: number;
}

function makePool(n: number): Event[] {
  const pool: Event[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const body = new Uint8Array(BODY_SIZE);
    body.fill(97 + (i % 26));
    pool[i] = createEvent(body, { seq: String(i) });
  }
  return pool;
}

/** One put transaction and one take transaction of `batch` events. */
async function cycle(channel: MemoryChannel, pool: Event[], batch: number, offset: number): Promise<void> {
  const put = channel.getTransaction();
  put.begin();
  for (let i = 0; i < batch; i++) put.put(pool[offset + i]);
  await put.commit();
  put.close();

  const take = channel.getTransaction();
  take.begin();
  for (let i = 0; i < batch; i++) {
    if (take.take() === null) throw new Error(`channel ran dry after ${i} of ${batch} takes`);
  }
  await take.commit();
  take.close();
}

async function runScenario(s: Scenario, pool: Event[]): Promise<Result> {
  const channel = new MemoryChannel(`bench-${s.batch}-${s.backlog}`, {
    capacity: s.backlog + 2 * s.batch,
    transactionCapacity: s.batch,
    keepAlive: 0,
  });
  channel.start();
  // Fill the backlog in transaction-sized batches.
  for (let filled = 0; filled < s.backlog; filled += s.batch) {
    const tx = channel.getTransaction();
    tx.begin();
    const n = Math.min(s.batch, s.backlog - filled);
    for (let i = 0; i < n; i++) tx.put(pool[(filled + i) % pool.length]);
    await tx.commit();
    tx.close();
  }
  const slots = Math.floor(pool.length / s.batch);
  let k = 0;
  const warmEnd = performance.now() + WARMUP_MS;
  while (performance.now() < warmEnd) {
    for (let j = 0; j < 16; j++) await cycle(channel, pool, s.batch, ((k++ % slots) * s.batch));
  }
  let batches = 0;
  const start = performance.now();
  let now = start;
  const end = start + MEASURE_MS;
  while (now < end) {
    // Check the time every few batches so the clock read stays out of the measurement.
    for (let j = 0; j < 16; j++) await cycle(channel, pool, s.batch, ((k++ % slots) * s.batch));
    batches += 16;
    now = performance.now();
  }
  const seconds = (now - start) / 1000;
  if (channel.size !== s.backlog) throw new Error(`backlog drifted: ${channel.size} != ${s.backlog}`);
  const c = channel.counter.values;
  if (c.EventPutSuccessCount - c.EventTakeSuccessCount !== c.ChannelSize) throw new Error("counters inconsistent");
  channel.stop();
  return { ...s, batches, eventsPerSecond: (batches * s.batch) / seconds };
}

function peakRssMiB(): number {
  // maxRSS is in KiB on Linux and macOS.
  return process.resourceUsage().maxRSS / 1024;
}

function fmt(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0);
}

export async function run(): Promise<void> {
  const runtime = typeof Bun !== "undefined" ? `bun ${Bun.version}` : `node ${process.version}`;
  console.log(`core bench: MemoryChannel put+take, ${BODY_SIZE}-byte bodies, ${MEASURE_MS} ms per case (${runtime})`);
  const pool = makePool(BACKLOG + 10_000);
  const scenarios: Scenario[] = [
    { batch: 100, backlog: 0 },
    { batch: 1000, backlog: 0 },
    { batch: 100, backlog: BACKLOG },
    { batch: 1000, backlog: BACKLOG },
  ];
  const results: Result[] = [];
  for (const s of scenarios) {
    const r = await runScenario(s, pool);
    results.push(r);
    console.log(
      `batch ${String(r.batch).padStart(4)}  backlog ${String(r.backlog).padStart(6)}  ${fmt(r.eventsPerSecond).padStart(8)} events/s  (${r.batches} batches)`,
    );
  }
  console.log(`peak RSS ${peakRssMiB().toFixed(1)} MiB`);
  const target = results.filter((r) => r.batch === 1000);
  const worst = Math.min(...target.map((r) => r.eventsPerSecond));
  console.log(`batch 1000 worst case ${fmt(worst)} events/s (target 10M/s: ${worst >= 10e6 ? "met" : "NOT met"})`);
}

if (import.meta.main) await run();
