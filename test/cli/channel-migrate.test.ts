import { describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, runCli, tempDir } from "../support/helpers.ts";
import { EXPECTED_COUNTS, FIXTURE_NAMES, type FixtureName, copyFixture, expectedEvents, fingerprint, holdPosixLock, takeAllFromFlumeTs } from "../support/flume-file-channel.ts";
import { needsPosixLockHolder } from "../support/requires.ts";

const cleanups = cleanupsAfterEach();

function setup(name: FixtureName) {
  const t = tempDir("flume-migrate-cli-");
  cleanups.push(t.cleanup);
  const f = copyFixture(name, t.dir);
  return { ...f, dir: t.dir, toCheckpoint: path.join(t.dir, "ts", "checkpoint"), toData: path.join(t.dir, "ts", "data") };
}

const migrateArgs = (s: ReturnType<typeof setup>) => ["channel", "migrate", "--from-flume", "--checkpointDir", s.checkpointDir, "--dataDirs", s.dataDir, "--to-checkpointDir", s.toCheckpoint, "--to-dataDirs", s.toData];
const inspectArgs = (s: ReturnType<typeof setup>) => ["channel", "inspect", "--from-flume", "--checkpointDir", s.checkpointDir, "--dataDirs", s.dataDir];

describe("flume channel migrate --from-flume", () => {
  for (const name of FIXTURE_NAMES) {
    test(`${name}: prints the counts, the Flume TS channel then yields expected.jsonl, Flume's files are unchanged`, async () => {
      const s = setup(name);
      const before = fingerprint(s.root);
      const r = runCli(migrateArgs(s));
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const n = EXPECTED_COUNTS[name];
      const logs = name === "pending-clean" ? 4 : 6;
      expect(r.stdout).toContain(`events found: ${n}\n`);
      expect(r.stdout).toContain(`events migrated: ${n} (`);
      expect(r.stdout).toContain(`files read: ${4 + 2 * logs} (${logs} data files); Flume's files were not changed`);
      expect(r.stdout).toContain(`checkpoint: ${s.checkpointDir} (write order id `);
      expect(fingerprint(s.root)).toEqual(before);
      expect(await takeAllFromFlumeTs(s.toCheckpoint, [s.toData])).toEqual(expectedEvents(name));
    });
  }

  test("a damaged record: exit 1 naming the data file and the record's offset; nothing written", () => {
    const s = setup("partly-drained");
    const log6 = path.join(s.dataDir, "log-6");
    const bytes = readFileSync(log6);
    bytes[2000] ^= 0x01;
    writeFileSync(log6, bytes);
    const r = runCli(migrateArgs(s));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^flume channel migrate: damaged record in ${log6} at offset \\d+: `));
    expect(r.stdout).toBe("");
    const v = runCli([...inspectArgs(s), "--verify"]);
    expect(v.code).toBe(1);
    expect(v.stdout).toMatch(new RegExp(`status: DAMAGED: damaged record in ${log6} at offset \\d+`));
  });

  needsPosixLockHolder.test("while Flume's in_use.lock is held (fcntl): exit 1 naming the lock and the process; inspect says the agent is running", async () => {
    const s = setup("pending-clean");
    const lock = path.join(s.dataDir, "in_use.lock");
    const holder = await holdPosixLock(lock);
    cleanups.push(() => holder.kill("SIGKILL"));
    const r = runCli(migrateArgs(s));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`flume channel migrate: ${lock} is locked by process ${holder.pid}: an Apache Flume agent is still using this channel`);
    const i = runCli(inspectArgs(s));
    expect(i.code).toBe(0);
    expect(i.stdout).toContain(`lock: ${lock} is held by process ${holder.pid}: the agent is running`);
  });

  test("usage errors exit 2 with a message", () => {
    const s = setup("pending-clean");
    const noKind = runCli(migrateArgs(s).filter((a) => a !== "--from-flume"));
    expect(noKind.code).toBe(2);
    expect(noKind.stderr).toContain("flume channel migrate: name the source kind: --from-flume");
    const noTarget = runCli(migrateArgs(s).slice(0, -2));
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toContain("missing --to-dataDirs DIR[,DIR...]");
    const noSource = runCli(["channel", "migrate", "--from-flume", "--dataDirs", s.dataDir, "--to-checkpointDir", s.toCheckpoint, "--to-dataDirs", s.toData]);
    expect(noSource.code).toBe(2);
    expect(noSource.stderr).toContain("--from-flume needs the Flume channel's --checkpointDir DIR");
    const missing = runCli(["channel", "migrate", "--from-flume", "--checkpointDir", path.join(s.dir, "nope"), "--dataDirs", s.dataDir, "--to-checkpointDir", s.toCheckpoint, "--to-dataDirs", s.toData]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`no such directory: ${path.join(s.dir, "nope")}`);
    const typo = runCli([...migrateArgs(s), "--bacthSize", "10"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unknown option "--bacthSize"');
  });
});

describe("flume channel inspect --from-flume", () => {
  test("pending-clean: checkpoint used, per-file figures, 2000 events to migrate, first and last", () => {
    const s = setup("pending-clean");
    const r = runCli(inspectArgs(s));
    expect(r.code).toBe(0);
    const out = r.stdout;
    expect(out).toContain(`checkpoint: ${s.checkpointDir} (write order id 1796113582859, 2000 events queued)`);
    expect(out).toMatch(/^file\s+data bytes\s+records\s+puts\s+takes\s+commits\s+rollbacks\s+pending events$/m);
    expect(out).toMatch(/^log-4\s+109209\s+532\s+443\s+0\s+89\s+0\s+443$/m);
    expect(out).toContain("replay: 2400 records read, 2400 covered by the checkpoint");
    expect(out).toContain("events to migrate: 2000 (");
    expect(out).toMatch(/^first event: headers .* body "A-g1 #00001 /m);
    expect(out).toMatch(/^last event: headers \{"kind":"audit"\} body "A-g4 #02000 /m);
    expect(out).toContain("status: OK");
  });

  test("partly-drained: 700 events, all in log-5 and log-6; a full replay (empty checkpoint dir) says so and agrees", () => {
    const s = setup("partly-drained");
    const r = runCli(inspectArgs(s));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("events to migrate: 700 (");
    for (const id of [1, 2, 3, 4]) expect(r.stdout).toMatch(new RegExp(`^log-${id}\\s.*\\s0$`, "m"));
    expect(r.stdout).toMatch(/^log-5\s.*\s489$/m);
    expect(r.stdout).toMatch(/^log-6\s.*\s211$/m);
    const empty = path.join(s.dir, "empty");
    mkdirSync(empty);
    const full = runCli(["channel", "inspect", "--from-flume", "--checkpointDir", empty, "--dataDirs", s.dataDir]);
    expect(full.code).toBe(0);
    expect(full.stdout).toContain(`checkpoint not used: there is no checkpoint in ${empty}`);
    expect(full.stdout).toContain("checkpoint: none usable; the whole log is replayed");
    expect(full.stdout).toContain("replay: 4155 records read, 0 covered by the checkpoint, 455 commits");
    expect(full.stdout).toContain("events to migrate: 700 (");
  });

  test("plain inspect on Flume's directories points at --from-flume instead of reporting damage", () => {
    const s = setup("pending-clean");
    const r = runCli(["channel", "inspect", s.dataDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`flume channel inspect: ${s.dataDir} holds an Apache Flume file channel (log-1, log-1.meta); inspect it with --from-flume`);
  });
});
