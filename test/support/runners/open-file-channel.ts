/**
 * Child process for the lock tests. usage: bun open-file-channel.ts <dir> hold|try
 * hold: opens the channel, prints "open", and keeps it open until killed.
 * try: tries to open it; prints "opened" (exit 0) or "error: <message>" (exit 3).
 */
import { FileChannel } from "../../../src/components/channels/file/index.ts";
import { options } from "../file-channel.ts";

const [dir, mode] = process.argv.slice(2);
const ch = new FileChannel("c1", options(dir));
try {
  await ch.start();
} catch (err) {
  process.stdout.write(`error: ${(err as Error).message}\n`);
  process.exit(3);
}
if (mode === "hold") {
  process.stdout.write("open\n");
  setInterval(() => {}, 1000);
} else {
  process.stdout.write("opened\n");
  await ch.stop();
}
