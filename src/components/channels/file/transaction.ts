import type { Event } from "../../../core/event.ts";
import { BasicTransaction } from "../../../core/transaction.ts";
import type { FileChannel } from "./file-channel.ts";

/** The events a transaction took: sequence number and location of each, in typed arrays of the transaction's capacity. */
export class Taken {
  readonly seqs: Float64Array;
  readonly segs: Uint32Array;
  readonly offs: Uint32Array;
  length = 0;

  constructor(capacity: number) {
    this.seqs = new Float64Array(capacity);
    this.segs = new Uint32Array(capacity);
    this.offs = new Uint32Array(capacity);
  }
}

export const NOTHING_TAKEN = new Taken(0);

/** A file channel transaction: its puts as events, its takes as locations (the channel does the work). */
export class FileTransaction extends BasicTransaction {
  puts: Event[] = [];
  /** Made with the first take (a put-only transaction allocates none). */
  taken: Taken = NOTHING_TAKEN;

  constructor(private readonly ch: FileChannel) {
    super();
  }

  protected override doPut(event: Event): void {
    this.ch.put(this, event);
  }

  protected override doPutAll(events: readonly Event[]): void {
    this.ch.putAll(this, events);
  }

  protected override doTake(): Event | null {
    return this.ch.take(this);
  }

  protected override doTakeInto(out: Event[], max: number): number {
    return this.ch.takeInto(this, out, max);
  }

  protected override doCommit(): Promise<void> {
    return this.ch.commit(this, this.positions);
  }

  protected override doRollback(): void {
    this.ch.rollback(this);
  }

  clear(): void {
    this.puts = [];
    if (this.taken !== NOTHING_TAKEN) this.ch.recycle(this.taken);
    this.taken = NOTHING_TAKEN;
    this.positions = null;
  }
}
