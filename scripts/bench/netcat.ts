/**
 * `npm run bench -- netcat`: netcat source ingest rate.
 *
 * A client process (a second Bun) sends N lines of 80 bytes over TCP as fast as the socket
 * takes them (reading the OKs as they come); the source makes them events into a MemoryChannel
 * that a null sink (batchSize 1000) empties, driven by the agent's own SinkRunner. Prints
 * events/s from the client's start to the last event taken, with ack-every-event off and on,
 * and the process's peak RSS.
 */
import { spawn } from "node:child_process";
import { componentContext } from "../../src/components/component.ts";
import { NullSink } from "../../src/components/sinks/null.ts";
import { definition as netcat } from "../../src/components/sources/netcat.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { systemClock } from "../../src/core/clock.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { SinkRunner } from "../../src/core/runners.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import type { Status } from "../../src/core/sink.ts";
import { DefaultSinkProcessor } from "../../src/core/sink-processors.ts";
import { peakRssMb } from "./_util.ts";

const N = Number(process.env.BENCH_EVENTS ?? 1_000_000);

/** The null sink, telling the bench when it has taken the last event. */
class CountingNullSink extends NullSink {
  constructor(
    private readonly total: number,
    private readonly done: () => void,
  ) {
    super(componentContext("k1", { agentName: "bench", clock: systemClock, logger: silentLogger }), 1000);
  }

  override async process(): Promise<Status> {
    const status = await super.process();
    if (this.eventCount >= this.total) this.done();
    return status;
  }
}

// The client: 1000-line blocks written as fast as the socket takes them; the OKs are read and dropped.
const CLIENT = `
const net = require("node:net");
const [port, n] = process.argv.slice(1).map(Number);
const lines = [];
for (let i = 0; i < 1000; i++) lines.push("GET /index.html HTTP/1.1 200 512 web-01 nginx[4242] a line of about eighty bytes " + String(i).padStart(6, "0") + "\\n");
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
s.on("error", () => {});
`;

async function scenario(ack: boolean): Promise<{ rate: number; seconds: number }> {
  const { options: config } = netcat.parse({ bind: "127.0.0.1", port: "0", "ack-every-event": String(ack), "max-line-length": "512" });
  const source = netcat.create(config, componentContext("r1", { agentName: "bench", clock: systemClock, logger: silentLogger }));
  const channel = new MemoryChannel("c1", { capacity: 100_000, transactionCapacity: 100_000 });
  channel.start();
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  await source.start();
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const sink = new CountingNullSink(N, () => done());
  sink.setChannel(channel);
  const runner = new SinkRunner("k1", new DefaultSinkProcessor(sink), systemClock, silentLogger);
  const t0 = performance.now();
  const client = spawn(process.execPath, ["-e", CLIENT, String(source.port), String(N)], { stdio: "inherit" });
  await runner.start();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  client.kill();
  await runner.stop();
  await source.stop();
  return { rate: N / seconds, seconds };
}

export async function run(): Promise<void> {
  for (const ack of [false, true]) {
    const r = await scenario(ack);
    console.log(`netcat, ack-every-event ${ack}: ${N.toLocaleString("en-US")} lines in ${r.seconds.toFixed(2)} s = ${Math.round(r.rate).toLocaleString("en-US")} events/s`);
  }
  console.log(`peak RSS ${peakRssMb().toFixed(0)} MB`);
}

if (import.meta.main) await run();
