import { describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { definition, type TaildirSource } from "../../../src/components/sources/taildir.ts";
import { formatChannelState, goneJson, mergeState, parseChannelState, parseJournal, recordJson, type FileRecord } from "../../../src/components/sources/taildir/state.ts";
import { formatFingerprint, hashBytes, parseFingerprint } from "../../../src/components/sources/taildir/fingerprint.ts";
import { bodies, build, context, drain, numbered, wire } from "../../support/components.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";

const cleanups = cleanupsAfterEach();

const rec = (inode: number, pos: number, seq: number, extra: Partial<FileRecord> = {}): FileRecord => ({ inode, pos, file: `/logs/f${inode}`, fp: null, seq, ...extra });

describe("TAILDIR state records", () => {
  test("the state file: a snapshot, then changes replayed in order; a torn last line is skipped, a file let go is dropped", () => {
    const text = [
      `{"v":2,"seq":10,"files":[${recordJson(rec(1, 100, 9))},${recordJson(rec(2, 50, 10))}]}`,
      recordJson(rec(1, 200, 11)),
      goneJson(2, 12),
      recordJson(rec(3, 0, 13)),
      recordJson(rec(1, 150, 8)), // older than what the snapshot has: ignored
      '{"seq":14,"inode":1,"pos":3', // cut short by a power loss
    ].join("\n");
    const j = parseJournal(text);
    expect(j?.snapshotSeq).toBe(10);
    expect(j?.seq).toBe(13);
    expect(j?.skipped).toBe(1);
    expect([...(j?.records.values() ?? [])].map((r) => [r.inode, r.pos])).toEqual([
      [1, 200],
      [3, 0],
    ]);
    expect(parseJournal("not json\n")).toBeNull();
  });

  test("merging with a durable channel's value: the newer record of each file wins; the channel's files let go or unknown to an older snapshot are handled by sequence", () => {
    const journal = parseJournal([`{"v":2,"seq":20,"files":[${recordJson(rec(1, 100, 15))},${recordJson(rec(2, 70, 20))}]}`, recordJson(rec(2, 0, 22))].join("\n"));
    const channel = parseChannelState(
      formatChannelState(21, 20, [recordJson(rec(1, 300, 21)), recordJson(rec(2, 90, 19)), recordJson(rec(4, 40, 21)), recordJson(rec(5, 10, 18))], [goneJson(6, 21)]),
    );
    const merged = mergeState(journal, channel);
    const byInode = Object.fromEntries(merged.records.map((r) => [r.inode, r.pos]));
    // 1: the channel's commit is newer; 2: rewound after its last commit (journal newer);
    // 4: new since the snapshot; 5: older than the snapshot, which no longer lists it (let go).
    expect(byInode).toEqual({ 1: 300, 2: 0, 4: 40 });
    expect(merged.seq).toBe(22);
  });

  test("a channel value from before (Flume's position array) gives positions; fingerprints come from the state file", () => {
    const fp = { headLen: 4, head: "abc", tailEnd: 90, tailLen: 10, tail: "def" };
    const journal = parseJournal(`{"v":2,"seq":3,"files":[${recordJson(rec(1, 80, 3, { fp }))}]}`);
    const merged = mergeState(journal, parseChannelState('[{"inode":1,"pos":120,"file":"/logs/f1"}]'));
    expect(merged.records).toEqual([{ inode: 1, pos: 120, file: "/logs/f1", fp, seq: 3 }]);
  });

  test("fingerprints round-trip as text and hashes tell contents apart", () => {
    const fp = { headLen: 256, head: hashBytes(new TextEncoder().encode("a")), tailEnd: 5000, tailLen: 99, tail: hashBytes(new TextEncoder().encode("b")) };
    expect(parseFingerprint(formatFingerprint(fp))).toEqual(fp);
    expect(parseFingerprint("1:2:3")).toBeNull();
    expect(hashBytes(new TextEncoder().encode("line-1\n"))).not.toBe(hashBytes(new TextEncoder().encode("line-2\n")));
  });
});

describe("TAILDIR state on disk", () => {
  function setup() {
    const t = tempDir("flume-taildir-state-");
    cleanups.push(t.cleanup);
    const logs = path.join(t.dir, "logs");
    mkdirSync(logs);
    const raw = { filegroups: "g1", "filegroups.g1": `${logs}/app\\.log`, positionFile: path.join(t.dir, "pos", "taildir_position.json"), batchSize: "10" };
    return { logs, raw, file: path.join(logs, "app.log") };
  }

  test("a Flume position file alone (moving from Flume) is where reading resumes", async () => {
    const s = setup();
    writeFileSync(s.file, numbered("x", 0, 20));
    const pos = Buffer.byteLength(numbered("x", 0, 12));
    mkdirSync(path.dirname(s.raw.positionFile), { recursive: true });
    writeFileSync(s.raw.positionFile, JSON.stringify([{ inode: statSync(s.file).ino, pos, file: s.file }]));
    const src = build(definition, s.raw, context("r1")) as TaildirSource;
    const channel = wire(src);
    await src.start();
    await src.process();
    expect(bodies(await drain(channel))).toEqual(numbered("x", 12, 20).trim().split("\n"));
    await src.stop();
    // Both files now: Flume's (positions only, its format) and ours (with fingerprints).
    expect(JSON.parse(readFileSync(s.raw.positionFile, "utf8"))).toEqual([{ inode: statSync(s.file).ino, pos: statSync(s.file).size, file: s.file }]);
    const state = parseJournal(readFileSync(`${s.raw.positionFile}.state`, "utf8"));
    expect([...(state?.records.values() ?? [])].map((r) => ({ pos: r.pos, fp: r.fp !== null }))).toEqual([{ pos: statSync(s.file).size, fp: true }]);
  });

  test("each commit is in the state file before the next batch is read, without a durable channel (no snapshot needed)", async () => {
    const s = setup();
    writeFileSync(s.file, numbered("y", 0, 5));
    const src = build(definition, { ...s.raw, writePosInterval: "3600000" }, context("r1")) as TaildirSource;
    const channel = wire(src);
    await src.start();
    appendFileSync(s.file, numbered("y", 5, 25));
    await src.process();
    expect(bodies(await drain(channel))).toHaveLength(25);
    // What a SIGKILL now would leave: the state file as it is (the snapshot is from the start).
    const state = parseJournal(readFileSync(`${s.raw.positionFile}.state`, "utf8"));
    expect([...(state?.records.values() ?? [])].map((r) => r.pos)).toEqual([statSync(s.file).size]);
    expect(JSON.parse(readFileSync(s.raw.positionFile, "utf8"))[0].pos).toBe(0);
    await src.stop();
  });
});
