import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import type { Channel } from "../../src/core/channel.ts";
import { ChannelCounter } from "../../src/core/counters.ts";
import type { Event } from "../../src/core/event.ts";
import type { LifecycleState } from "../../src/core/lifecycle.ts";
import { BasicTransaction } from "../../src/core/transaction.ts";

const POS = Buffer.from("#POS ");
const NL = 10;

/**
 * A test channel whose commit is the delivery: the batch's lines, followed by a `#POS {...}`
 * line with the source positions, are appended to an output file in one write and fsync'ed.
 * With `durable`, sources read their position back from the last `#POS` line after a restart
 * (as from a file channel), so events and position are committed together. Takes return nothing.
 *
 * A SIGKILL during the write can leave part of it in the file (Linux stops a write between
 * pages for a fatal signal): lines without the `#POS` line that commits them. As a file
 * channel cuts a torn tail off its log, a durable one cuts everything after the last whole
 * `#POS` line when it opens the file, so that those lines count as not delivered (the source
 * reads them again from the committed position) instead of delivered twice. Every durable
 * commit ends with a `#POS` line for that.
 *
 * FLUME_TEST_TEAR_AT=<line>: the first commit holding that line (per output file) writes a third
 * of its bytes, then the process SIGKILLs itself: that torn write, made certain.
 */
export class DeliveringChannel implements Channel {
  readonly counter = new ChannelCounter("delivered");
  private readonly fd: number;
  private positions: Record<string, string> = {};
  private state: LifecycleState = "IDLE";

  constructor(
    readonly name: string,
    readonly output: string,
    readonly durable: boolean,
  ) {
    this.fd = openSync(output, "a");
    const bytes = readFileSync(output);
    const last = lastWholePosLine(bytes);
    if (last) this.positions = JSON.parse(bytes.toString("utf8", last.start + POS.length, last.end - 1));
    const committed = last?.end ?? 0;
    if (durable && committed < bytes.length) {
      process.stderr.write(`delivering channel: cutting off the last ${bytes.length - committed} bytes of ${output}, a commit torn by a crash\n`);
      ftruncateSync(this.fd, committed);
      fsyncSync(this.fd);
    }
  }

  getTransaction(): BasicTransaction {
    return new DeliveringTransaction(this);
  }

  sourcePosition(source: string): string | undefined {
    return this.durable ? this.positions[source] : undefined;
  }

  /** @internal */
  deliver(events: Event[], positions: Map<string, string> | null): void {
    const parts: Uint8Array[] = [];
    for (const e of events) parts.push(e.body, new Uint8Array([NL]));
    if (positions) for (const [k, v] of positions) this.positions[k] = v;
    if (positions || (this.durable && parts.length > 0)) parts.push(Buffer.from(`#POS ${JSON.stringify(this.positions)}\n`));
    if (parts.length === 0) return;
    const buf = Buffer.concat(parts);
    const tearAt = process.env.FLUME_TEST_TEAR_AT;
    if (tearAt && buf.includes(`${tearAt}\n`) && !existsSync(`${this.output}.torn`)) {
      writeFileSync(`${this.output}.torn`, "");
      writeSync(this.fd, buf.subarray(0, Math.floor(buf.length / 3)));
      process.kill(process.pid, "SIGKILL");
    }
    for (let at = 0; at < buf.length; ) at += writeSync(this.fd, buf, at);
    fsyncSync(this.fd);
  }

  start(): void {
    this.state = "START";
  }
  stop(): void {
    closeSync(this.fd);
    this.state = "STOP";
  }
  getLifecycleState(): LifecycleState {
    return this.state;
  }
}

/** The last `#POS` line that starts a line and ends with its newline: [start, end) in bytes, end after the newline. */
function lastWholePosLine(bytes: Buffer): { start: number; end: number } | null {
  for (let at = bytes.lastIndexOf(POS); at >= 0; at = at > 0 ? bytes.lastIndexOf(POS, at - 1) : -1) {
    if (at > 0 && bytes[at - 1] !== NL) continue;
    const nl = bytes.indexOf(NL, at);
    if (nl >= 0) return { start: at, end: nl + 1 };
  }
  return null;
}

class DeliveringTransaction extends BasicTransaction {
  private readonly puts: Event[] = [];
  constructor(private readonly channel: DeliveringChannel) {
    super();
  }
  protected doPut(event: Event): void {
    this.puts.push(event);
  }
  protected doTake(): Event | null {
    return null;
  }
  protected doCommit(): void {
    this.channel.deliver(this.puts, this.positions);
  }
  protected doRollback(): void {
    this.puts.length = 0;
  }
}
