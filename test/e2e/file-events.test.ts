/**
 * File sources wake up on file-system events, under Bun and under Deno: with polling set so
 * slow that it cannot be what finds them (TAILDIR maxBackoffSleep and spooldir pollDelay of 10
 * minutes), a line appended to an idle tailed file and a file moved into the spool directory
 * still reach the sink.
 */
import { describe, expect, test } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cleanupsAfterEach, ROOT, tempDir, waitUntil } from "../support/helpers.ts";
import { precondition } from "../support/requires.ts";

const CLI = path.join(ROOT, "src", "cli.ts");
const DENO = path.join(ROOT, "node_modules", ".bin", "deno");
const needsDeno = precondition(() => existsSync(DENO), "needs deno from npm (npm install)");
const cleanups = cleanupsAfterEach();
const SLOW = String(10 * 60 * 1000);

function conf(dir: string): string {
  return `a1.sources = t1 s1
a1.channels = c1
a1.sinks = k1
a1.sources.t1.type = TAILDIR
a1.sources.t1.channels = c1
a1.sources.t1.filegroups = g1
a1.sources.t1.filegroups.g1 = ${path.join(dir, "logs")}/app\\.log
a1.sources.t1.positionFile = ${path.join(dir, "pos.json")}
a1.sources.t1.backoffSleepIncrement = ${SLOW}
a1.sources.t1.maxBackoffSleep = ${SLOW}
a1.sources.s1.type = spooldir
a1.sources.s1.channels = c1
a1.sources.s1.spoolDir = ${path.join(dir, "spool")}
a1.sources.s1.pollDelay = ${SLOW}
a1.channels.c1.type = memory
a1.sinks.k1.type = file_roll
a1.sinks.k1.channel = c1
a1.sinks.k1.sink.directory = ${path.join(dir, "out")}
a1.sinks.k1.sink.rollInterval = 0
a1.sinks.k1.sink.batchSize = 1
`;
}

function delivered(out: string): string[] {
  if (!existsSync(out)) return [];
  return readdirSync(out).flatMap((f) => readFileSync(path.join(out, f), "utf8").split("\n").filter((l) => l !== ""));
}

async function wokenByEvents(command: string[]): Promise<void> {
  const t = tempDir("flume-events-");
  cleanups.push(t.cleanup);
  for (const d of ["logs", "spool", "staging"]) mkdirSync(path.join(t.dir, d));
  const log = path.join(t.dir, "logs", "app.log");
  writeFileSync(log, "first\n");
  const file = path.join(t.dir, "agent.conf");
  writeFileSync(file, conf(t.dir));
  const child: ChildProcess = spawn(command[0], [...command.slice(1), "run", "-f", file, "--quiet"], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  cleanups.push(() => child.kill("SIGKILL"));
  let err = "";
  child.stderr?.on("data", (d) => (err += d));
  child.stdout?.on("data", (d) => (err += d));
  const out = path.join(t.dir, "out");
  await waitUntil(() => /agent a1 started/.test(err), `the agent to start:\n${err}`, 60_000);
  await waitUntil(() => delivered(out).includes("first"), "the first line", 10_000);
  // Both sources are in their (10-minute) sleep now.
  await new Promise((r) => setTimeout(r, 200));
  appendFileSync(log, "appended while idle\n");
  await waitUntil(() => delivered(out).includes("appended while idle"), `the appended line (woken by an event):\n${err}`, 10_000);
  const staged = path.join(t.dir, "staging", "f1.log");
  writeFileSync(staged, "from a spooled file\n");
  renameSync(staged, path.join(t.dir, "spool", "f1.log"));
  await waitUntil(() => delivered(out).includes("from a spooled file"), `the spooled file's line (woken by an event):\n${err}`, 10_000);
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  expect(delivered(out)).toEqual(["first", "appended while idle", "from a spooled file"]);
}

describe("file sources woken by file-system events", () => {
  test("under Bun: an appended line and a spooled file are picked up without waiting for a poll", async () => {
    await wokenByEvents([process.execPath, CLI]);
  }, 90_000);

  needsDeno.test(
    "under Deno: the same",
    async () => {
      await wokenByEvents([DENO, "run", "-A", CLI]);
    },
    90_000,
  );
});
