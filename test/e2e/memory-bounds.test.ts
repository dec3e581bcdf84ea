// What memory a `flume run` agent really uses for queued events, read from /proc/<pid>/status
// of the child process: event bodies hold only their own bytes (not the pipe or socket read
// they arrived in), so a memory channel's byteCapacity bounds the process's memory.
import { describe, expect } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { agentsAfterEach, fetchMetrics, freePort, tempDir, waitForMetrics } from "../support/helpers.ts";
import { needsProc } from "../support/requires.ts";

const { cleanups, startAgent } = agentsAfterEach();
const MB = 1024 * 1024;

/** A field of /proc/<pid>/status in MB (VmRSS, VmHWM). */
function procMb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) / 1024;
}

/** Writes `lines` lines of 100 bytes ("000000042" and spaces) to stdout, blocking on a full pipe. */
const GENERATOR = `
import { writeSync } from "node:fs";
const lines = Number(process.argv[2]);
const perBlock = 10000;
const block = Buffer.alloc(perBlock * 100, " ");
for (let i = 0; i < lines; i += perBlock) {
  const n = Math.min(perBlock, lines - i);
  for (let j = 0; j < n; j++) {
    block.write(String(i + j).padStart(9, "0"), j * 100, "latin1");
    block[j * 100 + 99] = 10;
  }
  for (let off = 0, end = n * 100; off < end; ) off += writeSync(1, block, off, end - off);
}
`;

describe("memory that byteCapacity bounds (flume run child processes, /proc)", () => {
  // Before bodies were compacted after interceptors, each kept line held its whole pipe read:
  // 365-375 MB peak for this run. Measured since: 100-130 MB peak (about 60 MB of it is the
  // idle agent), about the same for 600 MB of input.
  needsProc.test("exec with regex_filter keeping 1 line in 1,000 of 200 MB, no sink: peak RSS stays under 200 MB", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const generator = path.join(tmp.dir, "lines.mjs");
    writeFileSync(generator, GENERATOR);
    const lines = 2_000_000;
    const metrics = await freePort();
    const agent = startAgent(
      tmp.dir,
      "a1",
      `a1.sources = r1
a1.channels = c1
a1.sources.r1.type = exec
a1.sources.r1.command = ${process.execPath} ${generator} ${lines}
a1.sources.r1.batchSize = 1000
a1.sources.r1.channels = c1
a1.sources.r1.interceptors = f
a1.sources.r1.interceptors.f.type = regex_filter
a1.sources.r1.interceptors.f.regex = ^[0-9]{6}000
a1.channels.c1.type = memory
a1.channels.c1.capacity = 1000000
a1.channels.c1.transactionCapacity = 1000
`,
      metrics,
    );
    await agent.waitFor(/exited with 0/, 60000);
    const m = await fetchMetrics(metrics);
    expect(m["SOURCE.r1"].EventReceivedCount).toBe(String(lines));
    expect(m["CHANNEL.c1"].ChannelSize).toBe(String(lines / 1000));
    const peak = procMb(agent.child.pid as number, "VmHWM");
    expect(peak).toBeLessThan(200);
  }, 90000);

  // About 536,870 events of 99 bytes fill 80% of 64 MiB (byteCapacityBufferPercentage 20, a
  // slot is 100 bytes). Measured: RSS grows by 160-200 MB, 2.5-3.1 times byteCapacity (the
  // event and header objects and the typed-array view of each body cost 200-260 bytes each).
  needsProc.test("netcat into a memory channel of byteCapacity 64 MiB filled with 100-byte lines: RSS grows by at most 4.5 x byteCapacity", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const [port, metrics] = [await freePort(), await freePort()];
    const byteCapacity = 64 * MB;
    const agent = startAgent(
      tmp.dir,
      "a1",
      `a1.sources = r1
a1.channels = c1
a1.sources.r1.type = netcat
a1.sources.r1.bind = 127.0.0.1
a1.sources.r1.port = ${port}
a1.sources.r1.ack-every-event = false
a1.sources.r1.channels = c1
a1.channels.c1.type = memory
a1.channels.c1.capacity = 100000000
a1.channels.c1.transactionCapacity = 10000
a1.channels.c1.byteCapacity = ${byteCapacity}
a1.channels.c1.keep-alive = 0
`,
      metrics,
    );
    await agent.waitFor(/agent a1 started/);
    await new Promise((r) => setTimeout(r, 300));
    const pid = agent.child.pid as number;
    const before = procMb(pid, "VmRSS");
    const client = net.connect(port, "127.0.0.1");
    cleanups.push(() => client.destroy());
    await new Promise((r) => client.once("connect", r));
    const chunk = Buffer.from(`${"x".repeat(99)}\n`.repeat(655));
    let sending = true;
    const sender = (async () => {
      while (sending && !client.destroyed) {
        if (client.write(chunk)) continue;
        await new Promise<void>((resolve) => {
          const done = () => {
            client.off("drain", done);
            client.off("close", done);
            resolve();
          };
          client.on("drain", done);
          client.on("close", done);
        });
      }
    })();
    // Full: the source retries a refused batch and the channel's size no longer moves.
    let last = -1;
    let still = 0;
    const full = await waitForMetrics(
      metrics,
      "the channel to fill",
      (m) => {
        const size = Number(m["CHANNEL.c1"]?.ChannelSize ?? 0);
        still = Number(m["SOURCE.r1"]?.ChannelWriteFail ?? 0) > 0 && size === last ? still + 1 : 0;
        last = size;
        return still >= 3;
      },
      30000,
      200,
    );
    const grown = procMb(pid, "VmRSS") - before;
    console.log(`memory bounds: RSS grew by ${grown.toFixed(0)} MB = ${(grown / (byteCapacity / MB)).toFixed(2)} x byteCapacity`);
    sending = false;
    client.destroy();
    await sender.catch(() => {});
    // Full up to less than one batch (the lines of one socket read, up to 512 KiB).
    const slots = Math.floor((byteCapacity * 0.8) / 100);
    expect(Number(full["CHANNEL.c1"].ChannelSize)).toBeGreaterThan(slots - 6000);
    expect(Number(full["CHANNEL.c1"].ChannelSize)).toBeLessThanOrEqual(slots);
    expect(grown).toBeLessThan((4.5 * byteCapacity) / MB);
  }, 60000);
});
