import { describe, expect, test } from "bun:test";
import type { FlumeCheckpoint } from "../../../src/migrate/flume-file-channel/checkpoint.ts";
import { RecordType, pointerKey } from "../../../src/migrate/flume-file-channel/format.ts";
import type { LogRecord } from "../../../src/migrate/flume-file-channel/log-reader.ts";
import { type RecordSource, replay } from "../../../src/migrate/flume-file-channel/replay.ts";

// Flume's replay semantics on records built in memory: what ends up in the channel and in what order.
const put = (tx: number, wo: number, offset: number): LogRecord => ({ offset, type: RecordType.PUT, transactionID: tx, writeOrderID: wo });
const take = (tx: number, wo: number, fileID: number, offset: number): LogRecord => ({ offset: 9000 + wo, type: RecordType.TAKE, transactionID: tx, writeOrderID: wo, take: { fileID, offset } });
const commit = (tx: number, wo: number, type: number): LogRecord => ({ offset: 9000 + wo, type: RecordType.COMMIT, transactionID: tx, writeOrderID: wo, commitType: type });
const rollback = (tx: number, wo: number): LogRecord => ({ offset: 9000 + wo, type: RecordType.ROLLBACK, transactionID: tx, writeOrderID: wo });

function file(fileID: number, records: LogRecord[]): RecordSource {
  let i = 0;
  return { fileID, next: () => records[i++] ?? null };
}

const P = pointerKey;
function checkpoint(writeOrderID: number, queue: number[], inflightTakes: [number, number[]][] = [], inflightPuts: [number, number[]][] = []): FlumeCheckpoint {
  return { dir: "c", writeOrderID, capacity: 100, queueHead: 0, queue, activeLogs: [], inflightPuts: new Map(inflightPuts), inflightTakes: new Map(inflightTakes), files: [] };
}

describe("Flume's log replay", () => {
  test("records of several data files are merged by write order id: channel order is commit order across dataDirs", () => {
    const a = file(1, [put(1, 1, 0), commit(1, 2, RecordType.PUT), put(3, 5, 100), commit(3, 6, RecordType.PUT)]);
    const b = file(2, [put(2, 3, 0), commit(2, 4, RecordType.PUT)]);
    expect(replay([a, b], null).pending).toEqual([P(1, 0), P(2, 0), P(1, 100)]);
  });

  test("a rolled back or never committed transaction leaves nothing; a committed take removes its event", () => {
    const f = file(1, [
      put(1, 1, 0), put(1, 2, 10), commit(1, 3, RecordType.PUT),
      put(2, 4, 20), rollback(2, 5),
      take(3, 6, 1, 0), commit(3, 7, RecordType.TAKE),
      put(4, 8, 30),
    ]);
    const r = replay([f], null);
    expect(r.pending).toEqual([P(1, 10)]);
    expect(r.stats).toMatchObject({ commits: 2, rollbacks: 1, openTransactions: 1, uncommittedPuts: 1 });
  });

  test("records the checkpoint covers are skipped; later ones apply to its queue", () => {
    const f = file(1, [put(1, 1, 0), commit(1, 2, RecordType.PUT), put(2, 3, 10), commit(2, 4, RecordType.PUT), take(3, 11, 1, 0), commit(3, 12, RecordType.TAKE), put(4, 13, 20), commit(4, 14, RecordType.PUT)]);
    const r = replay([f], checkpoint(10, [P(1, 0), P(1, 10)]));
    expect(r.pending).toEqual([P(1, 10), P(1, 20)]);
    expect(r.stats.coveredByCheckpoint).toBe(4);
  });

  test("puts in flight at the checkpoint join their transaction, in log order, when it commits", () => {
    const f = file(1, [put(5, 11, 300), commit(5, 12, RecordType.PUT)]);
    const r = replay([f], checkpoint(10, [P(1, 0)], [], [[5, [P(1, 200), P(1, 100)]]]));
    expect(r.pending).toEqual([P(1, 0), P(1, 100), P(1, 200), P(1, 300)]);
  });

  test("events taken but not committed at the checkpoint go back to the head; a later commit of that take removes them", () => {
    const ck = () => checkpoint(10, [P(1, 20), P(1, 30)], [[9, [P(1, 10), P(1, 0)]]]);
    expect(replay([file(1, [])], ck()).pending).toEqual([P(1, 0), P(1, 10), P(1, 20), P(1, 30)]);
    expect(replay([file(1, [commit(9, 11, RecordType.TAKE)])], ck()).pending).toEqual([P(1, 20), P(1, 30)]);
  });

  test("after a rollback such events are back at the head at once: taken and committed again later, they stay gone", () => {
    const ck = checkpoint(10, [P(1, 20)], [[9, [P(1, 0)]]]);
    const f = file(1, [rollback(9, 11), take(10, 12, 1, 0), commit(10, 13, RecordType.TAKE), put(11, 14, 40), commit(11, 15, RecordType.PUT)]);
    const r = replay([f], ck);
    expect(r.pending).toEqual([P(1, 20), P(1, 40)]);
    expect(r.stats.restoredTakes).toBe(1);
  });
});
