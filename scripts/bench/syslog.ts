/**
 * `npm run bench -- syslog`: syslogtcp ingest rate.
 *
 * A client process (a second Bun) sends N syslog messages over TCP as fast as the socket takes
 * them, newline-framed (RFC 3164) and octet-counted (RFC 5424); the source parses them into a
 * MemoryChannel that a drain loop empties in 1000-event take transactions, as a sink would.
 * Prints events/s from the first byte to the last event taken, and the agent process's peak RSS.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { definition as syslogTcp } from "../../src/components/sources/syslog-tcp.ts";
import { parseConfig } from "../../src/config/schema.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { systemClock } from "../../src/core/clock.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";

const N = Number(process.env.BENCH_EVENTS ?? 1_000_000);

function peakRssMb(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

// The client: builds the stream in 1 MB writes and sends it. Runs as a separate process.
const CLIENT = `
const net = require("node:net");
const [port, n, format] = process.argv.slice(1).map((v, i) => (i < 2 ? Number(v) : v));
const lines = [];
for (let i = 0; i < 1000; i++) {
  const msg = format === "5424"
    ? "<134>1 2024-05-06T07:08:09.123456+02:00 web-01.example.com nginx 4242 - - GET /index.html 200 " + String(i).padStart(6, "0")
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
`;

async function scenario(format: "3164" | "5424"): Promise<{ rate: number; seconds: number }> {
  const { config } = parseConfig(syslogTcp.schema, { host: "127.0.0.1", port: "0", batchSize: "1000" });
  const source = syslogTcp.create(config, { name: "r1", agentName: "bench", clock: systemClock, logger: silentLogger });
  const channel = new MemoryChannel("c1", { capacity: 100_000, transactionCapacity: 1000 });
  channel.start();
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  await source.start();
  let taken = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const drain = async () => {
    while (taken < N) {
      const tx = channel.getTransaction();
      tx.begin();
      let n = 0;
      while (n < 1000 && tx.take() !== null) n++;
      await tx.commit();
      tx.close();
      taken += n;
      if (n < 1000) await new Promise((r) => setImmediate(r));
    }
    done();
  };
  const t0 = performance.now();
  const client = spawn(process.execPath, ["-e", CLIENT, String(source.port), String(N), format], { stdio: "inherit" });
  void drain();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  client.kill();
  await source.stop();
  return { rate: N / seconds, seconds };
}

export async function run(): Promise<void> {
  for (const format of ["3164", "5424"] as const) {
    const r = await scenario(format);
    const framing = format === "3164" ? "RFC 3164, newline framed" : "RFC 5424, octet counted";
    console.log(`syslogtcp ${framing}: ${N.toLocaleString("en-US")} events in ${r.seconds.toFixed(2)} s = ${Math.round(r.rate).toLocaleString("en-US")} events/s`);
  }
  console.log(`peak RSS ${peakRssMb().toFixed(0)} MB`);
}

if (import.meta.main) await run();
