/**
 * `npm run bench -- taildir`: TAILDIR read rate.
 *
 * Writes a file of 100-byte lines (1 GB by default; BENCH_TAILDIR_MB to change) under /tmp,
 * tails it with the TAILDIR source driven by the core's SourceRunner into a MemoryChannel that
 * a drain loop empties in 1000-event take transactions (a null sink). Prints events/s from
 * start to the last event taken, and peak RSS. Run once with the default batchSize (100) and
 * once with 1000 (BENCH_TAILDIR_BATCH overrides both). The file is deleted afterwards.
 */
import { componentContext } from "../../src/components/component.ts";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { definition as taildir } from "../../src/components/sources/taildir.ts";
import { ChannelProcessor } from "../../src/core/channel-processor.ts";
import { systemClock } from "../../src/core/clock.ts";
import { silentLogger } from "../../src/core/logger.ts";
import { MemoryChannel } from "../../src/core/memory-channel.ts";
import { SourceRunner } from "../../src/core/runners.ts";
import { ReplicatingChannelSelector } from "../../src/core/selectors.ts";
import { fmt, peakRssMb } from "./_util.ts";

const LINE = 100;

function writeFile(file: string, mb: number): number {
  const linesPerBlock = 80_000; // 8 MB blocks
  const block = Buffer.alloc(linesPerBlock * LINE, "x");
  for (let i = 0; i < linesPerBlock; i++) {
    const tag = `line ${String(i).padStart(8, "0")} `;
    block.write(tag, i * LINE, "latin1");
    block[i * LINE + LINE - 1] = 10;
  }
  const total = Math.floor((mb * 1024 * 1024) / LINE);
  const fd = openSync(file, "w");
  let written = 0;
  while (written < total) {
    const n = Math.min(linesPerBlock, total - written);
    writeSync(fd, block, 0, n * LINE);
    written += n;
  }
  closeSync(fd);
  return total;
}

async function once(dir: string, file: string, lines: number, batchSize: number): Promise<void> {
  const ctx = componentContext("r1", { agentName: "bench", clock: systemClock, logger: silentLogger });
  const { options: config, errors } = taildir.parse({
    filegroups: "f1",
    "filegroups.f1": `${path.dirname(file)}/${path.basename(file).replace(/\./g, "\\.")}`,
    positionFile: path.join(dir, `position-${batchSize}.json`),
    batchSize: String(batchSize),
  });
  if (errors.length) throw new Error(JSON.stringify(errors));
  const source = taildir.create(config, ctx);
  const channel = new MemoryChannel("c1", { capacity: 20_000, transactionCapacity: Math.max(1000, batchSize) });
  channel.start();
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  const runner = new SourceRunner(source, systemClock, silentLogger);
  const t0 = performance.now();
  await runner.start();
  let taken = 0;
  while (taken < lines) {
    const tx = channel.getTransaction();
    tx.begin();
    let n = 0;
    for (; n < 1000; n++) if (tx.take() === null) break;
    await tx.commit();
    tx.close();
    taken += n;
    if (n === 0) await new Promise((r) => setImmediate(r));
  }
  const secs = (performance.now() - t0) / 1000;
  await runner.stop();
  console.log(`TAILDIR batchSize ${batchSize}: ${fmt(taken)} lines of ${LINE} bytes in ${secs.toFixed(2)} s = ${fmt(taken / secs)} events/s (${((taken * LINE) / secs / 1e6).toFixed(0)} MB/s); peak RSS so far ${peakRssMb().toFixed(0)} MB`);
}

export async function run(): Promise<void> {
  const mb = Number(process.env.BENCH_TAILDIR_MB ?? 1024);
  const dir = mkdtempSync(path.join(tmpdir(), "flume-bench-taildir-"));
  const file = path.join(dir, "big.log");
  try {
    const t0 = performance.now();
    const lines = writeFile(file, mb);
    console.log(`wrote ${fmt(lines)} lines (${mb} MB) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const batches = process.env.BENCH_TAILDIR_BATCH ? [Number(process.env.BENCH_TAILDIR_BATCH)] : [100, 1000];
    for (const b of batches) await once(dir, file, lines, b);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await run();
