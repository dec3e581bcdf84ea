/**
 * `npm run bench -- netcat`: netcat source ingest rate.
 *
 * A client process (a second Bun, syslog's bench client) sends N lines of 80 bytes over TCP as
 * fast as the socket takes them (reading the OKs as they come); the source makes them events
 * into a MemoryChannel that a null sink (batchSize 1000) empties, driven by the agent's own
 * SinkRunner (syslog's ingest()). Prints
 * events/s from the client's start to the last event taken, with ack-every-event off and on,
 * and the process's peak RSS.
 */
import { componentContext } from "../../src/components/component.ts";
import { definition as netcat } from "../../src/components/sources/netcat.ts";
import { systemClock } from "../../src/core/clock.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { peakRssMb } from "./_util.ts";
import { ingest } from "./syslog.ts";

const N = Number(process.env.BENCH_EVENTS ?? 1_000_000);

function scenario(ack: boolean): Promise<{ rate: number; seconds: number }> {
  const { options: config } = netcat.parse({ bind: "127.0.0.1", port: "0", "ack-every-event": String(ack), "max-line-length": "512" });
  return ingest(netcat.create(config, componentContext("r1", { agentName: "bench", clock: systemClock, logger: silentLogger })), "plain");
}

export async function run(): Promise<void> {
  for (const ack of [false, true]) {
    const r = await scenario(ack);
    console.log(`netcat, ack-every-event ${ack}: ${N.toLocaleString("en-US")} lines in ${r.seconds.toFixed(2)} s = ${Math.round(r.rate).toLocaleString("en-US")} events/s`);
  }
  console.log(`peak RSS ${peakRssMb().toFixed(0)} MB`);
}

if (import.meta.main) await run();
