/**
 * `npm run bench -- syslog`: syslogtcp ingest rate.
 *
 * A client process (a second Bun) sends N syslog messages over TCP as fast as the socket takes
 * them, newline-framed (RFC 3164) and octet-counted (RFC 5424); the source parses them into a
 * MemoryChannel that a null sink (batchSize 1000) empties, driven by the agent's own SinkRunner,
 * so the channel is drained on the schedule a real agent has (woken by puts, yielding to I/O
 * every 64 full batches). Prints events/s from the client's start to the last event taken, and
 * the agent process's peak RSS. Then, in the same process, the memory one queued event costs:
 * 100,000 messages framed and parsed from 512 KiB reads (the size Bun's sockets deliver) and
 * kept, measured with JSC's heap statistics after a full GC.
 */
import { componentContext } from "../../src/components/component.ts";
import { spawn } from "node:child_process";
import { peakRssMb } from "./_util.ts";
import { heapStats } from "bun:jsc";
import { type Frame, SyslogFrameDecoder } from "../../src/components/sources/syslog/framing.ts";
import { SyslogEventParser } from "../../src/components/sources/syslog/parse.ts";
import type { Event } from "../../src/core/event.ts";
import type { NetcatSource } from "../../src/components/sources/netcat.ts";
import { definition as syslogTcp, type SyslogTcpSource } from "../../src/components/sources/syslog-tcp.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { systemClock } from "../../src/core/clock.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { SinkRunner } from "../../src/core/runners.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import type { Status } from "../../src/core/sink.ts";
import { DefaultSinkProcessor } from "../../src/core/sink-processors.ts";
import { NullSink } from "../../src/components/sinks/null.ts";

const N = Number(process.env.BENCH_EVENTS ?? 1_000_000);

/** The null sink, telling the bench when it has taken the last event. */
class CountingNullSink extends NullSink {
  constructor(
    private readonly total: number,
    private readonly done: () => void,
  ) {
    super(componentContext("k1", { agentName: "bench", clock: systemClock, logger: silentLogger }), 1000);
  }

  /** Most events the channel held when the sink came to take (how far the source ran ahead). */
  maxQueued = 0;

  override async process(): Promise<Status> {
    const size = (this.getChannel() as MemoryChannel).size;
    if (size > this.maxQueued) this.maxQueued = size;
    const status = await super.process();
    if (this.eventCount >= this.total) this.done();
    return status;
  }
}

// The client: builds the stream in 1 MB writes and sends it, reading (and dropping) what the
// source answers. Runs as a separate process. Formats: 3164, 5424, or plain lines (netcat).
const CLIENT = `
const net = require("node:net");
const [port, n, format] = process.argv.slice(1).map((v, i) => (i < 2 ? Number(v) : v));
const lines = [];
for (let i = 0; i < 1000; i++) {
  const msg = format === "5424"
    ? "<134>1 2024-05-06T07:08:09.123456+02:00 web-01.example.com nginx 4242 - - GET /index.html 200 " + String(i).padStart(6, "0")
    : format === "plain"
      ? "GET /index.html HTTP/1.1 200 512 web-01 nginx[4242] a line of about eighty bytes " + String(i).padStart(6, "0")
      : "<134>May  6 07:08:09 web-01 nginx[4242]: GET /index.html HTTP/1.1 200 512 " + String(i).padStart(6, "0");
  lines.push(format === "5424" ? Buffer.byteLength(msg) + " " + msg : msg + "\\n");
}
const block = Buffer.from(lines.join(""));
const s = net.connect(port, "127.0.0.1", () => {
  let sent = 0;
  const pump = () => {
    while (sent < n) {
      sent += 1000;
      if (!s.write(block)) return s.once("drain", pump);
    }
    s.end();
  };
  pump();
});
s.on("data", () => {});
`;

async function scenario(format: "3164" | "5424"): Promise<{ rate: number; seconds: number; maxQueued: number }> {
  const { options: config } = syslogTcp.parse({ host: "127.0.0.1", port: "0", batchSize: "1000" });
  return ingest(syslogTcp.create(config, componentContext("r1", { agentName: "bench", clock: systemClock, logger: silentLogger })), format);
}

/**
 * Starts `source` into a memory channel that a null sink empties, and has CLIENT send it N
 * messages in `format`: the rate from the client's start to the last event taken.
 */
export async function ingest(source: SyslogTcpSource | NetcatSource, format: string): Promise<{ rate: number; seconds: number; maxQueued: number }> {
  const channel = new MemoryChannel("c1", { capacity: 100_000, transactionCapacity: 1000 });
  channel.start();
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  await source.start();
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const sink = new CountingNullSink(N, () => done());
  sink.setChannel(channel);
  const runner = new SinkRunner("k1", new DefaultSinkProcessor(sink), systemClock, silentLogger);
  const t0 = performance.now();
  const client = spawn(process.execPath, ["-e", CLIENT, String(source.port), String(N), format], { stdio: "inherit" });
  await runner.start();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  client.kill();
  await runner.stop();
  await source.stop();
  return { rate: N / seconds, seconds, maxQueued: sink.maxQueued };
}

/** The client's messages, as the bytes of one 1000-message block. */
function messageBlock(format: "3164" | "5424"): Uint8Array {
  const lines: string[] = [];
  for (let i = 0; i < 1000; i++) {
    const msg =
      format === "5424"
        ? `<134>1 2024-05-06T07:08:09.123456+02:00 web-01.example.com nginx 4242 - - GET /index.html 200 ${String(i).padStart(6, "0")}`
        : `<134>May  6 07:08:09 web-01 nginx[4242]: GET /index.html HTTP/1.1 200 512 ${String(i).padStart(6, "0")}`;
    lines.push(format === "5424" ? `${Buffer.byteLength(msg)} ${msg}` : `${msg}\n`);
  }
  return Buffer.from(lines.join(""));
}

/** Bytes in the JS heap (GC cells) and in array buffers outside it, after a full collection. */
async function memoryInUse(): Promise<number> {
  for (let i = 0; i < 2; i++) {
    Bun.gc(true);
    // Array buffers are released after the collection, on the event loop.
    await new Promise((r) => setTimeout(r, 20));
  }
  const h = heapStats();
  return h.heapSize - h.extraMemorySize + process.memoryUsage().arrayBuffers;
}

/**
 * Memory per queued event: `count` messages framed and parsed as the TCP source does, from
 * fresh 512 KiB reads, every `keepEvery`-th event kept (1 = a full channel; 100 = a few events
 * of each read still queued, as behind a selective channel).
 */
async function retainedBytesPerEvent(format: "3164" | "5424", count: number, keepEvery: number): Promise<number> {
  const block = messageBlock(format);
  const READ = 512 * 1024;
  const total = block.length * Math.ceil(count / 1000);
  const kept: Event[] = [];
  const decoder = new SyslogFrameDecoder(2500);
  const parser = new SyslogEventParser({ dialect: "syslog", keepFields: null, rfc3164Zone: "local", now: () => Date.now() });
  const before = await memoryInUse();
  let n = 0;
  for (let off = 0; off < total; off += READ) {
    const read = new Uint8Array(Math.min(READ, total - off));
    for (let i = 0; i < read.length; ) {
      const from = (off + i) % block.length;
      const len = Math.min(read.length - i, block.length - from);
      read.set(block.subarray(from, from + len), i);
      i += len;
    }
    const frames: Frame[] = [];
    decoder.push(read, frames);
    for (const f of frames) {
      const { event } = parser.parse(f.bytes, f.part);
      if (n++ % keepEvery === 0) kept.push(event);
    }
  }
  const after = await memoryInUse();
  const perEvent = (after - before) / kept.length;
  // A stale stack slot may keep this array alive into the next measurement: empty it.
  kept.length = 0;
  return perEvent;
}

export async function run(): Promise<void> {
  for (const format of ["3164", "5424"] as const) {
    const r = await scenario(format);
    const framing = format === "3164" ? "RFC 3164, newline framed" : "RFC 5424, octet counted";
    console.log(`syslogtcp ${framing}: ${N.toLocaleString("en-US")} events in ${r.seconds.toFixed(2)} s = ${Math.round(r.rate).toLocaleString("en-US")} events/s (channel held at most ${r.maxQueued.toLocaleString("en-US")})`);
  }
  console.log(`peak RSS ${peakRssMb().toFixed(0)} MB`);
  for (const format of ["3164", "5424"] as const) {
    const dense = await retainedBytesPerEvent(format, 100_000, 1);
    const sparse = await retainedBytesPerEvent(format, 1_000_000, 100);
    console.log(`RFC ${format}: ${dense.toFixed(0)} bytes per queued event; ${sparse.toFixed(0)} when 1 event in 100 of each read is still queued`);
  }
}

if (import.meta.main) await run();
