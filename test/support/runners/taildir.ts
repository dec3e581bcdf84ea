/**
 * A TAILDIR source in a child process, for the tests that kill it, trace it or run it as
 * another user. Usage: bun taildir.ts <mode> ...
 *
 * - `deliver '<json: TAILDIR properties>' <output file> [durable]`: TAILDIR -> memory channel
 *   -> each delivered line appended to the output file, fsync'ed per batch. The source records
 *   its position right after each commit, so a SIGKILL loses what the channel held and repeats
 *   at most the batch whose record it cut off. With `durable` the channel is a
 *   DeliveringChannel instead: its commit is the delivery and it keeps the source's position, as
 *   a file channel would (exactly once). Prints READY, then STOPPED after a SIGTERM.
 * - `file-channel <channel dir> '<json: TAILDIR properties>'`: TAILDIR -> file channel, no sink.
 *   The positions are committed in the same file channel transactions as the lines, so a SIGKILL
 *   at any moment must leave every line in the channel exactly once. Prints READY, "size <n>"
 *   whenever the channel size changed (polled every 2 ms), STOPPED after a SIGTERM.
 * - `poll <dir>`: tails `<dir>/logs/.*\.log` into a memory channel, polls five times, prints
 *   {"lines": [...], "errors": [...]} as JSON (run as an unprivileged user so that file
 *   permissions apply).
 * - `positions <dir>`: records `<dir>/logs/app.log` (written here) in `<dir>/state/pos.json`
 *   once, then stops (run under strace to see how the position file reaches the disk).
 */
import { closeSync, fsyncSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import { FileChannel } from "../../../src/components/channels/file/index.ts";
import { definition, type TaildirSource } from "../../../src/components/sources/taildir.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { bodies, build, context, drain, wire } from "../components.ts";
import { DeliveringChannel } from "../delivering-channel.ts";
import { options } from "../file-channel.ts";

const [mode, ...args] = process.argv.slice(2);

/** SIGTERM ends the loop; the test holds our stdin (if a pipe): when it goes away, so do we. */
function runUntilSigterm(): { running: () => boolean } {
  let running = true;
  process.on("SIGTERM", () => {
    running = false;
  });
  return { running: () => running };
}

async function deliver(json: string, output: string, durable: boolean): Promise<void> {
  const ctx = context("r1");
  if (process.env.DEBUG_TAILDIR) {
    const log = (level: string) => (m: string) => process.stderr.write(`[runner ${level}] ${m}\n`);
    Object.assign(ctx.logger, { info: log("info"), warn: log("warn"), error: log("error"), debug: () => {} });
  }
  const src = build(definition, { writePosInterval: String(3600_000), ...(JSON.parse(json) as Record<string, string>) }, ctx);
  const delivering = durable ? new DeliveringChannel("c1", output, true) : null;
  if (delivering) {
    delivering.start();
    src.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([delivering])));
  }
  const channel = delivering ? null : wire(src, { capacity: 10000, transactionCapacity: 1000 });
  const fd = openSync(output, "a");
  const NL = new Uint8Array([10]);
  const flush = async () => {
    if (!channel) return;
    const events = await drain(channel, Number.MAX_SAFE_INTEGER, 1000);
    if (events.length === 0) return;
    const parts: Uint8Array[] = [];
    for (const e of events) parts.push(e.body, NL);
    writeSync(fd, Buffer.concat(parts));
    fsyncSync(fd);
  };
  const loop = runUntilSigterm();
  process.stdin.on("close", () => process.exit(1));
  process.stdin.on("end", () => process.exit(1));
  process.stdin.resume();
  await src.start();
  console.log("READY");
  while (loop.running()) {
    const status = await src.process();
    await flush();
    if (!durable) await src.writePositions();
    if (status === "BACKOFF") await new Promise((r) => setTimeout(r, 10));
  }
  await flush();
  await src.stop();
  closeSync(fd);
  console.log("STOPPED");
}

async function intoFileChannel(dir: string, json: string): Promise<void> {
  const ch = new FileChannel("c1", options(dir, { maxFileSize: 64 * 1024, checkpointInterval: 1000 }));
  await ch.start();
  // The position file is written rarely on purpose: resuming must rely on the channel's positions.
  const src = build(definition, { writePosInterval: String(3600_000), ...(JSON.parse(json) as Record<string, string>) }, context("r1"));
  src.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([ch])));
  const loop = runUntilSigterm();
  await src.start();
  process.stdout.write("READY\n");
  let last = -1;
  const report = setInterval(() => {
    if (ch.size === last) return;
    last = ch.size;
    process.stdout.write(`size ${last}\n`);
  }, 2);
  while (loop.running()) {
    const status = await src.process();
    if (status === "BACKOFF") await new Promise((r) => setTimeout(r, 10));
  }
  clearInterval(report);
  await src.stop();
  await ch.stop();
  process.stdout.write("STOPPED\n");
}

async function poll(dir: string): Promise<void> {
  const ctx = context("r1");
  const src = build(definition, { filegroups: "g1", "filegroups.g1": `${path.join(dir, "logs")}/.*\\.log`, positionFile: path.join(dir, "pos.json") }, ctx) as TaildirSource;
  const channel = wire(src);
  await src.start();
  for (let i = 0; i < 5; i++) await src.process();
  const lines = bodies(await drain(channel));
  await src.stop();
  const errors = ctx.logger.lines.filter((l) => l.level === "error").map((l) => l.message);
  process.stdout.write(JSON.stringify({ lines, errors }));
}

async function positions(dir: string): Promise<void> {
  const logs = path.join(dir, "logs");
  mkdirSync(logs);
  writeFileSync(path.join(logs, "app.log"), "a1\na2\n");
  const src = build(definition, { filegroups: "g1", "filegroups.g1": `${logs}/app\\.log`, positionFile: path.join(dir, "state", "pos.json") }, context("t1")) as TaildirSource;
  wire(src);
  await src.start();
  await src.process();
  await src.stop();
}

// The loops end with an exit: timers and the held stdin would keep the process alive.
if (mode === "deliver") await deliver(args[0], args[1], args[2] === "durable").then(() => process.exit(0));
else if (mode === "file-channel") await intoFileChannel(args[0], args[1]).then(() => process.exit(0));
else if (mode === "poll") await poll(args[0]);
else if (mode === "positions") await positions(args[0]);
else {
  process.stderr.write(`usage: bun taildir.ts deliver|file-channel|poll|positions ... (got ${JSON.stringify(mode)})\n`);
  process.exit(2);
}
