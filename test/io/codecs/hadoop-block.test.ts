import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { decompressBlock } from "lz4js";
import { uncompress } from "snappyjs";
import { hadoopBlocks, lz4Block, snappyBlock } from "../../../src/io/codecs/hadoop-block.ts";

/** Reads Hadoop's BlockCompressorStream framing back: (int raw length, int compressed length, bytes)*. */
function unframe(data: Uint8Array, raw: (chunk: Uint8Array, size: number) => Uint8Array): { sizes: number[]; bytes: Uint8Array } {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const sizes: number[] = [];
  const out: number[] = [];
  for (let at = 0; at < data.length; ) {
    const size = view.getInt32(at);
    const clen = view.getInt32(at + 4);
    const chunk = raw(data.subarray(at + 8, at + 8 + clen), size);
    expect(chunk.length).toBe(size);
    sizes.push(size);
    out.push(...chunk);
    at += 8 + clen;
  }
  return { sizes, bytes: Uint8Array.from(out) };
}

const unsnappy = (c: Uint8Array) => uncompress(c);
const unlz4 = (c: Uint8Array, size: number) => {
  const out = new Uint8Array(size);
  return out.subarray(0, decompressBlock(c, out, 0, c.length, 0));
};

describe("Hadoop's block framing for SnappyCodec and Lz4Codec", () => {
  test("150 kB of text: blocks of 64 KiB, each an uncompressed length then one compressed chunk, reading back to the input", () => {
    const input = new TextEncoder().encode(Array.from({ length: 15_000 }, (_, i) => `line ${i}\n`).join(""));
    for (const [compress, decompress] of [
      [snappyBlock, unsnappy],
      [lz4Block, unlz4],
    ] as const) {
      const framed = hadoopBlocks(input, compress);
      expect(framed.length).toBeLessThan(input.length / 2);
      const { sizes, bytes } = unframe(framed, decompress);
      expect(sizes).toEqual([65536, 65536, input.length - 131072]);
      expect(bytes).toEqual(input);
    }
  });

  test("any bytes round-trip through both raw codecs, incompressible ones too (LZ4 as one literal run)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 2000 }), fc.boolean(), (input, repeat) => {
        const data = repeat ? Uint8Array.from([...input, ...input, ...input]) : input;
        expect(unframe(hadoopBlocks(data, snappyBlock), unsnappy).bytes).toEqual(data);
        expect(unframe(hadoopBlocks(data, lz4Block), unlz4).bytes).toEqual(data);
      }),
      { numRuns: 200 },
    );
  });
});
