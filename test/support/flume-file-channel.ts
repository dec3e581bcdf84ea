/**
 * For the tests of Apache Flume file channels (reading, migrating, refusing them): copies of the golden Apache Flume 1.11
 * channel directories in test/fixtures/flume-file-channel (tests never touch the originals),
 * their expected.jsonl, and a fingerprint of a directory tree to prove nothing changed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, cpSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { FileChannel } from "../../src/components/channels/file/index.ts";
import { options } from "./file-channel.ts";
import { FIXTURES } from "./helpers.ts";
import { PYTHON } from "./requires.ts";

export const FLUME_FIXTURES = path.join(FIXTURES, "flume-file-channel");
export const FIXTURE_NAMES = ["pending-clean", "partly-drained"] as const;
export type FixtureName = (typeof FIXTURE_NAMES)[number];

/** Expected event counts from the fixtures' README. */
export const EXPECTED_COUNTS: Record<FixtureName, number> = { "pending-clean": 2000, "partly-drained": 700 };

export interface FixtureCopy {
  root: string;
  checkpointDir: string;
  dataDir: string;
}

function makeWritable(p: string): void {
  const st = statSync(p);
  chmodSync(p, st.mode | 0o200);
  if (st.isDirectory()) for (const n of readdirSync(p)) makeWritable(path.join(p, n));
}

/** Copies a fixture's checkpoint/ and data/ below dir/<name> (writable, so tests can damage the copy). */
export function copyFixture(name: FixtureName, dir: string): FixtureCopy {
  const root = path.join(dir, name);
  cpSync(path.join(FLUME_FIXTURES, name), root, { recursive: true });
  makeWritable(root);
  return { root, checkpointDir: path.join(root, "checkpoint"), dataDir: path.join(root, "data") };
}

export interface ExpectedEvent {
  headers: Record<string, string>;
  body: string;
}

export function expectedEvents(name: FixtureName): ExpectedEvent[] {
  return readFileSync(path.join(FLUME_FIXTURES, name, "expected.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as ExpectedEvent);
}

/** An event as expected.jsonl writes it, after checking its body is exactly that UTF-8. */
export function asExpected(e: { headers: Record<string, string>; body: Uint8Array }): ExpectedEvent {
  const body = Buffer.from(e.body).toString("utf8");
  if (!Buffer.from(body, "utf8").equals(Buffer.from(e.body))) throw new Error(`body is not valid UTF-8: ${Buffer.from(e.body).toString("hex")}`);
  return { headers: { ...e.headers }, body };
}

/** Every file below dir with its SHA-256 and mtime: equal before and after means untouched. */
export function fingerprint(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const n of readdirSync(d).sort()) {
      const p = path.join(d, n);
      const st = statSync(p);
      if (st.isDirectory()) {
        out[`${path.relative(dir, p)}/`] = `dir mtime ${st.mtimeMs}`;
        walk(p);
      } else out[path.relative(dir, p)] = `${createHash("sha256").update(readFileSync(p)).digest("hex")} mtime ${st.mtimeMs} size ${st.size}`;
    }
  };
  walk(dir);
  return out;
}

/** Opens the Flume TS file channel in these directories and takes every event out through its transactions (batches of 1000). */
export async function takeAllFromFlumeTs(checkpointDir: string, dataDirs: string[]): Promise<ExpectedEvent[]> {
  const ch = new FileChannel("check", options(path.dirname(checkpointDir), { checkpointDir, dataDirs, capacity: 1_000_000 }));
  await ch.start();
  const out: ExpectedEvent[] = [];
  try {
    for (;;) {
      const tx = ch.getTransaction();
      tx.begin();
      let n = 0;
      for (; n < 1000; n++) {
        const e = tx.take();
        if (!e) break;
        out.push(asExpected(e));
      }
      await tx.commit();
      tx.close();
      if (n === 0) break;
    }
  } finally {
    await ch.stop();
  }
  return out;
}

/**
 * Holds a POSIX (fcntl) write lock on file as Java's FileChannel.tryLock does, from a python3
 * child; resolves once the lock is taken. Kill the child to release it. Tests using it declare
 * themselves with needsPosixLockHolder (requires.ts).
 */
export async function holdPosixLock(file: string): Promise<ChildProcess> {
  writeFileSync(file, "", { flag: "a" });
  const child = spawn(PYTHON, ["-c", "import fcntl,sys,time\nf=open(sys.argv[1],'r+')\nfcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\nprint('locked', flush=True)\ntime.sleep(60)", file], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => (d.toString().includes("locked") ? resolve() : undefined));
    child.once("exit", (code) => reject(new Error(`python3 exited ${code} before locking ${file}`)));
  });
  return child;
}
