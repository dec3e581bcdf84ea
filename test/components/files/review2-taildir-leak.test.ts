import { expect, test } from "bun:test";
import { readdirSync, readlinkSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { TailFile } from "../../../src/components/sources/taildir/tail-file.ts";
import { cleanupsAfterEach, tempDir } from "../../support/helpers.ts";

const cleanups = cleanupsAfterEach();

/** Descriptors of this process open on `file` (Linux /proc). */
function openDescriptors(file: string): number {
  let n = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++;
    } catch {
      // Closed since the listing.
    }
  }
  return n;
}

test("TAILDIR: a position write that fingerprints a file while the file is let go leaves no descriptor open on it", async () => {
  const t = tempDir("flume-review2-taildir-leak-");
  cleanups.push(t.cleanup);
  const file = path.join(t.dir, "app.log");
  writeFileSync(file, "a1\na2\n");
  const { ino } = statSync(file);
  const tf = new TailFile({ path: file, inode: ino, group: "g1", headers: {}, pos: 6, maxLineLength: 1024, onOverlong: () => {} }, 0);
  // The timed write reads the head and tail of the file (not in memory after a restart) ...
  const fingerprint = tf.fingerprint();
  // ... while the poll lets the file go (rotated away and drained, or deleted).
  await tf.close();
  await fingerprint;
  expect(tf.isOpen).toBe(false);
  expect(openDescriptors(file)).toBe(0);
});

test("TAILDIR: two reads that open a closed file at once share one descriptor", async () => {
  const t = tempDir("flume-review2-taildir-leak2-");
  cleanups.push(t.cleanup);
  const file = path.join(t.dir, "app.log");
  writeFileSync(file, "a1\na2\n");
  const { ino } = statSync(file);
  const tf = new TailFile({ path: file, inode: ino, group: "g1", headers: {}, pos: 6, maxLineLength: 1024, onOverlong: () => {} }, 0);
  await Promise.all([tf.readAt(0, 2), tf.readAt(3, 2)]);
  await tf.close();
  expect(openDescriptors(file)).toBe(0);
});

test("TAILDIR: a file that was let go is not opened again by a later position write", async () => {
  const t = tempDir("flume-review2-taildir-leak3-");
  cleanups.push(t.cleanup);
  const file = path.join(t.dir, "app.log");
  writeFileSync(file, "a1\na2\n");
  const { ino } = statSync(file);
  const tf = new TailFile({ path: file, inode: ino, group: "g1", headers: {}, pos: 6, maxLineLength: 1024, onOverlong: () => {} }, 0);
  await tf.readAt(0, 2);
  // Let go between the two reads of a fingerprint (head, then tail).
  await tf.release();
  expect(await tf.fingerprint()).toBeNull();
  expect(openDescriptors(file)).toBe(0);
});
