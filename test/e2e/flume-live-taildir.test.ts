/**
 * A TAILDIR positionFile written by a live Apache Flume 1.11.0, taken over by our agent with the
 * same filegroups: across both agents' file_roll outputs, every line once.
 *
 * "None repeated" needs Flume's positions to cover exactly what it delivered. Flume writes them
 * every writePosInterval (3 s by default) and when it stops, and its memory channel loses what its
 * sink had not taken yet at a stop. So Flume is stopped only after its sink wrote every line it
 * read: cleanly (SIGTERM: the position file is written at stop), or with SIGKILL once the position
 * file shows every offset it read. A line half written (no newline yet) is left to ours whole.
 */
import { afterAll, describe, expect } from "bun:test";
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type FlumePeer, startFlume } from "../support/flume.ts";
import { flumeClasspathBeforeAll, FlowsConf, rolledLines } from "../support/flume-live.ts";
import { startAgentCli, tempDir, waitUntil } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";

flumeClasspathBeforeAll();
const tmp = tempDir("flume-live-taildir-");
const cleanups: (() => void)[] = [];
const flumes: FlumePeer[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0)) c();
  await Promise.all(flumes.map((f) => f.stop(2000)));
  tmp.cleanup();
}, 60_000);

/** Appends lines `<file> line <i>` (i from `from`) to dir/<file>; returns them. */
function appendLines(dir: string, file: string, from: number, n: number): string[] {
  const lines = Array.from({ length: n }, (_, j) => `${file} line ${from + j}`);
  appendFileSync(path.join(dir, file), lines.map((l) => `${l}\n`).join(""));
  return lines;
}

/** Flume's positionFile: [{inode, pos, file}], as a map from path to position. */
function positions(file: string): Record<string, number> {
  if (!existsSync(file)) return {};
  const text = readFileSync(file, "utf8");
  if (text.trim() === "") return {};
  return Object.fromEntries((JSON.parse(text) as { inode: number; pos: number; file: string }[]).map((p) => [p.file, p.pos]));
}

/** Lines that do not appear exactly once in the outputs together, with their counts. */
function notOnce(expected: string[], outputs: string[][]): string[] {
  const counts = new Map(expected.map((l) => [l, 0]));
  const bad: string[] = [];
  for (const l of outputs.flat()) {
    const c = counts.get(l);
    if (c === undefined) bad.push(`unexpected: ${l}`);
    else counts.set(l, c + 1);
  }
  for (const [l, c] of counts) if (c !== 1) bad.push(`${c}x ${l}`);
  return bad;
}

async function takeOver(stop: "SIGTERM" | "SIGKILL") {
  const dir = path.join(tmp.dir, stop);
  const logs = path.join(dir, "logs");
  const out = { flume: path.join(dir, "flume-out"), ours: path.join(dir, "ours-out") };
  for (const d of [logs, out.flume]) mkdirSync(d, { recursive: true });
  const positionFile = path.join(dir, "taildir_position.json");
  // The same source for both agents; only the file_roll directory differs.
  const conf = (outDir: string) =>
    new FlowsConf()
      .add(
        "t",
        { type: "TAILDIR", positionFile, filegroups: "f1", "filegroups.f1": path.join(logs, ".*\\.log"), batchSize: 50 },
        { type: "file_roll", "sink.directory": outDir, "sink.rollInterval": 0 },
      )
      .toString();
  const sent = [...appendLines(logs, "a.log", 0, 300), ...appendLines(logs, "b.log", 0, 300)];
  const flume = await startFlume({ conf: conf(out.flume), dir: path.join(dir, "flume"), readyTimeoutMs: 120_000 });
  flumes.push(flume);
  await waitUntil(() => rolledLines(out.flume).length >= 600, "Flume to deliver the first lines", 120_000, 100);
  // More lines while Flume runs, and the start of one that is not finished yet.
  sent.push(...appendLines(logs, "a.log", 300, 100), ...appendLines(logs, "c.log", 0, 100));
  appendFileSync(path.join(logs, "b.log"), "b.log half");
  await waitUntil(() => rolledLines(out.flume).length >= 800, "Flume to deliver the lines written while it ran", 120_000, 100);
  const read = () => ({ [path.join(logs, "a.log")]: statSync(path.join(logs, "a.log")).size, [path.join(logs, "b.log")]: statSync(path.join(logs, "b.log")).size - "b.log half".length, [path.join(logs, "c.log")]: statSync(path.join(logs, "c.log")).size });
  if (stop === "SIGKILL") {
    await waitUntil(() => Bun.deepEquals(positions(positionFile), read()), "Flume's position file to cover every line it delivered", 60_000, 100);
    await flume.kill("SIGKILL");
  } else {
    await flume.kill("SIGTERM");
  }
  // What Flume wrote (at stop, or in its last periodic write): every complete line, not the half one.
  expect(positions(positionFile)).toEqual(read());
  const flumeLines = rolledLines(out.flume);
  expect(flumeLines).toHaveLength(800);

  // While no agent runs: the half line is finished, more lines, a new file.
  appendFileSync(path.join(logs, "b.log"), " finished\n");
  sent.push("b.log half finished", ...appendLines(logs, "b.log", 300, 100), ...appendLines(logs, "d.log", 0, 100));
  const confFile = path.join(dir, "ours.properties");
  writeFileSync(confFile, conf(out.ours));
  const ours = await startAgentCli(cleanups, ["run", "-f", confFile, "-n", "a1", "--no-reload-conf"]);
  await waitUntil(() => rolledLines(out.ours).length >= 201, "our agent to deliver the lines Flume did not", 60_000, 100);
  ours.child.kill("SIGTERM");
  expect(await ours.exited()).toBe(0);
  expect(notOnce(sent, [flumeLines, rolledLines(out.ours)])).toEqual([]);
  expect(rolledLines(out.ours)).toHaveLength(201);
}

describe("TAILDIR: a live Apache Flume 1.11.0's positionFile taken over by our agent", () => {
  needsJvm.test("Flume stopped cleanly (SIGTERM) after delivering: every line once across both agents", () => takeOver("SIGTERM"), 300_000);
  needsJvm.test("Flume SIGKILLed once its position file covered what it delivered: every line once across both agents", () => takeOver("SIGKILL"), 300_000);
});
