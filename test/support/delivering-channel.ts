import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import type { Channel } from "../../src/core/channel.ts";
import { ChannelCounter } from "../../src/core/counters.ts";
import type { Event } from "../../src/core/event.ts";
import type { LifecycleState } from "../../src/core/lifecycle.ts";
import { BasicTransaction } from "../../src/core/transaction.ts";

/**
 * A test channel whose commit is the delivery: the batch's lines, followed by a `#POS {...}`
 * line with the source positions, are appended to an output file in one write and fsync'ed.
 * With `durable`, sources read their position back from the last `#POS` line after a restart
 * (as from a file channel), so events and position are committed together. Takes return nothing.
 */
export class DeliveringChannel implements Channel {
  readonly counter = new ChannelCounter("delivered");
  private readonly fd: number;
  private positions: Record<string, string> = {};
  private state: LifecycleState = "IDLE";

  constructor(
    readonly name: string,
    output: string,
    readonly durable: boolean,
  ) {
    this.fd = openSync(output, "a");
    const text = readFileSync(output, "utf8");
    const last = text.lastIndexOf("#POS ");
    if (last >= 0) this.positions = JSON.parse(text.slice(last + 5, text.indexOf("\n", last)));
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
    for (const e of events) parts.push(e.body, new Uint8Array([10]));
    if (positions) {
      for (const [k, v] of positions) this.positions[k] = v;
      parts.push(Buffer.from(`#POS ${JSON.stringify(this.positions)}\n`));
    }
    if (parts.length === 0) return;
    writeSync(this.fd, Buffer.concat(parts));
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
