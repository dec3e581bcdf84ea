/**
 * Avro RPC between a live Apache Flume 1.11.0 and our agent (a child process of the CLI), both
 * ways, plain, with deflate and with TLS; and Flume's own avro-client into our avro source.
 * One Flume agent and one of ours run every flow: an http source takes the test's events with
 * their headers, an avro sink sends them to the other agent's avro source, whose file_roll sink
 * (header_and_text) shows what arrived.
 */
import { beforeAll, describe, expect } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { startFlume } from "../support/flume.ts";
import { deliveryReport, flumeClasspathBeforeAll, FlowsConf, freePorts, makeEvents, postAll, runFlumeMain, type SentEvent, waitForPorts, waitForRolled, liveFlumeScope } from "../support/flume-live.ts";
import { type AgentProcess, startAgentCli } from "../support/helpers.ts";
import { needsJvm } from "../support/jvm.ts";
import { needsOpenssl } from "../support/requires.ts";
import { makePki, pkcs12Keystore } from "../support/tls.ts";

const needs = needsJvm.and(needsOpenssl);
flumeClasspathBeforeAll();

const VARIANTS = ["plain", "deflate", "tls"] as const;
type Variant = (typeof VARIANTS)[number];
const N = 500;
const PASSWORD = "changeit";

const scope = liveFlumeScope("flume-live-avro-");
const { tmp, cleanups } = scope;

interface Setup {
  /** http source ports: events posted to flume[v] go Flume -> ours, to ours[v] ours -> Flume. */
  httpPort: { flume: Record<Variant, number>; ours: Record<Variant, number> };
  /** Where each receiving file_roll sink writes: in.flume[v] is Flume's (events sent by ours). */
  received: { flume: Record<Variant, string>; ours: Record<Variant, string> };
  /** Our avro source for Flume's avro-client, and its output. */
  cliPort: number;
  cliOut: string;
  ours: AgentProcess;
}
let setup: Setup | undefined;


/** Server TLS for Flume's avro source (a PKCS12 keystore), client TLS for Flume's avro sink (a JKS truststore made by keytool). */
function tlsMaterial(dir: string) {
  const pki = makePki(dir);
  const keystore = pkcs12Keystore(pki.server, path.join(dir, "server.p12"), PASSWORD);
  const truststore = path.join(dir, "truststore.jks");
  const r = spawnSync("keytool", ["-importcert", "-noprompt", "-alias", "ca", "-file", pki.ca.cert, "-keystore", truststore, "-storetype", "JKS", "-storepass", PASSWORD], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`keytool -importcert failed: ${r.stderr}${r.stdout}`);
  return { caPem: pki.ca.cert, keystore, truststore };
}

beforeAll(async () => {
  if (!needs.holds) return;
  const tls = tlsMaterial(tmp.dir);
  const free = await freePorts(13);
  const ports = () => ({ plain: free.pop()!, deflate: free.pop()!, tls: free.pop()! });
  const avroIn = ports(); // our avro sources
  const flumeAvroIn = ports(); // Flume's avro sources
  const httpPort = { flume: ports(), ours: ports() };
  const cliPort = free.pop()!;
  const received = {
    flume: { plain: path.join(tmp.dir, "flume-in-plain"), deflate: path.join(tmp.dir, "flume-in-deflate"), tls: path.join(tmp.dir, "flume-in-tls") },
    ours: { plain: path.join(tmp.dir, "ours-in-plain"), deflate: path.join(tmp.dir, "ours-in-deflate"), tls: path.join(tmp.dir, "ours-in-tls") },
  };
  // Flume's file_roll sink does not create its directory.
  for (const d of Object.values(received.flume)) mkdirSync(d, { recursive: true });
  const cliOut = path.join(tmp.dir, "ours-in-cli");

  // What each variant adds to an avro source and an avro sink, on each side.
  const serverProps: Record<Variant, { flume: Record<string, string>; ours: Record<string, string> }> = {
    plain: { flume: {}, ours: {} },
    deflate: { flume: { "compression-type": "deflate" }, ours: { "compression-type": "deflate" } },
    tls: {
      flume: { ssl: "true", keystore: tls.keystore, "keystore-password": PASSWORD, "keystore-type": "PKCS12" },
      ours: { ssl: "true", keystore: tls.keystore, "keystore-password": PASSWORD, "keystore-type": "PKCS12" },
    },
  };
  const clientProps: Record<Variant, { flume: Record<string, string>; ours: Record<string, string> }> = {
    plain: { flume: {}, ours: {} },
    deflate: { flume: { "compression-type": "deflate", "compression-level": "6" }, ours: { "compression-type": "deflate", "compression-level": "6" } },
    tls: {
      flume: { ssl: "true", truststore: tls.truststore, "truststore-password": PASSWORD, "truststore-type": "JKS" },
      ours: { ssl: "true", truststore: tls.caPem },
    },
  };
  const avroSink = (port: number, extra: Record<string, string>) => ({ type: "avro", hostname: "127.0.0.1", port, "batch-size": 100, ...extra });
  const avroSource = (port: number, extra: Record<string, string>) => ({ type: "avro", bind: "127.0.0.1", port, ...extra });

  const oursConf = new FlowsConf();
  const flumeConf = new FlowsConf();
  for (const v of VARIANTS) {
    oursConf.toFileRoll(`in_${v}`, avroSource(avroIn[v], serverProps[v].ours), received.ours[v]);
    oursConf.fromHttp(`out_${v}`, httpPort.ours[v], avroSink(flumeAvroIn[v], clientProps[v].ours));
    flumeConf.toFileRoll(`in_${v}`, avroSource(flumeAvroIn[v], serverProps[v].flume), received.flume[v]);
    flumeConf.fromHttp(`out_${v}`, httpPort.flume[v], avroSink(avroIn[v], clientProps[v].flume));
  }
  oursConf.toFileRoll("cli", avroSource(cliPort, {}), cliOut);

  // Ours first: Flume's avro sinks connect when they start.
  const confFile = path.join(tmp.dir, "ours.properties");
  writeFileSync(confFile, oursConf.toString());
  const ours = await startAgentCli(cleanups, ["run", "-f", confFile, "-n", "a1", "--no-reload-conf"], /agent a1 started/);
  scope.flume = await startFlume({ conf: flumeConf.toString(), dir: path.join(tmp.dir, "flume"), readyTimeoutMs: 120_000 });
  await waitForPorts([...Object.values(httpPort.flume), ...Object.values(flumeAvroIn)], "Flume's sources");
  setup = { httpPort, received, cliPort, cliOut, ours };
}, 180_000);

function expectEachOnce(sent: SentEvent[], received: SentEvent[]): void {
  expect(deliveryReport(sent, received)).toEqual({ missing: 0, repeated: [], unexpected: [], firstMissing: [] });
  expect(received).toHaveLength(sent.length);
}

describe("avro RPC with a live Apache Flume 1.11.0", () => {
  for (const v of VARIANTS) {
    needs.test(
      `${v}: Flume's avro sink into our avro source, ${N} events with headers, each once`,
      async () => {
        const s = setup!;
        const events = makeEvents(`flume-to-ours-${v}`, N);
        await postAll(s.httpPort.flume[v], events);
        expectEachOnce(events, await waitForRolled(s.received.ours[v], N, `our avro source (${v})`));
      },
      180_000,
    );

    needs.test(
      `${v}: our avro sink into Flume's avro source, ${N} events with headers, each once`,
      async () => {
        const s = setup!;
        const events = makeEvents(`ours-to-flume-${v}`, N);
        await postAll(s.httpPort.ours[v], events);
        expectEachOnce(events, await waitForRolled(s.received.flume[v], N, `Flume's avro source (${v})`));
      },
      180_000,
    );
  }

  needs.test(
    "Flume's avro-client (AvroCLIClient -F file -R headerFile) into our avro source: every line once, with the headers",
    async () => {
      const s = setup!;
      const lines = Array.from({ length: N }, (_, i) => `avro-client line ${i} ✓`);
      const file = path.join(tmp.dir, "lines.txt");
      const headerFile = path.join(tmp.dir, "headers.properties");
      writeFileSync(file, `${lines.join("\n")}\n`);
      writeFileSync(headerFile, "source=avro-client\nhost=test-box\n");
      const r = await runFlumeMain("org.apache.flume.client.avro.AvroCLIClient", ["-H", "127.0.0.1", "-p", String(s.cliPort), "-F", file, "-R", headerFile]);
      expect({ code: r.code, errors: r.output.split("\n").filter((l) => /ERROR|Exception/.test(l)) }).toEqual({ code: 0, errors: [] });
      const expected = lines.map((body) => ({ headers: { source: "avro-client", host: "test-box" }, body }));
      expectEachOnce(expected, await waitForRolled(s.cliOut, N, "our avro source (avro-client)"));
    },
    180_000,
  );
});
