/**
 * After a power loss the end of the newest data file can hold a partly written
 * record followed by non-zero garbage (blocks the filesystem exposes past the last fsync). That
 * is a torn tail, not damage, as long as no valid record follows it; damage with valid records
 * after it, or garbage in an older data file, still stops the channel naming file and offset.
 */
import { describe, expect, test } from "bun:test";
import { appendFileSync, closeSync, openSync, readFileSync, readSync, statSync, truncateSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import { ChannelException } from "../../../../src/core/errors.ts";
import { FileChannel } from "../../../../src/components/channels/file/index.ts";
import { runCli } from "../../../support/helpers.ts";
import { dataEnd, drain, openChannel, options, putAll, range, segmentFiles, tempDirsAfterEach } from "../../../support/file-channel.ts";

const temp = tempDirsAfterEach("flume-fc-torn-");

/** Seeded so a failure can be reproduced; every byte is 1..255 (never the zeros of a sparse tail). */
function garbage(seed: number, n: number): Buffer {
  let s = seed >>> 0 || 1;
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    b[i] = 1 + ((s >>> 0) % 255);
  }
  return b;
}

function flipByte(file: string, at: number): void {
  const fd = openSync(file, "r+");
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, at);
  b[0] ^= 0x40;
  writeSync(fd, b, 0, 1, at);
  closeSync(fd);
}

async function startFails(dir: string, over = {}): Promise<Error> {
  const ch = new FileChannel("c1", options(dir, over));
  const err = await ch.start().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ChannelException);
  return err as Error;
}

describe("after a power loss, a torn tail with non-zero garbage at the end of the newest data file is cut off", () => {
  for (const seed of [1, 7, 4242]) {
    test(`a record cut mid-way plus random non-zero bytes in the last data file is cut off; every committed event is there (seed ${seed})`, async () => {
      const dir = temp();
      const a = await openChannel(dir, { checkpointOnClose: false });
      await putAll(a.ch, range(0, 100));
      await putAll(a.ch, range(100, 100));
      const [seg] = segmentFiles(dir);
      const committedEnd = dataEnd(seg);
      await putAll(a.ch, range(200, 100)); // the write the power loss interrupts
      await a.ch.stop();
      const fullSize = statSync(seg).size;
      truncateSync(seg, committedEnd + Math.floor((fullSize - committedEnd) / 3)); // mid-record
      appendFileSync(seg, garbage(seed, 8192 + seed));
      const damagedSize = statSync(seg).size;

      // inspect agrees before the channel repairs anything: reported, but not damage.
      const inspect = runCli(["channel", "inspect", path.join(dir, "data"), "--verify"]);
      expect(inspect.code).toBe(0);
      expect(inspect.stdout).toContain(`torn tail at offset ${committedEnd}`);
      expect(inspect.stdout).toContain("pending events: 200");
      expect(inspect.stdout).toContain("status: OK");

      const b = await openChannel(dir);
      const warn = b.logger.lines.find((l) => l.level === "warn" && l.message.includes("cutting off"));
      expect(warn?.message).toContain(seg);
      expect(warn?.message).toContain(`from offset ${committedEnd}`);
      expect(warn?.message).toContain(`${damagedSize - committedEnd} bytes`);
      expect(statSync(seg).size).toBe(committedEnd);
      expect(await drain(b.ch)).toEqual(range(0, 200));
      await putAll(b.ch, ["after"]);
      await b.ch.stop();
      const c = await openChannel(dir);
      expect(await drain(c.ch)).toEqual(["after"]);
      await c.ch.stop();
    });
  }

  test("a record cut mid-way in the zeros a running channel writes ahead is cut off; every committed event is there", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    await putAll(a.ch, range(0, 100));
    const [seg] = segmentFiles(dir);
    const committedEnd = dataEnd(seg);
    await putAll(a.ch, range(100, 100)); // the write the crash interrupts
    await a.ch.stop();
    const fullSize = statSync(seg).size;
    truncateSync(seg, committedEnd + Math.floor((fullSize - committedEnd) / 2));
    appendFileSync(seg, Buffer.alloc(1024 * 1024));

    const b = await openChannel(dir);
    expect(b.logger.lines.some((l) => l.level === "warn" && l.message.includes(seg) && l.message.includes(`from offset ${committedEnd}`))).toBe(true);
    expect(await drain(b.ch)).toEqual(range(0, 100));
    await b.ch.stop();
  });

  test("stale blocks holding old valid records of this channel (lower transaction ids) are garbage too", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    await putAll(a.ch, range(0, 50));
    const [seg] = segmentFiles(dir);
    const oldTx = readFileSync(seg).subarray(16, dataEnd(seg)); // transaction 1, a valid record run with txid 1
    await putAll(a.ch, range(50, 50));
    const committedEnd = dataEnd(seg);
    await putAll(a.ch, range(100, 50));
    await a.ch.stop();
    truncateSync(seg, committedEnd + 40);
    appendFileSync(seg, Buffer.concat([garbage(3, 333), oldTx, garbage(5, 1000)]));

    const b = await openChannel(dir);
    expect(b.logger.lines.some((l) => l.level === "warn" && l.message.includes(seg) && l.message.includes(`from offset ${committedEnd}`))).toBe(true);
    expect(await drain(b.ch)).toEqual(range(0, 100)); // transaction 1 is not applied twice
    await b.ch.stop();
  });

  test("garbage after a checkpoint: the replay from the checkpoint cuts it and keeps every committed event", async () => {
    const dir = temp();
    const a = await openChannel(dir); // checkpoint on close
    await putAll(a.ch, range(0, 100));
    await a.ch.stop();
    const b = await openChannel(dir, { checkpointOnClose: false });
    await putAll(b.ch, range(100, 100));
    const [seg] = segmentFiles(dir);
    const committedEnd = dataEnd(seg);
    await putAll(b.ch, range(200, 100));
    await b.ch.stop();
    truncateSync(seg, committedEnd + 7);
    appendFileSync(seg, garbage(11, 4096));

    const c = await openChannel(dir);
    expect(c.logger.lines.some((l) => l.level === "warn" && l.message.includes(seg) && l.message.includes(`from offset ${committedEnd}`))).toBe(true);
    expect(await drain(c.ch)).toEqual(range(0, 200));
    await c.ch.stop();
  });

  test("the last of several data files: only its tail is cut", async () => {
    const dir = temp();
    const over = { maxFileSize: 2048, checkpointOnClose: false };
    const a = await openChannel(dir, over);
    for (let i = 0; i < 20; i++) await putAll(a.ch, range(i * 20, 20));
    const files = segmentFiles(dir);
    expect(files.length).toBeGreaterThan(2);
    const last = files[files.length - 1];
    const committedEnd = dataEnd(last);
    await a.ch.stop();
    appendFileSync(last, garbage(9, 2000));

    const b = await openChannel(dir, over);
    expect(b.logger.lines.some((l) => l.level === "warn" && l.message.includes(last) && l.message.includes(`from offset ${committedEnd}`))).toBe(true);
    expect(await drain(b.ch)).toEqual(range(0, 400));
    await b.ch.stop();
  });
});

describe("damage followed by valid records in the newest data file still stops the channel", () => {
  test("a flipped byte in a record with valid records after it in the last data file still stops, naming file and offset", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    await putAll(a.ch, range(0, 100));
    const [seg] = segmentFiles(dir);
    const secondTx = dataEnd(seg);
    await putAll(a.ch, range(100, 100));
    await putAll(a.ch, range(200, 100));
    await a.ch.stop();
    flipByte(seg, secondTx + 200); // inside the second transaction's PUT record

    const err = await startFails(dir);
    expect(err.message).toContain(seg);
    expect(err.message).toContain(`at offset ${secondTx}:`);

    const inspect = runCli(["channel", "inspect", path.join(dir, "data"), "--verify"]);
    expect(inspect.code).toBe(1);
    expect(inspect.stdout).toContain(`DAMAGED at offset ${secondTx}`);
    expect(inspect.stdout).toContain("status: DAMAGED");
  });

  test("a damaged length field followed by valid records, then torn garbage, still stops at the damage", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    await putAll(a.ch, range(0, 100));
    const [seg] = segmentFiles(dir);
    const secondTx = dataEnd(seg);
    await putAll(a.ch, range(100, 100));
    await putAll(a.ch, range(200, 100));
    await a.ch.stop();
    flipByte(seg, secondTx + 1); // the length field of the second transaction's PUT record
    appendFileSync(seg, garbage(13, 3000));

    const err = await startFails(dir);
    expect(err.message).toContain(seg);
    expect(err.message).toContain(`at offset ${secondTx}:`);
    const inspect = runCli(["channel", "inspect", path.join(dir, "data"), "--verify"]);
    expect(inspect.code).toBe(1);
  });

  test("a valid record far behind the damage (past the scanner's 8 MiB read chunks) is still found: stops", async () => {
    const dir = temp();
    const a = await openChannel(dir, { checkpointOnClose: false });
    await putAll(a.ch, range(0, 10));
    const [seg] = segmentFiles(dir);
    const firstEnd = dataEnd(seg);
    await putAll(a.ch, range(10, 10));
    await a.ch.stop();
    const bytes = readFileSync(seg);
    writeFileSync(seg, Buffer.concat([bytes.subarray(0, firstEnd), garbage(23, 9 * 1024 * 1024 + 5), bytes.subarray(firstEnd)]));

    const err = await startFails(dir);
    expect(err.message).toContain(seg);
    expect(err.message).toContain(`at offset ${firstEnd}:`);
    expect(err.message).toContain(`a valid record follows at offset ${firstEnd + 9 * 1024 * 1024 + 5}`);
  });
});

describe("garbage in a data file that is not the newest stops the channel", () => {
  test("garbage at the tail of a data file that is not the last one stops, naming file and offset", async () => {
    const dir = temp();
    const over = { maxFileSize: 2048, checkpointOnClose: false };
    const a = await openChannel(dir, over);
    for (let i = 0; i < 20; i++) await putAll(a.ch, range(i * 20, 20));
    await a.ch.stop();
    const files = segmentFiles(dir);
    expect(files.length).toBeGreaterThan(2);
    const first = files[0];
    const end = statSync(first).size;
    appendFileSync(first, garbage(17, 2000));

    const err = await startFails(dir, over);
    expect(err.message).toContain(first);
    expect(err.message).toContain(`at offset ${end}:`);
    const inspect = runCli(["channel", "inspect", path.join(dir, "data"), "--verify"]);
    expect(inspect.code).toBe(1);
    expect(inspect.stdout).toContain(`DAMAGED at offset ${end}`);
  });

  test("a record cut mid-way plus garbage in a data file that is not the last one stops", async () => {
    const dir = temp();
    const over = { maxFileSize: 2048, checkpointOnClose: false };
    const a = await openChannel(dir, over);
    for (let i = 0; i < 20; i++) await putAll(a.ch, range(i * 20, 20));
    await a.ch.stop();
    const files = segmentFiles(dir);
    const second = files[1];
    const size = statSync(second).size;
    truncateSync(second, size - 50);
    appendFileSync(second, garbage(19, 500));

    const err = await startFails(dir, over);
    expect(err.message).toContain(second);
    expect(err.message).toMatch(/at offset \d+:/);
  });
});
