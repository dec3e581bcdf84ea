/**
 * A tiny agent for the SIGKILL test: TAILDIR -> MemoryChannel -> appends each delivered line to
 * an output file with fsync per batch. The position file is written only after the lines it
 * covers are in the output (as a sink that delivered them), so a SIGKILL can repeat lines but
 * must never lose one. SIGTERM stops gracefully.
 *
 * With a third argument "durable", the channel is a DeliveringChannel instead: its commit is
 * the delivery and it keeps the source's position, as a file channel would (exactly once).
 *
 * Usage: bun taildir-runner.ts '<json: TAILDIR properties>' <output file> [durable]
 */
import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import { definition } from "../../../src/components/sources/taildir.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { DeliveringChannel } from "../../support/delivering-channel.ts";
import { build, context, drain, wire } from "../../support/components.ts";

const raw = JSON.parse(process.argv[2]) as Record<string, string>;
const output = process.argv[3];
const ctx = context("r1");
if (process.env.DEBUG_TAILDIR) {
  const log = (level: string) => (m: string) => process.stderr.write(`[runner ${level}] ${m}\n`);
  Object.assign(ctx.logger, { info: log("info"), warn: log("warn"), error: log("error"), debug: () => {} });
}
const src = build(definition, { writePosInterval: String(3600_000), ...raw }, ctx);
const durable = process.argv[4] === "durable";
const delivering = durable ? new DeliveringChannel("c1", output, true) : null;
if (delivering) {
  delivering.start();
  src.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([delivering])));
}
const channel = delivering ? null : wire(src, { capacity: 10000, transactionCapacity: 1000 });
const fd = openSync(output, "a");
const NL = new Uint8Array([10]);

async function deliver(): Promise<void> {
  if (!channel) return;
  const events = await drain(channel, Number.MAX_SAFE_INTEGER, 1000);
  if (events.length === 0) return;
  const parts: Uint8Array[] = [];
  for (const e of events) parts.push(e.body, NL);
  writeSync(fd, Buffer.concat(parts));
  fsyncSync(fd);
}

let running = true;
process.on("SIGTERM", () => {
  running = false;
});
// The test holds our stdin: when it goes away (test killed), so do we.
process.stdin.on("close", () => process.exit(1));
process.stdin.on("end", () => process.exit(1));
process.stdin.resume();

await src.start();
console.log("READY");
while (running) {
  const status = await src.process();
  await deliver();
  if (!durable) await src.writePositions();
  if (status === "BACKOFF") await new Promise((r) => setTimeout(r, 10));
}
await deliver();
await src.stop();
closeSync(fd);
console.log("STOPPED");
process.exit(0);
