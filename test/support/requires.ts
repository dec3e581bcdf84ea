/**
 * Tests that need something of the machine (root, a tool, a mount): `needsX.test(name, fn)`.
 *
 * - Where the precondition holds, the test runs.
 * - Where it is missing, the test is skipped, unless CI is "true": then it fails with a message
 *   naming what is missing, so that CI cannot go green on a machine that lacks what a test needs.
 *
 * Either way the test's name ends with the precondition, e.g. "... (needs strace)", so a skip
 * says why. Preconditions are checked once, when the first test using them is declared.
 */
import { test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

type TestBody = Parameters<typeof test>[1];
type TestOptions = Parameters<typeof test>[2];

const CI = process.env.CI === "true";

export class Precondition {
  private checked: boolean | undefined;

  constructor(
    private readonly check: () => boolean,
    /** What is needed, and what for: "needs root: mounts a tmpfs". */
    readonly reason: string,
  ) {}

  get holds(): boolean {
    this.checked ??= safely(this.check);
    return this.checked;
  }

  /** Both this and other: the reasons joined. */
  and(other: Precondition): Precondition {
    return new Precondition(() => this.holds && other.holds, `${this.reason}; ${other.reason}`);
  }

  /** Declares a test that runs where the precondition holds (see the file's comment). */
  test(name: string, body: TestBody, options?: TestOptions): void {
    const label = `${name} (${this.reason})`;
    if (this.holds) return void test(label, body, options);
    if (!CI) return void test.skip(label, body, options);
    test(label, () => {
      throw new Error(`missing precondition: ${this.reason}. With CI=true a test whose precondition is missing fails instead of being skipped: install or allow what it needs.`);
    });
  }
}

export function precondition(check: () => boolean, reason: string): Precondition {
  return new Precondition(check, reason);
}

function safely(check: () => boolean): boolean {
  try {
    return check();
  } catch {
    return false;
  }
}

/** Whether `command ...args` runs and exits 0 (within 10 s). */
export function commandRuns(command: string, ...args: string[]): boolean {
  const r = spawnSync(command, args, { stdio: "ignore", timeout: 10000 });
  return r.error === undefined && r.status === 0;
}

export const isRoot = () => process.getuid?.() === 0;

/** Mounts a 1 MiB tmpfs on a temporary folder and unmounts it: needs root (CAP_SYS_ADMIN). */
function canMountTmpfs(): boolean {
  if (process.platform !== "linux" || !isRoot()) return false;
  const dir = mkdtempSync(path.join(tmpdir(), "flume-probe-tmpfs-"));
  try {
    if (!commandRuns("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir)) return false;
    return commandRuns("umount", dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const needsRootToSwitchUser = precondition(isRoot, "needs root: runs the source as user nobody so that file permissions apply");
export const needsTmpfs = precondition(canMountTmpfs, "needs root: mounts a tmpfs");
export const needsLoopExt4 = precondition(
  () => process.platform === "linux" && isRoot() && existsSync("/dev/loop-control") && commandRuns("mkfs.ext4", "-V"),
  "needs root, mkfs.ext4 and loop devices: mounts an ext4 image",
);
export const needsStrace = precondition(() => commandRuns("strace", "-f", "-qq", "-e", "trace=fsync", "true"), "needs strace");
export const needsLogger = precondition(() => commandRuns("logger", "--version"), "needs util-linux logger (bsdutils)");
export const needsOpenssl = precondition(() => commandRuns("openssl", "version"), "needs openssl");
/** The system python3 (Debian's, with its packages), not the one first on PATH. */
export const PYTHON = "/usr/bin/python3";
export const needsPythonAvro = precondition(() => commandRuns(PYTHON, "-c", "import avro.datafile"), "needs /usr/bin/python3 with avro (python3-avro)");
/** A python3 child holds an fcntl lock as Java's tryLock does; the code under test finds it in /proc/locks. */
export const needsPosixLockHolder = precondition(() => existsSync("/proc/locks") && commandRuns(PYTHON, "-c", "import fcntl"), "needs /usr/bin/python3 and /proc/locks");
export const needsProc = precondition(() => existsSync("/proc/self/fd") && existsSync("/proc/self/stat"), "needs Linux /proc");
export const needsPromtool = precondition(() => commandRuns("promtool", "--version"), "needs promtool (Debian prometheus)");
/** Debian's thrift-compiler (`thrift --gen py`) and python3-thrift under /usr/bin/python3 (the pyenv python3 on PATH has no thrift module). */
export const needsThrift = precondition(
  () => commandRuns("thrift", "--version") && commandRuns("/usr/bin/python3", "-c", "import thrift"),
  "needs thrift-compiler and /usr/bin/python3 with thrift (python3-thrift)",
);

/** The nats-server binary: Debian installs it in /usr/sbin, which is often not on a user's PATH. */
export function natsServerPath(): string | null {
  for (const p of ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"]) if (existsSync(p)) return p;
  const r = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" });
  const found = r.stdout?.trim();
  return found ? found : null;
}
export const needsNatsServer = precondition(() => {
  const bin = natsServerPath();
  return bin !== null && commandRuns(bin, "--version");
}, "needs nats-server");
/** Debian's chromium, run headless for screenshots of the simulator's HTML report. */
export const CHROMIUM = "/usr/bin/chromium";
export const needsChromium = precondition(() => existsSync(CHROMIUM) && commandRuns(CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--version"), "needs chromium (Debian's /usr/bin/chromium)");
