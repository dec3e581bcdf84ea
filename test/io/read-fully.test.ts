// readFullySync: a range of a file read whole, or what there is of it at the end (src/io/read-fully.ts).
import { describe, expect, test } from "bun:test";
import { closeSync, openSync, writeFileSync } from "node:fs";
import path from "node:path";
import { readFullySync } from "../../src/io/read-fully.ts";
import { cleanupsAfterEach, tempDirFor } from "../support/helpers.ts";

const cleanups = cleanupsAfterEach();
const data = Buffer.from(Array.from({ length: 100 }, (_, i) => i));

function openData(): number {
  const file = path.join(tempDirFor(cleanups, "flume-read-fully-"), "data");
  writeFileSync(file, data);
  const fd = openSync(file, "r");
  cleanups.push(() => closeSync(fd));
  return fd;
}

describe("readFullySync", () => {
  test("reads the range asked for from its file offset", () => {
    const buf = Buffer.alloc(40);
    expect(readFullySync(openData(), buf, 40, 10)).toBe(40);
    expect([...buf]).toEqual([...data.subarray(10, 50)]);
  });

  test("at the end of the file it returns how many bytes there were", () => {
    const fd = openData();
    const buf = Buffer.alloc(64);
    expect(readFullySync(fd, buf, 64, 70)).toBe(30);
    expect([...buf.subarray(0, 30)]).toEqual([...data.subarray(70)]);
    expect(readFullySync(fd, buf, 10, 100)).toBe(0);
  });
});
