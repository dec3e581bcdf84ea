/**
 * Harness for the thrift tests: Python code generated from our IDL at test time (Debian's
 * thrift-compiler), Debian's python3-thrift as third-party client and server (client.py and
 * server.py next to this file), and our thrift source and sink built from Flume-style
 * properties. Tests that use python declare themselves with needsThrift (requires.ts).
 */
import { afterAll, beforeAll } from "bun:test";
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { componentContext } from "../../../src/components/component.ts";
import { ChannelProcessor } from "../../../src/core/channel-processor.ts";
import { type Clock, systemClock } from "../../../src/core/clock.ts";
import { MemoryLogger } from "../../../src/core/logger.ts";
import type { Network } from "../../../src/net/network.ts";
import type { MemoryChannel } from "../../../src/core/memory-channel.ts";
import { ReplicatingChannelSelector } from "../../../src/core/selectors.ts";
import { definition as thriftSink, type ThriftSink } from "../../../src/components/sinks/thrift.ts";
import { definition as thriftSource, type ThriftSource } from "../../../src/components/sources/thrift.ts";
import { FIXTURES, ROOT, tempDir, waitUntil } from "../helpers.ts";
import { needsThrift } from "../requires.ts";
import { memoryChannel } from "../rpc.ts";

/** Debian's interpreter: the pyenv python3 on PATH has no thrift module. */
export const PYTHON = "/usr/bin/python3";
const SCRIPTS = path.join(ROOT, "test", "support", "thrift");
const IDL_DIR = path.join(FIXTURES, "thrift");

/**
 * For a test file: generates the Python code once (beforeAll, where needsThrift holds) and
 * removes it after the file's tests; read .dir inside the tests.
 */
export function generatedPython(): { dir: string } {
  const generated = { dir: "", cleanup: () => {} };
  beforeAll(() => {
    if (needsThrift.holds) Object.assign(generated, generatePython());
  });
  afterAll(() => generated.cleanup());
  return generated;
}

/** Generates Python code from flume.thrift and flume-extended.thrift; returns the directory and its cleanup. */
export function generatePython(): { dir: string; cleanup: () => void } {
  const tmp = tempDir("flume-thrift-py-");
  for (const idl of ["flume.thrift", "flume-extended.thrift"]) {
    const r = spawnSync("thrift", ["--gen", "py", "-out", tmp.dir, path.join(IDL_DIR, idl)], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`thrift --gen py ${idl} failed (needs thrift-compiler): ${r.stderr ?? r.error}`);
  }
  return tmp;
}

export interface PyEvent {
  headers?: Record<string, string>;
  body?: string;
  /** body_size bytes, byte i being i % 251 (what bodyPattern makes). */
  body_size?: number;
  extra?: Record<string, unknown>;
}

export type PyCall = ({ method: "append"; event: PyEvent } | { method: "appendBatch"; events: PyEvent[] } | { method: "raw"; name: string }) & { args?: unknown[] };
export type PyResult = { status?: string; exception?: { type: number; message: string }; error?: string };

export function bodyPattern(size: number): Buffer {
  const b = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) b[i] = i % 251;
  return b;
}

/**
 * Runs client.py; resolves with one result per call made. Asynchronous: the source may run in
 * this process. With ca the connection is TLS (the server verified against ca); with cert and
 * key the client presents that certificate.
 */
export function pythonClient(
  gen: string,
  port: number,
  protocol: string,
  calls: PyCall[],
  opts: { module?: "flume_thrift" | "flume_thrift_extended"; ca?: string; cert?: string; key?: string } = {},
): Promise<PyResult[]> {
  const tls = opts.ca ? [opts.ca, ...(opts.cert && opts.key ? [opts.cert, opts.key] : [])] : [];
  const args = [path.join(SCRIPTS, "client.py"), gen, opts.module ?? "flume_thrift", "127.0.0.1", String(port), protocol, ...tls];
  const child = spawn(PYTHON, args, { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  child.stdin.end(JSON.stringify(calls));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`python client timed out\n${out}\n${err}`));
    }, 10_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`python client exited ${code}\n${out}\n${err}`));
      resolve(out.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as PyResult));
    });
  });
}

export interface PyServerCall {
  method: string;
  events: { headers: Record<string, string>; body: string }[];
  answer: string;
}

/** Starts server.py with an answer script (see there); kill() it when done. */
export async function pythonServer(gen: string, protocol: string, answers: string[], tls?: { cert: string; key: string }) {
  const args = [path.join(SCRIPTS, "server.py"), gen, protocol, answers.join(","), ...(tls ? [tls.cert, tls.key] : [])];
  const child = spawn(PYTHON, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`python server did not start\n${out}\n${err}`)), 10_000);
    const check = () => {
      const m = /^listening (\d+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout.off("data", check);
        resolve(Number(m[1]));
      }
    };
    child.stdout.on("data", check);
    child.on("exit", (code) => reject(new Error(`python server exited ${code}\n${err}`)));
  });
  return {
    port,
    /** The calls received so far. */
    calls(): PyServerCall[] {
      return out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as PyServerCall);
    },
    /** The calls received, once there are n (their lines may arrive after the answers did). */
    async waitForCalls(n: number): Promise<PyServerCall[]> {
      await waitUntil(() => this.calls().length >= n, `${n} calls at the python server (got ${this.calls().length})\n${err}`, 5000, 5);
      return this.calls();
    },
    kill(): Promise<void> {
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      child.kill("SIGKILL");
      return new Promise((r) => child.once("exit", () => r()));
    },
  };
}

/** A thrift source from Flume-style properties, started on an ephemeral port of 127.0.0.1. */
export async function startThriftSource(props: Record<string, string> = {}, channel: MemoryChannel = memoryChannel(), network?: Network) {
  const { options, errors } = thriftSource.parse({ bind: "127.0.0.1", port: "0", ...props });
  const problems = [...errors, ...(thriftSource.validate?.(options) ?? [])];
  if (problems.length > 0) throw new Error(JSON.stringify(problems));
  const logger = new MemoryLogger();
  const source: ThriftSource = thriftSource.create(options, componentContext("r1", { logger, network }));
  source.setChannelProcessor(new ChannelProcessor(new ReplicatingChannelSelector([channel])));
  await source.start();
  return { source, channel, logger, port: source.port };
}

/** A thrift sink to 127.0.0.1 from Flume-style properties, draining channel. */
export function makeThriftSink(props: Record<string, string>, channel: MemoryChannel, clock: Clock = systemClock, network?: Network) {
  const { options, errors } = thriftSink.parse({ hostname: "127.0.0.1", ...props });
  const problems = [...errors, ...(thriftSink.validate?.(options) ?? [])];
  if (problems.length > 0) throw new Error(JSON.stringify(problems));
  const logger = new MemoryLogger();
  const sink: ThriftSink = thriftSink.create(options, componentContext("k1", { clock, logger, network }));
  sink.setChannel(channel);
  return { sink, logger };
}

export const warnings = (logger: MemoryLogger) => logger.lines.filter((l) => l.level === "warn" || l.level === "error").map((l) => l.message);
