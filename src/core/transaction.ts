import type { Event } from "./event.ts";
import { TransactionStateError } from "./errors.ts";

/** Flume's transaction states: NEW -> OPEN -> COMPLETED -> CLOSED. */
export type TransactionState = "NEW" | "OPEN" | "COMPLETED" | "CLOSED";

/**
 * A channel transaction, used as in Flume:
 *
 *   tx.begin(); try { tx.put(e) / tx.take(); await tx.commit(); }
 *   catch (err) { await tx.rollback(); throw err; } finally { tx.close(); }
 *
 * put and take are synchronous (no per-event await); commit and rollback may wait for space
 * or for the disk, once per batch.
 */
export interface Transaction {
  readonly id: number;
  readonly state: TransactionState;
  begin(): void;
  put(event: Event): void;
  /** The next event, or null when the channel has none (never blocks). */
  take(): Event | null;
  /** put() of each event in order, in one call (a batch pays the checks once, not per event). */
  putAll(events: readonly Event[]): void;
  /**
   * take() until `max` events were taken or the channel has none, appending them to `out`;
   * returns how many. As take() called that many times (and once more when the channel ran dry).
   */
  takeInto(out: Event[], max: number): number;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  close(): void;
  /**
   * Records a source's opaque position (for example a file offset) to be stored with this
   * transaction's commit. Durable channels make it durable in the same commit record, so a
   * restarted source resumes exactly where its last committed batch ended.
   */
  setSourcePosition(source: string, position: string): void;
}

let nextTransactionId = 1;

/** Transaction.takeInto by single takes: take() until `max` events or null, appended to `out`; returns how many. */
export function takeEach(take: () => Event | null, out: Event[], max: number): number {
  let n = 0;
  while (n < max) {
    const e = take();
    if (e === null) break;
    out.push(e);
    n++;
  }
  return n;
}

const DONE: Promise<void> = Promise.resolve();

/**
 * The state machine shared by every channel's transactions (Flume's
 * BasicTransactionSemantics). Subclasses implement the do* hooks.
 */
export abstract class BasicTransaction implements Transaction {
  readonly id = nextTransactionId++;
  private _state: TransactionState = "NEW";
  /** True while an async commit or rollback is running; the transaction takes no other call. */
  private settling = false;
  protected positions: Map<string, string> | null = null;

  get state(): TransactionState {
    return this._state;
  }

  begin(): void {
    if (this._state !== "NEW") throw new TransactionStateError(`begin() called when transaction is ${this._state}: a transaction can begin only once`);
    this.doBegin();
    this._state = "OPEN";
  }

  put(event: Event): void {
    this.requireOpen("put");
    this.doPut(event);
  }

  take(): Event | null {
    this.requireOpen("take");
    return this.doTake();
  }

  putAll(events: readonly Event[]): void {
    this.requireOpen("put");
    this.doPutAll(events);
  }

  takeInto(out: Event[], max: number): number {
    this.requireOpen("take");
    return this.doTakeInto(out, max);
  }

  commit(): Promise<void> {
    try {
      this.requireOpen("commit");
    } catch (err) {
      return Promise.reject(err);
    }
    this.settling = true;
    let pending: Promise<void> | void;
    try {
      pending = this.doCommit();
    } catch (err) {
      this.settling = false;
      return Promise.reject(err);
    }
    // A commit done at once (a memory channel with room) costs its caller one await, not one per level.
    if (pending === undefined) {
      this.completed();
      return DONE;
    }
    return pending.then(
      () => this.completed(),
      (err: unknown) => {
        this.settling = false;
        throw err;
      },
    );
  }

  private completed(): void {
    this._state = "COMPLETED";
    this.settling = false;
  }

  async rollback(): Promise<void> {
    if (this._state !== "OPEN" || this.settling) {
      throw new TransactionStateError(`rollback() called when transaction is ${this.settling ? "COMMITTING" : this._state}: rollback only an open transaction`);
    }
    this.settling = true;
    try {
      await this.doRollback();
    } finally {
      this._state = "COMPLETED";
      this.settling = false;
    }
  }

  close(): void {
    if (this._state === "CLOSED") return;
    if (this._state === "OPEN" || this.settling) {
      throw new TransactionStateError(`close() called when transaction is OPEN: commit or rollback first`);
    }
    this._state = "CLOSED";
    this.doClose();
  }

  setSourcePosition(source: string, position: string): void {
    this.requireOpen("setSourcePosition");
    (this.positions ??= new Map()).set(source, position);
  }

  private requireOpen(op: string): void {
    if (this._state !== "OPEN") {
      throw new TransactionStateError(
        `${op}() called when transaction is ${this._state}: ${this._state === "NEW" ? "call begin() first" : "start a new transaction"}`,
      );
    }
    if (this.settling) throw new TransactionStateError(`${op}() called while the transaction is committing or rolling back`);
  }

  protected doBegin(): void {}
  protected abstract doPut(event: Event): void;
  protected abstract doTake(): Event | null;
  /** Channels with a faster way to put a batch override this. */
  protected doPutAll(events: readonly Event[]): void {
    for (let i = 0; i < events.length; i++) this.doPut(events[i]);
  }
  /** Channels with a faster way to take a batch override this. */
  protected doTakeInto(out: Event[], max: number): number {
    return takeEach(() => this.doTake(), out, max);
  }
  protected abstract doCommit(): Promise<void> | void;
  protected abstract doRollback(): Promise<void> | void;
  protected doClose(): void {}
}

/** The channel side of a ChannelTransaction: it does each step on the transaction's own state. */
export interface TransactionSteps<T> {
  put(tx: T, event: Event): void;
  take(tx: T): Event | null;
  commit(tx: T): Promise<void>;
  rollback(tx: T): Promise<void> | void;
}

/**
 * A transaction that holds its state and leaves the steps to its channel (JetStream, Kafka,
 * spillable memory), which sees every open transaction's puts and takes at once.
 */
export abstract class ChannelTransaction extends BasicTransaction {
  protected abstract readonly ch: TransactionSteps<this>;

  protected override doPut(event: Event): void {
    this.ch.put(this, event);
  }

  protected override doTake(): Event | null {
    return this.ch.take(this);
  }

  protected override doCommit(): Promise<void> {
    return this.ch.commit(this);
  }

  protected override doRollback(): Promise<void> | void {
    return this.ch.rollback(this);
  }
}
