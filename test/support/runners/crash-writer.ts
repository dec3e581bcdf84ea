/**
 * Child process for test/e2e/file-channel-crash.test.ts: opens a file channel and runs a producer (numbered events
 * in committed batches, printing "ack <last id>" after each commit resolves) and a consumer
 * (takes a batch, appends it to an output file with fsync, then commits) until it is killed.
 *
 * usage: bun crash-writer.ts <dir> <first id> <seed>
 */
import fs from "node:fs";
import path from "node:path";
import { createEvent } from "../../../src/core/event.ts";
import { FileChannel } from "../../../src/components/channels/file/index.ts";
import { options } from "../file-channel.ts";

const [dir, firstArg, seedArg] = process.argv.slice(2);
let seed = Number(seedArg) >>> 0 || 1;
function random(): number {
  // xorshift32: reproducible from the seed the test prints
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed / 0x100000000;
}

const warn = (m: string) => process.stderr.write(`warn: ${m}\n`);
const logger = { debug() {}, info() {}, warn, error: warn };
const ch = new FileChannel("c1", options(dir, { maxFileSize: 256 * 1024, checkpointInterval: 1000, capacity: 1_000_000, transactionCapacity: 1000 }), { logger });
await ch.start();
const out = fs.openSync(path.join(dir, "delivered.txt"), "a");
process.stdout.write("ready\n");

async function produce(): Promise<void> {
  let id = Number(firstArg);
  for (;;) {
    const n = 1 + Math.floor(random() * 300);
    const tx = ch.getTransaction();
    tx.begin();
    for (let i = 0; i < n; i++) tx.put(createEvent(String(id + i), { n: String(i) }));
    await tx.commit();
    tx.close();
    id += n;
    process.stdout.write(`ack ${id - 1}\n`);
  }
}

async function consume(): Promise<void> {
  const decoder = new TextDecoder();
  for (;;) {
    const tx = ch.getTransaction();
    tx.begin();
    const lines: string[] = [];
    const max = Math.floor(random() * 400);
    for (let i = 0; i < max; i++) {
      const e = tx.take();
      if (!e) break;
      lines.push(decoder.decode(e.body));
    }
    if (lines.length > 0) {
      fs.writeSync(out, `${lines.join("\n")}\n`);
      fs.fsyncSync(out);
    }
    await tx.commit();
    tx.close();
    await new Promise((r) => setTimeout(r, lines.length === 0 ? 5 : 0));
  }
}

await Promise.all([produce(), consume()]);
