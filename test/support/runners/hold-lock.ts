/**
 * Child process for the lock tests. usage: bun hold-lock.ts <lock file> hold|exit
 * Takes the lock as an agent would; prints "locked"; then holds it until killed (hold) or exits
 * without releasing it (exit: a process that died without cleaning up).
 */
import { OwnerLock } from "../../../src/io/owner-lock.ts";

const [file, mode] = process.argv.slice(2);
OwnerLock.acquire(file, `lock ${file}`, "test holder");
process.stdout.write("locked\n");
if (mode === "hold") setInterval(() => {}, 1000);
else process.exit(0);
