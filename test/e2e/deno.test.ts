import { describe, expect } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { ROOT, tempDir } from "../support/helpers.ts";
import { precondition } from "../support/requires.ts";

// Deno comes from npm (devDependency `deno`); src/ must run under it unchanged.
const DENO = path.join(ROOT, "node_modules", ".bin", "deno");
const CLI = path.join(ROOT, "src", "cli.ts");
const needsDeno = precondition(() => existsSync(DENO), "needs deno from npm (npm install)");

function deno(args: string[]) {
  return spawnSync(DENO, ["run", "-A", CLI, ...args], { cwd: ROOT, encoding: "utf8", timeout: 60000, env: { ...process.env, NO_COLOR: "1" } });
}

describe("the CLI under Deno", () => {
  needsDeno.test("validate and describe", () => {
    const ok = deno(["validate", "conf/flume.conf"]);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain("valid");
    const d = deno(["describe", "memory"]);
    expect(d.status).toBe(0);
    expect(d.stdout).toContain("transactionCapacity");
  });

  needsDeno.test("run: netcat -> memory -> logger answers and logs a line", async () => {
    const { dir, cleanup } = tempDir();
    try {
      const port: number = await new Promise((resolve) => {
        const s = net.createServer().listen(0, "127.0.0.1", () => {
          const p = (s.address() as net.AddressInfo).port;
          s.close(() => resolve(p));
        });
      });
      const conf = path.join(dir, "d.conf");
      writeFileSync(
        conf,
        `d.sources = r1\nd.channels = c1\nd.sinks = k1\nd.sources.r1.type = netcat\nd.sources.r1.bind = 127.0.0.1\nd.sources.r1.port = ${port}\nd.sources.r1.channels = c1\nd.channels.c1.type = memory\nd.sinks.k1.type = logger\nd.sinks.k1.channel = c1\n`,
      );
      const child = spawn(DENO, ["run", "-A", CLI, "run", "-f", conf, "--quiet"], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" } });
      let err = "";
      child.stderr.on("data", (d) => (err += d));
      for (let i = 0; i < 600 && !/agent d started/.test(err); i++) await new Promise((r) => setTimeout(r, 50));
      expect(err).toContain("agent d started");
      const answer: string = await new Promise((resolve, reject) => {
        const s = net.connect(port, "127.0.0.1", () => s.write("from deno\n"));
        s.on("data", (d) => {
          resolve(String(d));
          s.destroy();
        });
        s.on("error", reject);
      });
      expect(answer).toBe("OK\n");
      for (let i = 0; i < 100 && !/from deno/.test(err); i++) await new Promise((r) => setTimeout(r, 50));
      expect(err).toContain("66 72 6F 6D 20 64 65 6E 6F");
      child.kill("SIGTERM");
      const code = await new Promise((r) => child.on("exit", r));
      expect(code).toBe(0);
    } finally {
      cleanup();
    }
  }, 60000);
});
