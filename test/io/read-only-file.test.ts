// ReadOnlyFile: TAILDIR's open files as bare descriptors (src/io/read-only-file.ts), on real files.
import { describe, expect, test } from "bun:test";
import { openSync, closeSync, readSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ReadOnlyFile } from "../../src/io/read-only-file.ts";
import { cleanupsAfterEach, tempDir } from "../support/helpers.ts";

const cleanups = cleanupsAfterEach();

function fileWith(text: string): string {
  const t = tempDir("flume-rof-");
  cleanups.push(t.cleanup);
  const file = path.join(t.dir, "app.log");
  writeFileSync(file, text);
  return file;
}

describe("ReadOnlyFile", () => {
  test("reads ranges at file offsets and stats the open file", async () => {
    const f = await ReadOnlyFile.open(fileWith("0123456789"));
    const buf = new Uint8Array(8).fill(0x2e);
    expect(await f.readInto(buf, 2, 4, 3)).toBe(4);
    expect(new TextDecoder().decode(buf)).toBe("..3456..");
    expect(await f.read(buf, 0, 8, 8)).toEqual({ bytesRead: 2 });
    expect((await f.stat()).size).toBe(10);
    await f.close();
  });

  test("a missing file is an ENOENT error naming it", async () => {
    const missing = path.join(path.dirname(fileWith("")), "nope.log");
    await expect(ReadOnlyFile.open(missing)).rejects.toMatchObject({ code: "ENOENT" });
  });

  test("close waits for a read in flight; later reads are refused, not sent to a reused descriptor", async () => {
    const file = fileWith("x".repeat(1 << 20));
    const f = await ReadOnlyFile.open(file);
    const fd = f.fd;
    const buf = new Uint8Array(1 << 20);
    const reading = f.readInto(buf, 0, buf.length, 0);
    const closing = f.close();
    expect(f.close()).toBe(closing);
    expect(f.fd).toBe(-1);
    expect(await reading).toBe(1 << 20);
    await closing;
    await expect(f.readInto(buf, 0, 1, 0)).rejects.toMatchObject({ code: "EBADF" });
    await expect(f.stat()).rejects.toMatchObject({ code: "EBADF" });
    // The number is free again: a new open may get it, and the old object cannot read through it.
    const other = openSync(fileWith("other"), "r");
    try {
      const one = new Uint8Array(5);
      readSync(other, one, 0, 5, 0);
      expect(new TextDecoder().decode(one)).toBe("other");
      if (other === fd) await expect(f.readInto(one, 0, 5, 0)).rejects.toMatchObject({ code: "EBADF" });
    } finally {
      closeSync(other);
    }
  });
});
