/**
 * Stands in for `@platformatic/wasm-utils` inside the Kafka client (tsconfig.json's `paths` map
 * the client's imports of it here; Bun's runtime and bundler follow them): the client imports
 * its codecs (lz4, snappy, CRC32C) as it loads, and that module compiles and instantiates its
 * WebAssembly right then, measured 12 MB of RSS in the compiled agent (the runtime's WebAssembly
 * code paged in, the module's memory). Only a compressed topic needs them: our record batches
 * take their CRC from src/io/crc32c.ts (as fast as the WebAssembly one in the binary). Here the
 * module loads on the first call. Under Deno, which does not read `paths`, it loads at once.
 */
type Codecs = typeof import("@platformatic/wasm-utils/bundled");

let codecs: Codecs | undefined;

function load(): Codecs {
  // Required, not imported: synchronous, on the first call, as the functions it stands for are.
  codecs ??= require("@platformatic/wasm-utils/bundled") as Codecs;
  return codecs;
}

export const crc32c: Codecs["crc32c"] = (data) => load().crc32c(data);
export const lz4Compress: Codecs["lz4Compress"] = (data) => load().lz4Compress(data);
export const lz4Decompress: Codecs["lz4Decompress"] = (data) => load().lz4Decompress(data);
export const snappyCompress: Codecs["snappyCompress"] = (data) => load().snappyCompress(data);
export const snappyDecompress: Codecs["snappyDecompress"] = (data) => load().snappyDecompress(data);
