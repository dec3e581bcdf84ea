/**
 * A spooling directory source in a child process, for the tests that kill it, trace it or run
 * it as another user. Usage: bun spooldir.ts <mode> ...
 *
 * - `deliver '<json: spooldir properties>' <output file> <durable: 0|1>`: spooldir -> a
 *   DeliveringChannel whose commit appends the lines to the output file with fsync (durable: it
 *   keeps the source's position too, as a file channel would). Prints READY, then STOPPED after
 *   a SIGTERM; exits when the test's end of our stdin closes.
 * - `poll <dir>`: spools `<dir>/spool` into a memory channel until `<dir>/spool/last.log` is
 *   completed (or 30 s pass), prints {"lines": [...], "errors": [...]} as JSON (run as an
 *   unprivileged user so that file permissions apply).
 * - `complete <dir> [durable]`: reads `<dir>/spool/in.log` (written here) to completion, with its
 *   tracker directory `<dir>/tracker`, into a memory channel or, with `durable`, a durable
 *   channel (a DeliveringChannel writing `<dir>/out.txt`); run under strace to see how the meta
 *   file and the rename to .COMPLETED reach the disk.
 * - `complete-then-idle <dir>`: as `complete` with a memory channel, then polls the empty spool
 *   every 20 ms for another second; run under strace to see what an idle source looks at.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { definition, type SpoolDirectorySource } from "../../../src/components/sources/spooldir.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { bodies, build, context, drain, wire } from "../components.ts";
import { DeliveringChannel } from "../delivering-channel.ts";

const [mode, ...args] = process.argv.slice(2);

async function until(file: string, ms = 30_000): Promise<void> {
  const started = Date.now();
  while (!existsSync(file) && Date.now() - started < ms) await new Promise((r) => setTimeout(r, 20));
}

/** Feeds the source into a DeliveringChannel appending to `output`. */
function deliverTo(src: { setChannelProcessor(p: ChannelProcessor): void }, output: string, durable: boolean): DeliveringChannel {
  const channel = new DeliveringChannel("c1", output, durable);
  channel.start();
  src.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  return channel;
}

async function deliver(json: string, output: string, durable: boolean): Promise<void> {
  const src = build(definition, JSON.parse(json) as Record<string, string>, context("r1"));
  const channel = deliverTo(src, output, durable);
  process.stdin.on("close", () => process.exit(1));
  process.stdin.resume();
  process.on("SIGTERM", () => {
    void src.stop().then(() => {
      channel.stop();
      console.log("STOPPED");
      process.exit(0);
    });
  });
  await src.start();
  console.log("READY");
}

async function poll(dir: string): Promise<void> {
  const spool = path.join(dir, "spool");
  const ctx = context("r1");
  const src = build(definition, { spoolDir: spool, pollDelay: "20", trackerDir: path.join(dir, "tracker") }, ctx) as SpoolDirectorySource;
  const channel = wire(src);
  await src.start();
  await until(path.join(spool, "last.log.COMPLETED"));
  await src.stop();
  const lines = bodies(await drain(channel));
  const errors = ctx.logger.lines.filter((l) => l.level === "error").map((l) => l.message);
  process.stdout.write(JSON.stringify({ lines, errors }));
}

async function complete(dir: string, durable: boolean, idleMs = 0): Promise<void> {
  const spool = path.join(dir, "spool");
  mkdirSync(spool);
  writeFileSync(path.join(spool, "in.log"), "s1\ns2\n");
  const src = build(definition, { spoolDir: spool, pollDelay: "20", trackerDir: path.join(dir, "tracker") }, context("s1")) as SpoolDirectorySource;
  if (durable) deliverTo(src, path.join(dir, "out.txt"), true);
  else wire(src);
  await src.start();
  await until(path.join(spool, "in.log.COMPLETED"));
  if (idleMs > 0) await new Promise((r) => setTimeout(r, idleMs));
  await src.stop();
}

if (mode === "deliver") await deliver(args[0], args[1], args[2] === "1");
else if (mode === "poll") await poll(args[0]);
else if (mode === "complete") await complete(args[0], args[1] === "durable");
else if (mode === "complete-then-idle") await complete(args[0], false, 1000);
else {
  process.stderr.write(`usage: bun spooldir.ts deliver|poll|complete|complete-then-idle ... (got ${JSON.stringify(mode)})\n`);
  process.exit(2);
}
