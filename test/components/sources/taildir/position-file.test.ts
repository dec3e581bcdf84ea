// TAILDIR's positionFile when it cannot be read or written: what the operator is told, what is kept.
import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { definition, type TaildirSource } from "../../../../src/components/sources/taildir.ts";
import { bodies, build, context, drain, wire } from "../../../support/components.ts";
import { cleanupsAfterEach, runCli, tempDir } from "../../../support/helpers.ts";
import { needsTmpfs } from "../../../support/requires.ts";
import { mountTmpfs } from "../../../support/tmpfs.ts";

const cleanups = cleanupsAfterEach();

/** Two logs of two lines each, and TAILDIR properties for them with the positionFile in pos/. */
function setup(extra: Record<string, string> = {}) {
  const t = tempDir("flume-taildir-posfile-");
  cleanups.push(t.cleanup);
  const logs = path.join(t.dir, "logs");
  mkdirSync(logs);
  writeFileSync(path.join(logs, "a.log"), "a1\na2\n");
  writeFileSync(path.join(logs, "b.log"), "b1\nb2\n");
  const positionFile = path.join(t.dir, "pos", "pos.json");
  mkdirSync(path.dirname(positionFile));
  const raw = { filegroups: "g1", "filegroups.g1": `${logs}/.*\\.log`, positionFile, ...extra };
  const open = () => {
    const ctx = context("r1");
    const src = build(definition, raw, ctx) as TaildirSource;
    const channel = wire(src);
    return { src, channel, ctx };
  };
  return { dir: t.dir, logs, positionFile, raw, open };
}

async function readAll(src: TaildirSource): Promise<void> {
  for (let i = 0; i < 100; i++) if ((await src.process()) === "BACKOFF") return;
}

/** A start that reads the four lines, and a stop: the state file and the positionFile hold their positions. */
async function firstRun(s: ReturnType<typeof setup>): Promise<void> {
  const first = s.open();
  await first.src.start();
  await readAll(first.src);
  expect(bodies(await drain(first.channel))).toHaveLength(4);
  await first.src.stop();
}

const errors = (ctx: ReturnType<typeof context>) => ctx.logger.lines.filter((l) => l.level === "error").map((l) => l.message);
const asideOf = (file: string) => readdirSync(path.dirname(file)).filter((n) => n.startsWith(`${path.basename(file)}.corrupt-`));

describe("TAILDIR: a positionFile that cannot be read", () => {
  for (const [what, damage] of [
    ["corrupt (not JSON)", (f: string) => writeFileSync(f, '[{"inode":12,"pos":')],
    ["unreadable (a directory in its place)", (f: string) => mkdirSync(f)],
  ] as const) {
    test(`${what}: kept aside, not overwritten; the log says how many files are read from where and that lines repeat; counted`, async () => {
      const s = setup();
      damage(s.positionFile);
      const before = statSync(s.positionFile).isFile() ? readFileSync(s.positionFile, "utf8") : null;
      const { src, channel, ctx } = s.open();
      await src.start();
      await readAll(src);
      expect(bodies(await drain(channel)).sort()).toEqual(["a1", "a2", "b1", "b2"]);
      expect(src.counter.get("PositionFileResetCount")).toBe(1);
      expect(src.counter.snapshot().PositionFileResetCount).toBe("1");
      await src.stop();
      const aside = asideOf(s.positionFile);
      expect(aside).toHaveLength(1);
      expect(aside[0]).toMatch(/^pos\.json\.corrupt-\d{8}T\d{6}Z$/);
      if (before !== null) expect(readFileSync(path.join(path.dirname(s.positionFile), aside[0]), "utf8")).toBe(before);
      const logged = errors(ctx);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toContain(`${s.positionFile} cannot be read (`);
      expect(logged[0]).toContain(`kept as ${path.join(path.dirname(s.positionFile), aside[0])}`);
      expect(logged[0]).toContain("2 matched file(s) will be read from their start: lines delivered before are delivered again");
      // The new positions are written in the positionFile's own place.
      expect(JSON.parse(readFileSync(s.positionFile, "utf8"))).toHaveLength(2);
    });
  }

  test("with skipToEnd the log says the files are read from their end", async () => {
    const s = setup({ skipToEnd: "true" });
    writeFileSync(s.positionFile, "garbage");
    const { src, ctx } = s.open();
    await src.start();
    await src.stop();
    expect(errors(ctx).join("\n")).toContain("2 matched file(s) will be read from their end (skipToEnd): lines written while the agent was stopped are skipped");
  });

  test("positionFile.onCorrupt = fail: the start is refused naming the file, which stays as it was", async () => {
    const s = setup({ "positionFile.onCorrupt": "fail" });
    writeFileSync(s.positionFile, "garbage");
    const { src } = s.open();
    await expect(src.start()).rejects.toThrow(`${s.positionFile} cannot be read (not valid JSON`);
    await expect(src.start()).rejects.toThrow("not starting (positionFile.onCorrupt = fail)");
    expect(readFileSync(s.positionFile, "utf8")).toBe("garbage");
    expect(asideOf(s.positionFile)).toEqual([]);
    // The lock was let go: repaired, the source starts.
    writeFileSync(s.positionFile, "[]");
    await src.start();
    await src.stop();
  });

  test("a damaged state file is kept aside and the positionFile's positions are used: nothing read again, no reset counted", async () => {
    const s = setup();
    await firstRun(s);
    writeFileSync(`${s.positionFile}.state`, "not a state file\n");
    const second = s.open();
    await second.src.start();
    await readAll(second.src);
    expect(bodies(await drain(second.channel))).toEqual([]);
    expect(second.src.counter.get("PositionFileResetCount")).toBe(0);
    await second.src.stop();
    expect(asideOf(`${s.positionFile}.state`)).toHaveLength(1);
    const warned = second.ctx.logger.lines.filter((l) => l.level === "warn").map((l) => l.message).join("\n");
    expect(warned).toContain(`${s.positionFile}.state cannot be read (`);
    expect(warned).toContain(`using the positions of positionFile ${s.positionFile}`);
  });
});

describe("TAILDIR: a state file cut short by a crash", () => {
  test("a torn last record is skipped and the records before it are used: only new lines are read, nothing set aside, no reset counted", async () => {
    const s = setup();
    await firstRun(s);
    writeFileSync(path.join(s.logs, "a.log"), "a1\na2\na3\n");
    // A record whose write a SIGKILL cut short; without Flume's positionFile a reset would read everything again.
    appendFileSync(`${s.positionFile}.state`, '{"seq":99,"inode":12,"po');
    rmSync(s.positionFile);
    const second = s.open();
    await second.src.start();
    await readAll(second.src);
    expect(bodies(await drain(second.channel))).toEqual(["a3"]);
    expect(second.src.counter.get("PositionFileResetCount")).toBe(0);
    await second.src.stop();
    expect(asideOf(`${s.positionFile}.state`)).toEqual([]);
    expect(second.ctx.logger.lines.filter((l) => l.level === "warn").map((l) => l.message)).toEqual([`r1: 1 unreadable line(s) in ${s.positionFile}.state ignored (a write cut short by a power loss?)`]);
  });
});

describe("TAILDIR: a positionFile it cannot write", () => {
  test("under a path that is a file: validate names the positionFile, its directory and the line", () => {
    const t = tempDir("flume-taildir-posdir-");
    cleanups.push(t.cleanup);
    const blocker = path.join(t.dir, "blocker");
    writeFileSync(blocker, "x");
    const positionFile = path.join(blocker, "state", "pos.json");
    const conf = path.join(t.dir, "a.conf");
    writeFileSync(conf, agentConf(t.dir, positionFile));
    const r = runCli(["validate", conf]);
    expect(r.code).not.toBe(0);
    expect(r.stderr + r.stdout).toContain(`${conf}:8`);
    expect(r.stderr + r.stdout).toContain(`the agent cannot keep positionFile ${positionFile} in its directory ${path.dirname(positionFile)}: ${blocker} is not a directory`);
  });

  needsTmpfs.test("on a read-only file system: validate refuses it (file:line), and a start names the positionFile and its directory, not a temp file", async () => {
    const t = tempDir("flume-taildir-rofs-");
    cleanups.push(t.cleanup);
    const { mnt, unmount } = mountTmpfs(t.dir, "ro", "size=1m,ro");
    cleanups.push(unmount);
    const positionFile = path.join(mnt, "pos.json");
    const conf = path.join(t.dir, "a.conf");
    writeFileSync(conf, agentConf(t.dir, positionFile));
    const r = runCli(["validate", conf]);
    expect(r.code).not.toBe(0);
    expect(r.stderr + r.stdout).toContain(`${conf}:8`);
    expect(r.stderr + r.stdout).toContain(`the agent cannot keep positionFile ${positionFile} in its directory ${mnt}: cannot write in ${mnt}: read-only file system (EROFS)`);

    const logs = path.join(t.dir, "logs");
    const src = build(definition, { filegroups: "g1", "filegroups.g1": `${logs}/.*`, positionFile }, context("r1")) as TaildirSource;
    wire(src);
    const started = src.start();
    await expect(started).rejects.toThrow(`positionFile ${positionFile} of TAILDIR source r1: cannot write in ${mnt}: read-only file system (EROFS)`);
    await expect(started).rejects.not.toThrow(/\.tmp\b/);
  });
});

/** Agent a1 with a TAILDIR source whose positionFile is on line 8. */
function agentConf(dir: string, positionFile: string): string {
  const logs = path.join(dir, "logs");
  mkdirSync(logs, { recursive: true });
  return `a1.sources = r1
a1.channels = c1
a1.sinks = k1
a1.sources.r1.type = TAILDIR
a1.sources.r1.channels = c1
a1.sources.r1.filegroups = g1
a1.sources.r1.filegroups.g1 = ${logs}/.*\\.log
a1.sources.r1.positionFile = ${positionFile}
a1.channels.c1.type = memory
a1.sinks.k1.type = null
a1.sinks.k1.channel = c1
`;
}
