import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createRequire } from "node:module";
import { bzip2Compress } from "../../../src/io/codecs/bzip2.ts";

// seek-bzip, a bzip2 decoder that checks every block's and the stream's CRC.
const Bunzip = createRequire(import.meta.url)("seek-bzip") as { decode(input: Buffer, output?: number, multistream?: boolean): Buffer };
const bunzip = (b: Uint8Array) => new Uint8Array(Bunzip.decode(Buffer.from(b)));

const lines = (n: number) => new TextEncoder().encode(Array.from({ length: n }, (_, i) => `event ${i} from host-${i % 7}\n`).join(""));

describe("bzip2 compressor", () => {
  test("a stream starts BZh9 and decodes (CRCs checked) to the input: empty, one byte, long runs, text, more than one 900 kB block", () => {
    const cases = [new Uint8Array(0), Uint8Array.of(65), new Uint8Array(5000).fill(97), lines(2000), lines(90_000)];
    expect(cases[4].length).toBeGreaterThan(2_000_000);
    for (const input of cases) {
      const out = bzip2Compress(input);
      expect(new TextDecoder().decode(out.subarray(0, 4))).toBe("BZh9");
      expect(bunzip(out)).toEqual(input);
    }
  });

  test("text compresses: 2000 log lines to under a fifth", () => {
    const input = lines(2000);
    expect(bzip2Compress(input).length).toBeLessThan(input.length / 5);
  });

  test("any bytes round-trip, random or repetitive", () => {
    const repetitive = fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 600 })), { maxLength: 40 }).map((runs) => Uint8Array.from(runs.flatMap(([b, n]) => Array(n).fill(b))));
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 3000 }), repetitive), (input) => {
        expect(bunzip(bzip2Compress(input))).toEqual(input);
      }),
      { numRuns: 150 },
    );
  });
});
