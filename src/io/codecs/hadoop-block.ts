/**
 * Hadoop's block framing (BlockCompressorStream), which its SnappyCodec and Lz4Codec put around
 * the raw codec: for each block of input, a big-endian int of its uncompressed length, then the
 * compressed chunk as a big-endian int length and the bytes. Blocks are kept at 64 KiB, well
 * under the 256 KiB buffers Hadoop's decompressors read a chunk into
 * (io.compression.codec.{snappy,lz4}.buffersize).
 */
import { compressBlock } from "lz4js";
import { compress as snappyCompress } from "snappyjs";
import { concatBytes } from "../concat-bytes.ts";

const BLOCK = 64 * 1024;

/** data framed as Hadoop's BlockCompressorStream writes it, each block compressed by `raw`. */
export function hadoopBlocks(data: Uint8Array, raw: (block: Uint8Array) => Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  for (let at = 0; at < data.length; at += BLOCK) {
    const block = data.subarray(at, Math.min(at + BLOCK, data.length));
    const compressed = raw(block);
    const head = new Uint8Array(8);
    const view = new DataView(head.buffer);
    view.setInt32(0, block.length);
    view.setInt32(4, compressed.length);
    parts.push(head, compressed);
  }
  return concatBytes(parts);
}

/** One raw Snappy block (what snappy-java's Snappy.compress gives). */
export function snappyBlock(block: Uint8Array): Uint8Array {
  return snappyCompress(block);
}

/** One raw LZ4 block (what lz4-java's LZ4Compressor gives): sequences, the last one literals only. */
export function lz4Block(block: Uint8Array): Uint8Array {
  const out = new Uint8Array(block.length + Math.ceil(block.length / 255) + 16);
  const n = compressBlock(block, out, 0, block.length, new Uint32Array(1 << 16));
  if (n > 0) return out.subarray(0, n);
  // No match found: lz4js leaves it to the caller; one sequence of literals is a valid block.
  let at = 0;
  if (block.length >= 15) {
    out[at++] = 0xf0;
    let rest = block.length - 15;
    for (; rest >= 255; rest -= 255) out[at++] = 255;
    out[at++] = rest;
  } else {
    out[at++] = block.length << 4;
  }
  out.set(block, at);
  return out.subarray(0, at + block.length);
}
