/**
 * Thrift RPC between a live Apache Flume 1.11.0 and our agent (a child process of the CLI), both
 * ways, with the binary and the compact protocol. One Flume agent and one of ours run every flow:
 * an http source takes the test's events with their headers, a thrift sink sends them to the
 * other agent's thrift source, whose file_roll sink (header_and_text) shows what arrived.
 */
import { beforeAll, describe, expect } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { startFlume } from "../support/flume.ts";
import { deliveryReport, flumeClasspathBeforeAll, FlowsConf, freePorts, makeEvents, postAll, waitForPorts, waitForRolled, liveFlumeScope } from "../support/flume-live.ts";
import { startAgentCli } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";

flumeClasspathBeforeAll();

const PROTOCOLS = ["binary", "compact"] as const;
type Protocol = (typeof PROTOCOLS)[number];
const N = 500;

const scope = liveFlumeScope("flume-live-thrift-");
const { tmp, cleanups } = scope;

type Sides<T> = { flume: Record<Protocol, T>; ours: Record<Protocol, T> };
/** http source ports (events posted to flume[p] go Flume -> ours) and the receiving file_roll directories (received.flume[p] is Flume's). */
let setup: { httpPort: Sides<number>; received: Sides<string> } | undefined;

const dirs = (side: string) => ({ binary: path.join(tmp.dir, `${side}-in-binary`), compact: path.join(tmp.dir, `${side}-in-compact`) });

beforeAll(async () => {
  if (!needsJvm.holds) return;
  const free = await freePorts(8);
  const ports = () => ({ binary: free.pop()!, compact: free.pop()! });
  const thriftIn = { flume: ports(), ours: ports() };
  const httpPort = { flume: ports(), ours: ports() };
  const received = { flume: dirs("flume"), ours: dirs("ours") };
  // Flume's file_roll sink does not create its directory.
  for (const d of Object.values(received.flume)) mkdirSync(d, { recursive: true });
  const thriftSource = (port: number, protocol: Protocol) => ({ type: "thrift", bind: "127.0.0.1", port, protocol });
  const thriftSink = (port: number, protocol: Protocol) => ({ type: "thrift", hostname: "127.0.0.1", port, protocol, "batch-size": 100 });
  const confs = { flume: new FlowsConf(), ours: new FlowsConf() };
  for (const p of PROTOCOLS) {
    for (const [side, other] of [["flume", "ours"], ["ours", "flume"]] as const) {
      confs[side].toFileRoll(`in_${p}`, thriftSource(thriftIn[side][p], p), received[side][p]);
      confs[side].fromHttp(`out_${p}`, httpPort[side][p], thriftSink(thriftIn[other][p], p));
    }
  }
  // Ours first: Flume's thrift sinks connect when they start.
  const confFile = path.join(tmp.dir, "ours.properties");
  writeFileSync(confFile, confs.ours.toString());
  await startAgentCli(cleanups, ["run", "-f", confFile, "-n", "a1", "--no-reload-conf"], /agent a1 started/);
  scope.flume = await startFlume({ conf: confs.flume.toString(), dir: path.join(tmp.dir, "flume"), readyTimeoutMs: 120_000 });
  await waitForPorts([...Object.values(httpPort.flume), ...Object.values(thriftIn.flume)], "Flume's sources");
  setup = { httpPort, received };
}, 180_000);

describe("thrift RPC with a live Apache Flume 1.11.0", () => {
  for (const p of PROTOCOLS) {
    for (const [from, to] of [["flume", "ours"], ["ours", "flume"]] as const) {
      const name = (side: string) => (side === "flume" ? "Flume's" : "our");
      needsJvm.test(
        `${p} protocol: ${name(from)} thrift sink into ${name(to)} thrift source, ${N} events with headers, each once`,
        async () => {
          const s = setup!;
          const events = makeEvents(`${from}-to-${to}-${p}`, N);
          await postAll(s.httpPort[from][p], events);
          const received = await waitForRolled(s.received[to][p], N, `${name(to)} thrift source (${p})`);
          expect(deliveryReport(events, received)).toEqual({ missing: 0, repeated: [], unexpected: [], firstMissing: [] });
          expect(received).toHaveLength(N);
        },
        180_000,
      );
    }
  }
});
