import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dir, "..");
export const CLI = path.join(ROOT, "src", "cli.ts");

/** Runs the CLI to completion with the same Bun that runs the tests. */
export function runCli(args: string[], opts: { input?: string; env?: Record<string, string>; cwd?: string; timeout?: number } = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    input: opts.input,
    env: { ...process.env, NO_COLOR: "1", ...opts.env },
    cwd: opts.cwd ?? ROOT,
    timeout: opts.timeout ?? 20000,
    encoding: "utf8",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, signal: r.signal };
}

/** Starts the CLI as a long-running child process (an agent). */
export function startCli(args: string[], opts: { env?: Record<string, string>; cwd?: string } = {}) {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, NO_COLOR: "1", ...opts.env },
    cwd: opts.cwd ?? ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    /** Resolves once the combined output matches, or rejects after ms. */
    waitFor(pattern: RegExp, ms = 15000): Promise<void> {
      return new Promise((resolve, reject) => {
        const started = Date.now();
        const tick = () => {
          if (pattern.test(stdout) || pattern.test(stderr)) return resolve();
          if (child.exitCode !== null) return reject(new Error(`process exited (${child.exitCode}) before ${pattern}\n${stdout}\n${stderr}`));
          if (Date.now() - started > ms) return reject(new Error(`timed out waiting for ${pattern}\n${stdout}\n${stderr}`));
          setTimeout(tick, 25);
        };
        tick();
      });
    },
    exited(): Promise<number | null> {
      return new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.on("exit", (code) => resolve(code));
      });
    },
  };
}

export function tempDir(prefix = "flume-test-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A TCP port on 127.0.0.1 that was free a moment ago (for configs that need a fixed port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** GET /metrics of an agent: Flume's JSON. */
export async function fetchMetrics(port: number): Promise<Record<string, Record<string, string>>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return (await res.json()) as Record<string, Record<string, string>>;
}
