import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { FileChannel, fileChannelOptions } from "../../../src/components/channels/file/index.ts";
import { createEvent } from "../../../src/core/event.ts";
import { DamagedRecordError, FlumeChannelInUseError, MigrationTargetError } from "../../../src/migrate/flume-file-channel/errors.ts";
import { MAX_BATCH_SIZE, migrateFlumeChannel, targetChannelOptions } from "../../../src/migrate/flume-file-channel/migrate.ts";
import { asyncCleanupsAfterEach, tempDir } from "../../support/helpers.ts";
import { options } from "../../support/file-channel.ts";
import { EXPECTED_COUNTS, FIXTURE_NAMES, type FixtureName, copyFixture, expectedEvents, fingerprint, holdPosixLock, takeAllFromFlumeTs } from "../../support/flume-file-channel.ts";
import { needsPosixLockHolder } from "../../support/requires.ts";

const cleanups = asyncCleanupsAfterEach();

function setup(name: FixtureName) {
  const t = tempDir("flume-migrate-");
  cleanups.push(t.cleanup);
  const f = copyFixture(name, t.dir);
  const target = { checkpointDir: path.join(t.dir, "ts", "checkpoint"), dataDirs: [path.join(t.dir, "ts", "data")] };
  return { ...f, dir: t.dir, source: { checkpointDir: f.checkpointDir, dataDirs: [f.dataDir] }, target };
}

describe("migrating a Flume 1.11 file channel into a Flume TS file channel", () => {
  for (const name of FIXTURE_NAMES) {
    test(`${name}: every committed, untaken event arrives in order (taken back out through transactions); Flume's files are unchanged`, async () => {
      const s = setup(name);
      const before = fingerprint(s.root);
      const report = await migrateFlumeChannel({ source: s.source, target: s.target, batchSize: 300 });
      expect(fingerprint(s.root)).toEqual(before);
      expect(report.snapshot.pending.length).toBe(EXPECTED_COUNTS[name]);
      expect(report.migrated).toBe(EXPECTED_COUNTS[name]);
      expect(report.transactions).toBe(Math.ceil(EXPECTED_COUNTS[name] / 300));
      const expected = expectedEvents(name);
      expect(report.bodyBytes).toBe(expected.reduce((n, e) => n + Buffer.byteLength(e.body), 0));
      expect(await takeAllFromFlumeTs(s.target.checkpointDir, s.target.dataDirs)).toEqual(expected);
    });
  }

  test("the new channel has the file channel's defaults, as flume run opens one configured with just its directories; batches are bounded by its transactionCapacity", async () => {
    const s = setup("pending-clean");
    const ts = path.join(s.dir, "ts");
    expect(targetChannelOptions(s.target)).toEqual(fileChannelOptions(ts));
    expect(MAX_BATCH_SIZE).toBe(fileChannelOptions(ts).transactionCapacity);
    const report = await migrateFlumeChannel({ source: s.source, target: s.target });
    expect(report.raisedCapacity).toBeNull(); // 2000 events fit the default capacity
  });

  test("into an existing but empty Flume TS channel: allowed", async () => {
    const s = setup("partly-drained");
    const ch = new FileChannel("t", options(path.dirname(s.target.checkpointDir), { checkpointDir: s.target.checkpointDir, dataDirs: s.target.dataDirs }));
    await ch.start();
    await ch.stop();
    await migrateFlumeChannel({ source: s.source, target: s.target });
    expect((await takeAllFromFlumeTs(s.target.checkpointDir, s.target.dataDirs)).length).toBe(700);
  });

  test("into a Flume TS channel that holds events: refused, and it keeps just its own event", async () => {
    const s = setup("partly-drained");
    const ch = new FileChannel("t", options(path.dirname(s.target.checkpointDir), { checkpointDir: s.target.checkpointDir, dataDirs: s.target.dataDirs }));
    await ch.start();
    const tx = ch.getTransaction();
    tx.begin();
    tx.put(createEvent("already here"));
    await tx.commit();
    tx.close();
    await ch.stop();
    const err = await migrateFlumeChannel({ source: s.source, target: s.target }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationTargetError);
    expect((err as Error).message).toContain("already holds 1 events; a migration writes only into an empty channel");
    expect(await takeAllFromFlumeTs(s.target.checkpointDir, s.target.dataDirs)).toEqual([{ headers: {}, body: "already here" }]);
  });

  test("into a directory holding other files, or overlapping Flume's directories: refused before anything is written", async () => {
    const s = setup("pending-clean");
    mkdirSync(s.target.dataDirs[0], { recursive: true });
    writeFileSync(path.join(s.target.dataDirs[0], "notes.txt"), "mine");
    await expect(migrateFlumeChannel({ source: s.source, target: s.target })).rejects.toThrow(/is not empty and not a Flume TS file channel directory \(it has notes\.txt\)/);
    expect(existsSync(s.target.checkpointDir)).toBe(false);
    const inside = { checkpointDir: path.join(s.dataDir, "ts-checkpoint"), dataDirs: [path.join(s.dir, "ts2")] };
    await expect(migrateFlumeChannel({ source: s.source, target: inside })).rejects.toThrow(/overlaps the Flume directory/);
    expect(existsSync(inside.checkpointDir)).toBe(false);
    await expect(migrateFlumeChannel({ source: s.source, target: { checkpointDir: path.join(s.dir, "x"), dataDirs: [s.checkpointDir] } })).rejects.toThrow(MigrationTargetError);
    writeFileSync(path.join(s.dir, "a-file"), "");
    await expect(migrateFlumeChannel({ source: s.source, target: { checkpointDir: path.join(s.dir, "a-file"), dataDirs: [path.join(s.dir, "d")] } })).rejects.toThrow(/is a file, not a directory/);
  });

  test("a damaged record stops the migration before anything is written, naming file and offset", async () => {
    const s = setup("pending-clean");
    const log3 = path.join(s.dataDir, "log-3");
    const bytes = Buffer.from(await Bun.file(log3).arrayBuffer());
    bytes[5000] ^= 0xff;
    writeFileSync(log3, bytes);
    const err = await migrateFlumeChannel({ source: s.source, target: s.target }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DamagedRecordError);
    expect((err as DamagedRecordError).file).toBe(log3);
    expect((err as DamagedRecordError).offset).toBeLessThanOrEqual(5000);
    expect((err as Error).message).toMatch(new RegExp(`^damaged record in ${log3} at offset \\d+: `));
    expect(existsSync(s.target.checkpointDir)).toBe(false);
    expect(existsSync(s.target.dataDirs[0])).toBe(false);
  });

  test("where the system cannot tell whether Flume holds its lock: refused unless assumeStopped", async () => {
    const s = setup("partly-drained");
    writeFileSync(path.join(s.dataDir, "in_use.lock"), "");
    const noProc = path.join(s.dir, "no-proc-locks");
    await expect(migrateFlumeChannel({ source: s.source, target: s.target, procLocks: noProc })).rejects.toThrow(/cannot be read, so whether a Flume agent holds .*--assume-stopped/);
    const r = await migrateFlumeChannel({ source: s.source, target: s.target, procLocks: noProc, assumeStopped: true });
    expect(r.migrated).toBe(700);
  });

  needsPosixLockHolder.test("while a process holds Flume's in_use.lock (fcntl, as Java's tryLock): refused naming the lock and the pid; a left-over lock file is no obstacle", async () => {
    const s = setup("partly-drained");
    const lock = path.join(s.checkpointDir, "in_use.lock");
    const holder = await holdPosixLock(lock);
    cleanups.push(() => holder.kill("SIGKILL"));
    const err = await migrateFlumeChannel({ source: s.source, target: s.target }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FlumeChannelInUseError);
    expect((err as FlumeChannelInUseError).pid).toBe(holder.pid ?? -1);
    expect((err as Error).message).toContain(`${lock} is locked by process ${holder.pid}`);
    expect(existsSync(s.target.checkpointDir)).toBe(false);
    holder.kill("SIGKILL");
    await new Promise((r) => holder.once("exit", r));
    const report = await migrateFlumeChannel({ source: s.source, target: s.target });
    expect(report.staleLocks).toEqual([lock]);
    expect(report.migrated).toBe(700);
  });

});
