/**
 * Flume 1.11's log replay (ReplayHandler.replayLog), computing which committed events are still
 * in the channel and in which order. Starting from the checkpoint's queue (or an empty one),
 * the records of all data files are merged in Flume's order (write order id, then transaction
 * id, then Take < Put < Rollback < Commit) and those written after the checkpoint are applied:
 * a transaction's Puts and Takes are collected until its Commit (a Put commit appends its
 * events to the queue, a Take commit removes them) or dropped at its Rollback. Puts and takes
 * in flight at checkpoint time (inflightputs / inflighttakes) join their transaction.
 *
 * Where Flume's order is arbitrary (it keeps inflight events in hash sets) events are ordered
 * by where they are in the log. Two deliberate differences, both about events Flume would hand
 * out twice: taken-but-uncommitted events of a transaction that rolled back after the
 * checkpoint go back to the head at the rollback (Flume: only at the end of replay), and such an
 * event that a later transaction took and committed is not restored.
 */
import { type PointerKey, REPLAY_RANK, RecordType, pointerKey } from "./format.ts";
import type { LogRecord } from "./log-reader.ts";
import type { FlumeCheckpoint } from "./checkpoint.ts";

export interface ReplayStats {
  /** Records read from the data files. */
  records: number;
  /** Records the checkpoint already covers (write order id not above its id). */
  coveredByCheckpoint: number;
  /** Transactions committed after the checkpoint. */
  commits: number;
  rollbacks: number;
  /** Transactions with records but neither commit nor rollback at the end of the log (their puts are not in the channel). */
  openTransactions: number;
  /** Puts of those open transactions. */
  uncommittedPuts: number;
  /** Committed takes whose event was not in the channel (its put is in a deleted file or was replayed before the checkpoint). */
  unmatchedTakes: number;
  /** Taken-but-uncommitted events put back at the head of the queue. */
  restoredTakes: number;
  /** A pointer committed twice (never written by a healthy Flume): kept once. */
  duplicatePointers: number;
}

/** The channel's queue during replay: appends, removal by pointer, and pushes at the head. */
class ReplayQueue {
  /** Pushed at the head, the newest last. */
  private readonly front: PointerKey[] = [];
  private readonly back: PointerKey[] = [];
  /** Where each live pointer is: >= 0 an index in back, < 0 the index -1 - p in front. */
  private readonly where = new Map<PointerKey, number>();
  duplicates = 0;

  constructor(initial: readonly PointerKey[]) {
    for (const key of initial) this.addTail(key);
  }

  get size(): number {
    return this.where.size;
  }

  addTail(key: PointerKey): void {
    if (this.where.has(key)) {
      this.duplicates++;
      return;
    }
    this.where.set(key, this.back.length);
    this.back.push(key);
  }

  /** Puts keys (in their order) in front of the current head. */
  addHead(keys: readonly PointerKey[]): void {
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i];
      if (this.where.has(key)) {
        this.duplicates++;
        continue;
      }
      this.front.push(key);
      this.where.set(key, -this.front.length);
    }
  }

  remove(key: PointerKey): boolean {
    const p = this.where.get(key);
    if (p === undefined) return false;
    if (p >= 0) this.back[p] = -1;
    else this.front[-1 - p] = -1;
    this.where.delete(key);
    return true;
  }

  toArray(): PointerKey[] {
    const out: PointerKey[] = [];
    for (let i = this.front.length - 1; i >= 0; i--) if (this.front[i] >= 0) out.push(this.front[i]);
    for (const k of this.back) if (k >= 0) out.push(k);
    return out;
  }
}

/** The records of one data file in file order (a LogFileScanner). */
export interface RecordSource {
  readonly fileID: number;
  next(): LogRecord | null;
}

interface HeapItem {
  record: LogRecord;
  scanner: RecordSource;
}

function before(a: LogRecord, b: LogRecord): boolean {
  if (a.writeOrderID !== b.writeOrderID) return a.writeOrderID < b.writeOrderID;
  if (a.transactionID !== b.transactionID) return a.transactionID < b.transactionID;
  return REPLAY_RANK[a.type] < REPLAY_RANK[b.type];
}

/** Flume's PriorityQueue of the next record of each data file. */
class RecordHeap {
  private readonly items: HeapItem[] = [];

  get size(): number {
    return this.items.length;
  }

  push(item: HeapItem): void {
    const a = this.items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(a[i].record, a[parent].record)) break;
      [a[i], a[parent]] = [a[parent], a[i]];
      i = parent;
    }
  }

  pop(): HeapItem | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l].record, a[m].record)) m = l;
        if (r < a.length && before(a[r].record, a[m].record)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m], a[i]];
        i = m;
      }
    }
    return top;
  }
}

const byPosition = (a: PointerKey, b: PointerKey) => a - b;

/**
 * Replays the data files over the checkpoint (null: from an empty channel, Flume's full
 * replay). Returns the pending events' pointers in channel order. Throws DamagedRecordError
 * from the scanners.
 */
export function replay(scanners: readonly RecordSource[], checkpoint: FlumeCheckpoint | null): { pending: PointerKey[]; stats: ReplayStats } {
  const stats: ReplayStats = {
    records: 0,
    coveredByCheckpoint: 0,
    commits: 0,
    rollbacks: 0,
    openTransactions: 0,
    uncommittedPuts: 0,
    unmatchedTakes: 0,
    restoredTakes: 0,
    duplicatePointers: 0,
  };
  const lastCheckpoint = checkpoint?.writeOrderID ?? 0;
  const queue = new ReplayQueue(checkpoint?.queue ?? []);
  /** Per open transaction: its puts (or takes) so far, in log order. */
  const open = new Map<number, { puts: PointerKey[]; takes: PointerKey[] }>();
  const inflightTakes = new Map<number, PointerKey[]>();
  for (const [tx, puts] of checkpoint?.inflightPuts ?? []) open.set(tx, { puts: [...puts].sort(byPosition), takes: [] });
  for (const [tx, takes] of checkpoint?.inflightTakes ?? []) inflightTakes.set(tx, [...takes].sort(byPosition));
  /** Events a committed take named that were not in the queue (yet). */
  const pendingTakes = new Set<PointerKey>();

  const heap = new RecordHeap();
  for (const scanner of scanners) {
    const record = scanner.next();
    if (record) heap.push({ record, scanner });
  }
  for (let item = heap.pop(); item; item = heap.pop()) {
    const { record, scanner } = item;
    const next = scanner.next();
    if (next) heap.push({ record: next, scanner });
    stats.records++;
    if (record.writeOrderID <= lastCheckpoint) {
      stats.coveredByCheckpoint++;
      continue;
    }
    const tx = record.transactionID;
    switch (record.type) {
      case RecordType.PUT:
      case RecordType.TAKE: {
        let t = open.get(tx);
        if (!t) open.set(tx, (t = { puts: [], takes: [] }));
        if (record.type === RecordType.PUT) t.puts.push(pointerKey(scanner.fileID, record.offset));
        else if (record.take) t.takes.push(pointerKey(record.take.fileID, record.take.offset));
        break;
      }
      case RecordType.ROLLBACK: {
        stats.rollbacks++;
        open.delete(tx);
        const taken = inflightTakes.get(tx);
        if (taken) {
          inflightTakes.delete(tx);
          queue.addHead(taken);
          stats.restoredTakes += taken.length;
        }
        break;
      }
      case RecordType.COMMIT: {
        stats.commits++;
        const t = open.get(tx);
        open.delete(tx);
        if (record.commitType === RecordType.PUT) {
          for (const key of t?.puts ?? []) {
            queue.addTail(key);
            if (pendingTakes.delete(key)) queue.remove(key);
          }
        } else {
          const taken = [...(t?.takes ?? []), ...(inflightTakes.get(tx) ?? [])];
          inflightTakes.delete(tx);
          for (const key of taken) if (!queue.remove(key)) pendingTakes.add(key);
        }
        break;
      }
    }
  }

  // Taken at checkpoint time and neither committed nor rolled back since: back to the head,
  // unless a later transaction took and committed the event again.
  const restore: PointerKey[] = [];
  for (const taken of inflightTakes.values()) for (const key of taken) if (!pendingTakes.delete(key)) restore.push(key);
  restore.sort(byPosition);
  queue.addHead(restore);
  stats.restoredTakes += restore.length;

  for (const t of open.values()) {
    stats.openTransactions++;
    stats.uncommittedPuts += t.puts.length;
  }
  stats.unmatchedTakes = pendingTakes.size;
  stats.duplicatePointers = queue.duplicates;
  return { pending: queue.toArray(), stats };
}
