import { describe, expect, test } from "bun:test";
import { closeSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import { FlumeEventSource, readFlumeChannel } from "../../../src/migrate/flume-file-channel/channel-reader.ts";
import { DamagedRecordError, MissingLogFileError, UnsupportedFlumeFormatError } from "../../../src/migrate/flume-file-channel/errors.ts";
import { pointerFile, pointerOffset } from "../../../src/migrate/flume-file-channel/format.ts";
import { LogFileScanner } from "../../../src/migrate/flume-file-channel/log-reader.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { EXPECTED_COUNTS, FIXTURE_NAMES, type FixtureCopy, type FixtureName, asExpected, copyFixture, expectedEvents } from "../../support/flume-file-channel.ts";

const cleanups = cleanupsAfterEach();

function fixture(name: FixtureName): FixtureCopy {
  const t = tempDir("flume-reader-");
  cleanups.push(t.cleanup);
  return copyFixture(name, t.dir);
}

function pendingEvents(dirs: Parameters<typeof readFlumeChannel>[0]) {
  const snapshot = readFlumeChannel(dirs);
  const source = new FlumeEventSource(snapshot);
  try {
    return { snapshot, events: snapshot.pending.map((k) => asExpected(source.read(k))) };
  } finally {
    source.close();
  }
}

/** Overwrites long `index` of a checkpoint file (big-endian, as Flume's mapped LongBuffer). */
function writeLong(file: string, index: number, value: bigint): void {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(value);
  const fd = openSync(file, "r+");
  writeSync(fd, b, 0, 8, index * 8);
  closeSync(fd);
}

function flipByte(file: string, offset: number): void {
  const fd = openSync(file, "r+");
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, offset);
  b[0] ^= 0x5a;
  writeSync(fd, b, 0, 1, offset);
  closeSync(fd);
}

describe("reading a stopped Apache Flume 1.11 file channel", () => {
  for (const name of FIXTURE_NAMES) {
    test(`${name}: the checkpoint is trusted and the pending events equal expected.jsonl (headers, body, order)`, () => {
      const f = fixture(name);
      const { snapshot, events } = pendingEvents({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] });
      expect(snapshot.checkpoint.used).toBe("checkpoint");
      expect(snapshot.checkpoint.rejected).toEqual([]);
      expect(snapshot.pending.length).toBe(EXPECTED_COUNTS[name]);
      expect(events).toEqual(expectedEvents(name));
    });

    test(`${name}: a full replay of the log (empty checkpoint dir) gives the same events`, () => {
      const f = fixture(name);
      const empty = path.join(f.root, "empty-checkpoint");
      mkdirSync(empty);
      const { snapshot, events } = pendingEvents({ checkpointDir: empty, dataDirs: [f.dataDir] });
      expect(snapshot.checkpoint.used).toBe("none");
      expect(snapshot.replay.coveredByCheckpoint).toBe(0);
      expect(events).toEqual(expectedEvents(name));
    });
  }

  test("pending-clean: 2,400 records (2,000 puts, 400 commits) in log-1..4; the checkpoint queue wraps past the end of its slots", () => {
    const f = fixture("pending-clean");
    const s = readFlumeChannel({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] });
    expect(s.logFiles.map((l) => path.basename(l.path))).toEqual(["log-1", "log-2", "log-3", "log-4"]);
    const sum = (k: "records" | "puts" | "takes" | "commits" | "rollbacks") => s.logFiles.reduce((n, l) => n + l.stats[k], 0);
    expect([sum("records"), sum("puts"), sum("takes"), sum("commits"), sum("rollbacks")]).toEqual([2400, 2000, 0, 400, 0]);
    expect(s.logFiles[3].stats.dataEnd).toBe(109209); // README: log-4 holds 109,209 bytes of records
    expect(s.logFiles.reduce((n, l) => n + l.pending, 0)).toBe(2000);
    expect(s.checkpoint.queueSize).toBe(2000);
    expect(s.replay.coveredByCheckpoint).toBe(2400);
  });

  test("partly-drained: 2,200 puts, 1,500 takes, 455 commits; only log-5 and log-6 still hold pending events", () => {
    const f = fixture("partly-drained");
    const s = readFlumeChannel({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] });
    const sum = (k: "puts" | "takes" | "commits") => s.logFiles.reduce((n, l) => n + l.stats[k], 0);
    expect([sum("puts"), sum("takes"), sum("commits")]).toEqual([2200, 1500, 455]);
    expect(s.logFiles.map((l) => l.pending)).toEqual([0, 0, 0, 0, 489, 211]);
    expect(s.logFiles[3].stats.takes).toBe(1500);
  });

  describe("a checkpoint Flume would not trust is not used: the whole log is replayed instead", () => {
    const cases: [string, (f: FixtureCopy) => void, RegExp][] = [
      ["its marker says it did not complete", (f) => writeLong(path.join(f.checkpointDir, "checkpoint"), 4, 1n), /marked incomplete/],
      ["its write order id differs from checkpoint.meta's", (f) => writeLong(path.join(f.checkpointDir, "checkpoint"), 1, 12345n), /write order id 12345 but .*checkpoint\.meta has \d+/],
      ["its version is not 3", (f) => writeLong(path.join(f.checkpointDir, "checkpoint"), 0, 2n), /version 2, expected 3/],
      ["inflightputs fails its MD5", (f) => flipByte(path.join(f.checkpointDir, "inflightputs"), 20), /MD5 checksum of .*inflightputs/],
      ["checkpoint.meta is cut short", (f) => writeFileSync(path.join(f.checkpointDir, "checkpoint.meta"), readFileSync(path.join(f.checkpointDir, "checkpoint.meta")).subarray(0, 20)), /checkpoint\.meta does not decode/],
      ["checkpoint.meta is missing", (f) => rmSync(path.join(f.checkpointDir, "checkpoint.meta")), /has no checkpoint\.meta/],
      ["the checkpoint file is missing but checkpoint.meta is there", (f) => rmSync(path.join(f.checkpointDir, "checkpoint")), /checkpoint\.meta exists but .* does not/],
      ["a queue slot is empty", (f) => writeLong(path.join(f.checkpointDir, "checkpoint"), 1029 + 1496, 0n), /queue element 0 .* is empty/],
    ];
    for (const [what, damage, reason] of cases) {
      test(what, () => {
        const f = fixture("partly-drained");
        damage(f);
        const { snapshot, events } = pendingEvents({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] });
        expect(snapshot.checkpoint.used).toBe("none");
        expect(snapshot.checkpoint.rejected[0].reason).toMatch(reason);
        expect(events).toEqual(expectedEvents("partly-drained"));
      });
    }
  });

  test("a complete backup checkpoint (backupComplete) is used when the checkpoint is bad; an unfinished one is not", () => {
    const f = fixture("pending-clean");
    const backup = path.join(f.root, "backup");
    mkdirSync(backup);
    for (const n of ["checkpoint", "checkpoint.meta", "inflightputs", "inflighttakes"]) writeFileSync(path.join(backup, n), readFileSync(path.join(f.checkpointDir, n)));
    writeLong(path.join(f.checkpointDir, "checkpoint"), 4, 1n);
    const dirs = { checkpointDir: f.checkpointDir, dataDirs: [f.dataDir], backupCheckpointDir: backup };
    const unfinished = readFlumeChannel(dirs);
    expect(unfinished.checkpoint.used).toBe("none");
    expect(unfinished.checkpoint.rejected.map((r) => r.reason).join("\n")).toContain(`no backupComplete file in ${backup}`);
    writeFileSync(path.join(backup, "backupComplete"), "");
    const { snapshot, events } = pendingEvents(dirs);
    expect(snapshot.checkpoint.used).toBe("backup");
    expect(snapshot.checkpoint.dir).toBe(backup);
    expect(events).toEqual(expectedEvents("pending-clean"));
  });

  test("a damaged pending event is named by its data file and the offset of its record", () => {
    const f = fixture("pending-clean");
    const first = readFlumeChannel({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] }).pending[0];
    expect([pointerFile(first), pointerOffset(first)]).toEqual([1, 0]);
    flipByte(path.join(f.dataDir, "log-1"), 100); // inside the body of event #1
    let err: unknown;
    try {
      readFlumeChannel({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DamagedRecordError);
    const d = err as DamagedRecordError;
    expect([d.file, d.offset]).toEqual([path.join(f.dataDir, "log-1"), 0]);
    expect(d.message).toContain(`damaged record in ${path.join(f.dataDir, "log-1")} at offset 0: the event body's CRC32`);
  });

  test("damage in an already drained record is reported too (Flume would stop there), naming file and offset", () => {
    const f = fixture("partly-drained");
    const log2 = path.join(f.dataDir, "log-2");
    const scanner = new LogFileScanner(log2, 2);
    const offsets = [scanner.next(), scanner.next(), scanner.next()].map((r) => r?.offset ?? -1);
    scanner.close();
    flipByte(log2, offsets[2]); // the operation byte of the third record
    expect(() => readFlumeChannel({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] })).toThrow(
      new DamagedRecordError(log2, offsets[2], "operation byte 0x25 is none of record (0x7f), no-op (0x00) or end of data (0x80)"),
    );
  });

  test("a data file that the checkpoint needs is missing: refused, naming the file", () => {
    const f = fixture("pending-clean");
    const hidden = path.join(f.root, "elsewhere");
    mkdirSync(hidden);
    renameSync(path.join(f.dataDir, "log-2"), path.join(hidden, "log-2"));
    renameSync(path.join(f.dataDir, "log-2.meta"), path.join(hidden, "log-2.meta"));
    expect(() => readFlumeChannel({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] })).toThrow(MissingLogFileError);
    expect(() => readFlumeChannel({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] })).toThrow(/535 in log-2/);
    // With both directories, as a channel with two dataDirs:
    const { events } = pendingEvents({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir, hidden] });
    expect(events).toEqual(expectedEvents("pending-clean"));
  });

  test("a data file without its .meta is refused as an unsupported (pre-1.4) format; an empty one is skipped", () => {
    const f = fixture("partly-drained");
    writeFileSync(path.join(f.dataDir, "log-7"), "");
    expect(readFlumeChannel({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] }).pending.length).toBe(700);
    rmSync(path.join(f.dataDir, "log-1.meta"));
    expect(() => readFlumeChannel({ checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] })).toThrow(UnsupportedFlumeFormatError);
  });
});
