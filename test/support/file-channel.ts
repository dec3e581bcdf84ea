import { afterEach } from "bun:test";
import { readdirSync } from "node:fs";
import path from "node:path";
import { createEvent, type Event } from "../../src/core/event.ts";
import { MemoryLogger } from "../../src/core/logger.ts";
import { FileChannel, type FileChannelOptions } from "../../src/components/channels/file/index.ts";
import { scanSegment } from "../../src/components/channels/file/segment-scan.ts";
import { tempDir } from "./helpers.ts";

export function options(dir: string, over: Partial<FileChannelOptions> = {}): FileChannelOptions {
  return {
    checkpointDir: path.join(dir, "checkpoint"),
    dataDirs: [path.join(dir, "data")],
    useDualCheckpoints: false,
    capacity: 100000,
    transactionCapacity: 1000,
    checkpointInterval: 30000,
    maxFileSize: 2146435071,
    minimumRequiredSpace: 1024 * 1024,
    keepAlive: 0,
    checkpointOnClose: true,
    fsyncPerTransaction: true,
    fsyncInterval: 5,
    inlineWriteLimit: 2,
    ...over,
  };
}

export async function openChannel(dir: string, over: Partial<FileChannelOptions> = {}, logger = new MemoryLogger()) {
  const ch = new FileChannel("c1", options(dir, over), { logger });
  await ch.start();
  return { ch, logger };
}

/** Runs work in one transaction of ch: committed when it returns, rolled back (and rethrown) when it throws. */
async function inTransaction<T>(ch: FileChannel, work: (tx: ReturnType<FileChannel["getTransaction"]>) => T): Promise<T> {
  const tx = ch.getTransaction();
  tx.begin();
  try {
    const result = work(tx);
    await tx.commit();
    return result;
  } catch (err) {
    await tx.rollback();
    throw err;
  } finally {
    tx.close();
  }
}

/** Puts the bodies in one committed transaction. */
export async function putAll(ch: FileChannel, bodies: string[], headers: Record<string, string> = {}, position?: [string, string]): Promise<void> {
  await inTransaction(ch, (tx) => {
    for (const b of bodies) tx.put(createEvent(b, { ...headers }));
    if (position) tx.setSourcePosition(position[0], position[1]);
  });
}

/** Takes up to max events in one committed transaction. */
export function takeSome(ch: FileChannel, max: number): Promise<Event[]> {
  return inTransaction(ch, (tx) => {
    const out: Event[] = [];
    for (let i = 0; i < max; i++) {
      const e = tx.take();
      if (!e) break;
      out.push(e);
    }
    return out;
  });
}

export async function drain(ch: FileChannel, batch = 1000): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const got = await takeSome(ch, batch);
    if (got.length === 0) return out;
    for (const e of got) out.push(new TextDecoder().decode(e.body));
  }
}

export function range(from: number, n: number, prefix = "e"): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${from + i}`);
}

/** Returns temp(): a fresh temp dir (named prefix...), removed after each test of the calling file. */
export function tempDirsAfterEach(prefix = "flume-fc-"): () => string {
  const dirs: { cleanup(): void }[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) d.cleanup();
  });
  return () => {
    const t = tempDir(prefix);
    dirs.push(t);
    return t.dir;
  };
}

/** The channel's data segment files below dir/data, oldest first. */
export function segmentFiles(dir: string): string[] {
  const data = path.join(dir, "data");
  return readdirSync(data)
    .filter((f) => f.startsWith("log-"))
    .sort((a, b) => Number(a.slice(4)) - Number(b.slice(4)))
    .map((f) => path.join(data, f));
}

/** A seeded xorshift32 generator in [0, 1): a crash test's seed reproduces its run. */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
}

/** Where a data file's records end: a running channel has zeros written ahead of them. */
export function dataEnd(file: string): number {
  return scanSegment(file, () => {}).size;
}
