/**
 * Readies every peer the tests start that no Debian package gives: resolves the JVM peers' Maven
 * artifacts (test/support/jvm-artifacts.ts) into the local Maven repository and the classpath
 * cache, and builds the Go peers (test/support/go-peers.ts), so tests and benchmarks start them
 * without downloading or compiling. `.ci/run` runs it before the suite; `bun scripts/test-peers.ts`
 * does the same by hand.
 */
import { buildGoPeer, GO_PEERS } from "../test/support/go-peers.ts";
import { JVM_SETS } from "../test/support/jvm-artifacts.ts";
import { jvmCacheDir, resolveClasspath } from "../test/support/jvm.ts";

const started = Date.now();
for (const set of JVM_SETS) {
  const t = Date.now();
  const cp = await resolveClasspath(set, { log: (line) => console.log(line) });
  console.log(`${set.name}: ${cp.split(":").length} jars (${((Date.now() - t) / 1000).toFixed(1)} s)`);
}
console.log(`JVM peers resolved in ${((Date.now() - started) / 1000).toFixed(1)} s; classpaths in ${jvmCacheDir()}`);
for (const peer of GO_PEERS) {
  const t = Date.now();
  const bin = await buildGoPeer(peer, { log: (line) => console.log(line) });
  console.log(`${peer.name} ${peer.version}: ${bin} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
}
