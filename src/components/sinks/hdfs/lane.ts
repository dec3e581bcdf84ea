/**
 * One lane of the hdfs sink: its open buckets and its file operations, one at a time (a batch,
 * then the closes its timers asked for). A sink has one lane unless hdfs.concurrentBatches says
 * more; lanes write the same buckets into different files (their counters are shared, so names
 * never collide).
 */
import type { Clock } from "../../../core/clock.ts";
import type { SinkCounter } from "../../../core/counters.ts";
import type { Event } from "../../../core/event.ts";
import type { Logger } from "../../../core/logger.ts";
import type { TakeLoop } from "../../../pipeline/take-loop.ts";
import { BucketWriter } from "./bucket-writer.ts";
import type { SinkShared } from "./index.ts";

export class WriterLane {
  takeLoop: TakeLoop | null = null;
  /** Open buckets by directory + "/" + prefix, least recently used first. */
  private readonly buckets = new Map<string, BucketWriter>();
  private queue: Promise<void> = Promise.resolve();
  private readonly keys: string[] = [];

  constructor(
    readonly index: number,
    private readonly shared: () => SinkShared,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly counter: SinkCounter,
  ) {}

  /** Runs fn after every file operation of this lane queued before it. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  openPaths(): string[] {
    const out: string[] = [];
    for (const b of this.buckets.values()) if (b.currentPath) out.push(b.currentPath);
    return out;
  }

  async closeAll(): Promise<void> {
    await this.serial(async () => {
      for (const b of this.buckets.values()) {
        try {
          await b.close();
        } catch (err) {
          this.logger.error(`hdfs sink ${this.shared().name}: closing ${b.currentPath} failed: ${(err as Error).message}`);
        }
      }
      this.buckets.clear();
    });
  }

  private async bucket(dir: string, prefix: string, suffix: string, key: string): Promise<BucketWriter> {
    const s = this.shared();
    let b = this.buckets.get(key);
    if (b) {
      // Most recently used last, for eviction.
      this.buckets.delete(key);
      this.buckets.set(key, b);
      return b;
    }
    try {
      await s.recover(dir);
    } catch (err) {
      this.logger.warn(`hdfs sink ${s.name}: could not look for in-use files left in ${dir}: ${(err as Error).message}`);
    }
    let counter = s.counters.get(key);
    if (!counter) {
      counter = { value: this.clock.now() };
      s.counters.set(key, counter);
      // Keys of long-gone hours would pile up: forget the oldest beyond a bound.
      if (s.counters.size > 100_000) s.counters.delete(s.counters.keys().next().value as string);
    }
    b = new BucketWriter(
      dir,
      prefix,
      counter,
      s.fs,
      s.bucketOptions(suffix),
      this.clock,
      this.logger,
      this.counter,
      (what, fn) => {
        void this.serial(fn).catch((err) => this.logger.error(`hdfs sink ${s.name}: ${what} failed: ${(err as Error).message}`));
      },
      (idle) => {
        if (this.buckets.get(key) === idle) this.buckets.delete(key);
      },
    );
    this.buckets.set(key, b);
    while (this.buckets.size > s.options.maxOpenFiles) {
      const [eldestKey, eldest] = this.buckets.entries().next().value as [string, BucketWriter];
      this.buckets.delete(eldestKey);
      await eldest.close();
    }
    return b;
  }

  /** Escapes each event's bucket, then writes each bucket's events, in the batch's order per bucket. */
  async deliver(events: readonly Event[]): Promise<void> {
    const { escaper: esc, templates } = this.shared();
    const { path: p, prefix: f, suffix: s } = templates;
    if (p.isLiteral && f.isLiteral && s.isLiteral) {
      const b = await this.bucket(stripSlash(p.template), f.template, s.template, `${p.template}/${f.template}`);
      await b.write(events, 0, events.length);
      return;
    }
    const keys = this.keys;
    keys.length = events.length;
    const where = new Map<string, [string, string, string]>();
    const timed = p.needsTime ? p : f.needsTime ? f : s.needsTime ? s : null;
    for (let i = 0; i < events.length; i++) {
      const h = events[i].headers;
      const time = timed ? esc.timeOf(h, timed) : undefined;
      const dir = stripSlash(esc.directory(p, h, time));
      const prefix = esc.name(f, h, time);
      const key = `${dir}/${prefix}`;
      keys[i] = key;
      if (!where.has(key)) where.set(key, [dir, prefix, esc.name(s, h, time)]);
    }
    for (const [key, [dir, prefix, suffix]] of where) {
      const b = await this.bucket(dir, prefix, suffix, key);
      if (where.size === 1) {
        await b.write(events, 0, events.length);
        continue;
      }
      const mine: Event[] = [];
      for (let i = 0; i < events.length; i++) if (keys[i] === key) mine.push(events[i]);
      await b.write(mine, 0, mine.length);
    }
  }
}

export function stripSlash(p: string): string {
  return p.length > 1 && p.endsWith("/") ? p.replace(/\/+$/, "") : p;
}
