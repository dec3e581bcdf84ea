// bun scripts/crc32c-wasm.ts: compiles src/io/crc32c.wat and writes the module's bytes into
// src/io/crc32c-wasm.ts (inlined, so `bun build --compile` carries them; no .wasm file to find at
// run time). test/io/crc32c.test.ts checks that the two agree.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import wabt from "wabt";

const IO = path.join(import.meta.dirname, "..", "src", "io");
export const WAT_PATH = path.join(IO, "crc32c.wat");
const OUT_PATH = path.join(IO, "crc32c-wasm.ts");

/** The module compiled from src/io/crc32c.wat, base64. */
export async function compileCrc32cWat(): Promise<string> {
  const module = (await wabt()).parseWat("crc32c.wat", readFileSync(WAT_PATH, "utf8"));
  try {
    module.validate();
    return Buffer.from(module.toBinary({}).buffer).toString("base64");
  } finally {
    module.destroy();
  }
}

if (import.meta.main) {
  const base64 = await compileCrc32cWat();
  const bytes = Buffer.from(base64, "base64").length;
  writeFileSync(
    OUT_PATH,
    `// Written by scripts/crc32c-wasm.ts from src/io/crc32c.wat: edit that, then run the script.\n` +
      `/** The WebAssembly module of src/io/crc32c.wat (${bytes} bytes), base64. */\n` +
      `export const CRC32C_WASM = "${base64}";\n`,
  );
  console.log(`${path.relative(process.cwd(), OUT_PATH)}: ${bytes} bytes of WebAssembly`);
}
