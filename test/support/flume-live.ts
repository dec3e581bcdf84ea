/**
 * For the e2e tests against a live Apache Flume (test/e2e/flume-live-*.test.ts): events with
 * headers posted to an http source (Flume's or ours, both take Flume's JSONHandler format), and
 * what a file_roll sink with the header_and_text serializer wrote, read back as events, so a test
 * can check that each event sent arrived exactly once with its headers.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll } from "bun:test";
import { type FlumePeer, flumeClasspath } from "./flume.ts";
import { needsJvm } from "./jvm.ts";
import { canConnect, tempDir, waitUntil } from "./helpers.ts";
export { freePorts } from "./ports.ts";

export interface SentEvent {
  headers: Record<string, string>;
  body: string;
}

/** n events whose bodies and headers name the flow and their index (no ", " "=" "{" "}" in values: header_and_text is not escaped). */
export function makeEvents(flow: string, n: number, from = 0): SentEvent[] {
  return Array.from({ length: n }, (_, j) => {
    const i = from + j;
    return { headers: { flow, seq: String(i), parity: i % 2 === 0 ? "even" : "odd" }, body: `${flow} event ${i} ünïcödé` };
  });
}

/** POSTs the events as one JSON request to an http source with the JSONHandler; throws unless 200. */
export async function postEvents(port: number, events: SentEvent[]): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", headers: { "content-type": "application/json; charset=UTF-8" }, body: JSON.stringify(events) });
  if (res.status !== 200) throw new Error(`http source on port ${port} answered ${res.status}: ${await res.text()}`);
}

/** Posts the events in requests of `per` events. */
export async function postAll(port: number, events: SentEvent[], per = 100): Promise<void> {
  for (let i = 0; i < events.length; i += per) await postEvents(port, events.slice(i, i + per));
}

/** One line of header_and_text (`{k1=v1, k2=v2} body`) as an event; Java's HashMap orders the headers its own way. */
export function parseHeaderAndText(line: string): SentEvent {
  const m = /^\{(.*?)\} (.*)$/s.exec(line);
  if (!m) throw new Error(`not a header_and_text line: ${JSON.stringify(line)}`);
  const headers: Record<string, string> = {};
  if (m[1] !== "") {
    for (const pair of m[1].split(", ")) {
      const eq = pair.indexOf("=");
      headers[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return { headers, body: m[2] };
}

/** The lines of every file in dir (file_roll's output), in file-name order; [] while dir does not exist. */
export function rolledLines(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const lines: string[] = [];
  for (const f of readdirSync(dir).sort()) {
    const text = readFileSync(path.join(dir, f), "utf8");
    // A line being written has no newline yet: leave it for the next read.
    const complete = text.slice(0, text.lastIndexOf("\n") + 1);
    for (const l of complete.split("\n")) if (l !== "") lines.push(l);
  }
  return lines;
}

/** The events a header_and_text file_roll sink wrote into dir. */
export function rolledEvents(dir: string): SentEvent[] {
  return rolledLines(dir).map(parseHeaderAndText);
}

/** Canonical text of an event (headers sorted), for comparing sets of events. */
export function eventKey(e: SentEvent): string {
  return JSON.stringify([Object.entries(e.headers).sort(([a], [b]) => (a < b ? -1 : 1)), e.body]);
}

/** How many times each event arrived, and the ones that arrived but were never sent. */
export function deliveryReport(sent: SentEvent[], received: SentEvent[]) {
  const counts = new Map(sent.map((e) => [eventKey(e), 0]));
  const unexpected: string[] = [];
  for (const e of received) {
    const k = eventKey(e);
    const c = counts.get(k);
    if (c === undefined) unexpected.push(k);
    else counts.set(k, c + 1);
  }
  const missing = [...counts].filter(([, c]) => c === 0).map(([k]) => k);
  const repeated = [...counts].filter(([, c]) => c > 1).map(([k, c]) => `${c}x ${k}`);
  return { missing: missing.length, repeated, unexpected, firstMissing: missing.slice(0, 3) };
}

/** Resolves Flume's classpath before the tests of the file (cached by .ci/run: fast), where java and mvn are there. */
export function flumeClasspathBeforeAll(): void {
  beforeAll(async () => {
    if (needsJvm.holds) await flumeClasspath();
  }, 15 * 60_000);
}

type Props = Record<string, string | number | boolean>;

/**
 * A properties file of flows, each `<source> -> memory channel -> <sink>`, for an agent that
 * Flume and ours both read: component names are <flow>_r, <flow>_c, <flow>_k.
 */
export class FlowsConf {
  private readonly flows: { name: string; source: Props; sink: Props; channel: Props }[] = [];

  constructor(readonly agent = "a1") {}

  add(name: string, source: Props, sink: Props, channel: Props = { type: "memory", capacity: 10000, transactionCapacity: 1000 }): this {
    this.flows.push({ name, source, sink, channel });
    return this;
  }

  /** A flow from an http source (JSONHandler) on 127.0.0.1:port to the sink. */
  fromHttp(name: string, port: number, sink: Props): this {
    return this.add(name, { type: "http", bind: "127.0.0.1", port }, sink);
  }

  /** A flow from the source to a file_roll sink writing header_and_text lines into dir, one file. */
  toFileRoll(name: string, source: Props, dir: string): this {
    return this.add(name, source, { type: "file_roll", "sink.directory": dir, "sink.rollInterval": 0, "sink.serializer": "header_and_text", "sink.batchSize": 100 });
  }

  toString(): string {
    const a = this.agent;
    const names = (suffix: string) => this.flows.map((f) => `${f.name}_${suffix}`).join(" ");
    const lines = [`${a}.sources = ${names("r")}`, `${a}.channels = ${names("c")}`, `${a}.sinks = ${names("k")}`];
    const props = (prefix: string, p: Props) => Object.entries(p).map(([k, v]) => `${prefix}.${k} = ${v}`);
    for (const f of this.flows) {
      lines.push(...props(`${a}.sources.${f.name}_r`, f.source), `${a}.sources.${f.name}_r.channels = ${f.name}_c`);
      lines.push(...props(`${a}.channels.${f.name}_c`, f.channel));
      lines.push(...props(`${a}.sinks.${f.name}_k`, f.sink), `${a}.sinks.${f.name}_k.channel = ${f.name}_c`);
    }
    return `${lines.join("\n")}\n`;
  }
}

/** Waits until every port on 127.0.0.1 accepts connections (a JVM peer's sources start one by one). */
export async function waitForPorts(ports: number[], what: string, ms = 120_000): Promise<void> {
  for (const port of ports) await waitUntil(() => canConnect(port), `${what}: port ${port} to accept`, ms, 100);
}

/** Waits until the file_roll output in dir holds n events; returns them. */
export async function waitForRolled(dir: string, n: number, what: string, ms = 60_000): Promise<SentEvent[]> {
  try {
    await waitUntil(() => rolledLines(dir).length >= n, `${what}: ${n} events in ${dir}`, ms, 100);
  } catch (err) {
    throw new Error(`${(err as Error).message} (found ${rolledLines(dir).length})`);
  }
  return rolledEvents(dir);
}

/** Runs a main class of Flume's jars to completion (e.g. AvroCLIClient); resolves with its exit code and output. */
export async function runFlumeMain(mainClass: string, args: string[], timeoutMs = 120_000): Promise<{ code: number | null; output: string }> {
  const classpath = await flumeClasspath();
  return new Promise((resolve) => {
    const child = spawn("java", ["-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", classpath, mainClass, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/**
 * What a live-Flume test file shares: a temp dir, cleanups, and the Flume peer it starts (set
 * `scope.flume`); after the file, cleanups run, Flume gets 2 s to stop (a clean stop is not what
 * these tests check), then the dir goes.
 */
export function liveFlumeScope(prefix: string): { tmp: ReturnType<typeof tempDir>; cleanups: (() => void)[]; flume?: FlumePeer } {
  const scope: { tmp: ReturnType<typeof tempDir>; cleanups: (() => void)[]; flume?: FlumePeer } = { tmp: tempDir(prefix), cleanups: [] };
  afterAll(async () => {
    for (const c of scope.cleanups.splice(0)) c();
    await scope.flume?.stop(2000);
    scope.tmp.cleanup();
  }, 60_000);
  return scope;
}
