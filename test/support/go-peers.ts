/**
 * Go programs the tests start that Debian does not ship in the version they need: built with
 * `go install module@version` (sources from the Go module proxy, Go's own module cache) into
 * ~/.cache/flume-ts/go/<name>-<version>/, so a second run builds nothing. `.ci/run` builds them
 * before the suite (scripts/test-peers.ts), so a build does not count against a test's timeout.
 *
 * Tests that start one declare it with `needsGoPeer(peer).test(...)`: skipped with the reason
 * where the binary is neither built nor buildable (no `go`), failing under CI=true (requires.ts).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { commandRuns, type Precondition, precondition } from "./requires.ts";
import { lastLines, peerCacheDir, runCommand } from "./build-steps.ts";

export interface GoPeer {
  /** The binary's name: "nats-server". */
  name: string;
  /** The package `go install` builds: "github.com/nats-io/nats-server/v2". */
  pkg: string;
  version: string;
  /** Why Debian's own package does not do, for the precondition's reason. */
  why: string;
}

/**
 * nats-server for the 3-node cluster tests. Debian 12's 2.9.10 can leave a replicated consumer
 * stuck after its leader is killed: messages delivered by the old leader that the new one never
 * learned of are passed over by a later ack and never delivered again (fixed in 2.10.26 and
 * 2.11.0, nats-server PR #6469; the delivery itself waits for quorum since 2.11.2, PR #6792).
 */
export const NATS_SERVER_CLUSTER: GoPeer = {
  name: "nats-server",
  pkg: "github.com/nats-io/nats-server/v2",
  version: "v2.15.3",
  why: "Debian's 2.9.10 can leave a consumer stuck after a leader change",
};

/** Every Go peer, for scripts/test-peers.ts. */
export const GO_PEERS: GoPeer[] = [NATS_SERVER_CLUSTER];

export class GoBuildError extends Error {}

/** The go command: on PATH, else where the official tarball installs it. */
export function goCommand(): string | null {
  if (commandRuns("go", "version")) return "go";
  return commandRuns("/usr/local/go/bin/go", "version") ? "/usr/local/go/bin/go" : null;
}

/** Where the peer's binary is kept once built. */
export function goPeerPath(peer: GoPeer): string {
  return path.join(peerCacheDir("go"), `${peer.name}-${peer.version}`, peer.name);
}

function runs(bin: string): boolean {
  return existsSync(bin) && spawnSync(bin, ["--version"], { stdio: "ignore", timeout: 10000 }).status === 0;
}

/** Where the peer's binary is built or can be. */
export function needsGoPeer(peer: GoPeer): Precondition {
  return precondition(() => runs(goPeerPath(peer)) || goCommand() !== null, `needs go: builds ${peer.name} ${peer.version} from the Go module proxy (${peer.why})`);
}

/** The peer's binary, building it first when it is not built yet. */
export async function buildGoPeer(peer: GoPeer, opts: { timeoutMs?: number; log?: (line: string) => void } = {}): Promise<string> {
  const bin = goPeerPath(peer);
  if (runs(bin)) return bin;
  const go = goCommand();
  if (!go) throw new GoBuildError(`${peer.name} ${peer.version} is not built in ${path.dirname(bin)} and there is no go command to build it (install Go, or put it on PATH)`);
  const dir = path.dirname(bin);
  mkdirSync(path.dirname(dir), { recursive: true });
  // Built aside and renamed into place, so a build cut short never leaves a binary half written.
  const work = mkdtempSync(`${dir}.build-`);
  try {
    opts.log?.(`building ${peer.name} ${peer.version}: go install ${peer.pkg}@${peer.version}`);
    // GOTOOLCHAIN=local: the Go on this machine builds it; no other toolchain is downloaded.
    const env = { ...process.env, GOBIN: work, CGO_ENABLED: "0", GOTOOLCHAIN: "local" };
    const { code, output } = await runCommand(go, ["install", `${peer.pkg}@${peer.version}`], { env, timeoutMs: opts.timeoutMs ?? 10 * 60_000 });
    const built = path.join(work, peer.name);
    if (code !== 0 || !existsSync(built)) throw new GoBuildError(`go install ${peer.pkg}@${peer.version} failed (exit ${code}):\n${lastLines(output, 40)}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(work, dir);
    if (!runs(bin)) throw new GoBuildError(`${bin} was built but does not run (${peer.name} --version)`);
    return bin;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
