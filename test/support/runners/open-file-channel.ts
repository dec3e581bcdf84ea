/**
 * Child process for the lock and crash tests. usage: bun open-file-channel.ts <dir> hold|try|put [n]
 * hold: opens the channel, prints "open", and keeps it open until killed.
 * put: opens it, commits events "e0".."e<n-1>" in transactions of 100, prints "put", and keeps it
 * open until killed.
 * try: tries to open it; prints "opened" (exit 0) or "error: <message>" (exit 3).
 */
import { FileChannel } from "../../../src/components/channels/file/index.ts";
import { options, putAll, range } from "../file-channel.ts";

const [dir, mode, n] = process.argv.slice(2);
const ch = new FileChannel("c1", options(dir));
try {
  await ch.start();
} catch (err) {
  process.stdout.write(`error: ${(err as Error).message}\n`);
  process.exit(3);
}
if (mode === "hold" || mode === "put") {
  if (mode === "put") for (let i = 0; i < Number(n); i += 100) await putAll(ch, range(i, Math.min(100, Number(n) - i)));
  process.stdout.write(`${mode === "put" ? "put" : "open"}\n`);
  setInterval(() => {}, 1000);
} else {
  process.stdout.write("opened\n");
  await ch.stop();
}
