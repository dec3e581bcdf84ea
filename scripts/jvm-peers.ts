/**
 * Resolves every JVM peer's Maven artifacts (test/support/jvm-artifacts.ts) into the local Maven
 * repository and the classpath cache, so tests and benchmarks start them without downloading.
 * `.ci/run` runs it before the suite; `bun scripts/jvm-peers.ts` does the same by hand.
 */
import { JVM_SETS } from "../test/support/jvm-artifacts.ts";
import { jvmCacheDir, resolveClasspath } from "../test/support/jvm.ts";

const started = Date.now();
for (const set of JVM_SETS) {
  const t = Date.now();
  const cp = await resolveClasspath(set, { log: (line) => console.log(line) });
  console.log(`${set.name}: ${cp.split(":").length} jars (${((Date.now() - t) / 1000).toFixed(1)} s)`);
}
console.log(`JVM peers resolved in ${((Date.now() - started) / 1000).toFixed(1)} s; classpaths in ${jvmCacheDir()}`);
