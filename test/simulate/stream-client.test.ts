/**
 * `flume simulate` runs the real netcat and syslogtcp sources, fed with lines by a simulated
 * client over the virtual network, where link faults (partition, lost requests, lost answers)
 * apply to the client's link.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { runCli, tempDir } from "../support/helpers.ts";
import { needsOpenssl } from "../support/requires.ts";
import { selfSignedCert } from "../support/tls.ts";

interface LinkJson {
  name: string;
  from: string;
  to: string;
  source: string;
  events: number;
  requests: number;
  answers: number;
  requestsFailed: number;
  heldByPartition: number;
  resets: number;
}

interface ResultJson {
  topology: string[];
  warnings: string[];
  produced: number;
  deliveredUnique: number;
  lost: number;
  duplicates: number;
  retries: number;
  completed: boolean;
  verdict: string;
  links: LinkJson[];
}

let dir: string;
let cleanup: () => void;

function conf(name: string, source: string[]): string {
  const file = path.join(dir, name);
  writeFileSync(
    file,
    [
      "a1.sources = r1",
      "a1.channels = c1",
      "a1.sinks = k1",
      ...source.map((l) => `a1.sources.r1.${l}`),
      "a1.sources.r1.channels = c1",
      "a1.channels.c1.type = memory",
      "a1.channels.c1.capacity = 100000",
      "a1.sinks.k1.type = logger",
      "a1.sinks.k1.channel = c1",
      "",
    ].join("\n"),
  );
  return file;
}

function simulate(args: string[]): ResultJson {
  const r = runCli(["simulate", ...args, "--json"], { timeout: 120_000 });
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
  return JSON.parse(r.stdout) as ResultJson;
}

beforeAll(() => {
  ({ dir, cleanup } = tempDir("flume-simulate-streams-"));
});
afterAll(() => cleanup());

describe("flume simulate with line sources over the virtual network", () => {
  test("a netcat source gets every line through a partition and lost requests; the client resends what was not answered", () => {
    const file = conf("netcat.conf", ["type = netcat", "bind = 0.0.0.0", "port = 44444"]);
    const r = simulate(["-f", file, "--events", "10000", "--seed", "3", "--partition", "client->a1@300ms-900ms", "--link-fail", "0.05"]);
    expect(r.topology).toContain("source r1 -> c1 (the real netcat source, fed by a simulated client over link client->a1, answered lines in batches of 100)");
    expect(r.links).toHaveLength(1);
    const link = r.links[0];
    expect({ name: link.name, from: link.from, to: link.to, source: link.source, events: link.events }).toEqual({ name: "client->a1", from: "client", to: "a1", source: "r1", events: 10000 });
    // The partition held packets, some requests were lost with their connection, and their batches were sent again.
    expect(link.heldByPartition).toBeGreaterThan(0);
    expect(link.requestsFailed).toBeGreaterThan(0);
    expect(r.retries).toBeGreaterThanOrEqual(link.requestsFailed);
    expect(link.answers).toBe(link.requests - link.requestsFailed);
    expect({ produced: r.produced, deliveredUnique: r.deliveredUnique, lost: r.lost, completed: r.completed, verdict: r.verdict }).toEqual({ produced: 10000, deliveredUnique: 10000, lost: 0, completed: true, verdict: "HELD" });
  });

  test("a syslogtcp source parses the client's messages; a partition delays them, and no message is lost", () => {
    const file = conf("syslog.conf", ["type = syslogtcp", "port = 5140"]);
    const r = simulate(["-f", file, "--events", "10000", "--seed", "3", "--partition", "300ms-900ms"]);
    expect(r.topology).toContain("source r1 -> c1 (the real syslogtcp source, fed by a simulated client over link client->a1, unanswered lines in batches of 100)");
    // Every event is counted by the number in its body: the parser gave "event N" as the body.
    expect(r.links[0].heldByPartition).toBeGreaterThan(0);
    expect(r.links[0].answers).toBe(0);
    expect({ produced: r.produced, deliveredUnique: r.deliveredUnique, lost: r.lost, duplicates: r.duplicates, completed: r.completed }).toEqual({ produced: 10000, deliveredUnique: 10000, lost: 0, duplicates: 0, completed: true });
  });

  needsOpenssl.test("multiport_syslogtcp runs too; what the virtual network does not carry (TLS, reverse DNS) is turned off with a warning", () => {
    const pair = selfSignedCert(dir);
    const file = conf("multiport.conf", ["type = multiport_syslogtcp", "ports = 5140 5141", "ssl = true", `keystore = ${pair.cert}`, `keystore-key = ${pair.key}`, "clientHostnameHeader = host"]);
    const r = simulate(["-f", file, "--events", "3000", "--partition", "100ms-200ms"]);
    expect(r.warnings).toContain("a1: source r1: TLS, clientHostnameHeader (a reverse DNS lookup) not simulated (its client's lines travel plain)");
    expect(r.links[0].heldByPartition).toBeGreaterThan(0);
    expect({ produced: r.produced, deliveredUnique: r.deliveredUnique, lost: r.lost }).toEqual({ produced: 3000, deliveredUnique: 3000, lost: 0 });
  });

  test("syslogtcp has no answers: lines lost with a reset connection never reach the channel", () => {
    const file = conf("syslog-fail.conf", ["type = syslogtcp", "port = 5140"]);
    const r = simulate(["-f", file, "--events", "10000", "--seed", "3", "--link-fail", "0.1"]);
    const lostOnLink = r.links[0].requestsFailed;
    expect(lostOnLink).toBeGreaterThan(0);
    // Each lost request is one batch of 100 lines, never sent again.
    expect(r.deliveredUnique).toBe(10000 - 100 * lostOnLink);
    expect(r.retries).toBe(0);
  });

  test("the same seed gives the same output: netcat with a partition, lost answers and a crash", () => {
    const file = conf("netcat-det.conf", ["type = netcat", "bind = 0.0.0.0", "port = 44444"]);
    const args = ["simulate", "-f", file, "--events", "5000", "--seed", "11", "--partition", "200ms-600ms", "--lose-answer", "0.05", "--link-fail", "0.05", "--crash-at", "300ms"];
    const a = runCli(args, { timeout: 120_000 });
    const b = runCli(args, { timeout: 120_000 });
    expect({ code: a.code, stderr: a.stderr }).toEqual({ code: 0, stderr: "" });
    expect(a.stdout).toContain("client->a1");
    expect(a.stdout).toContain("at-least-once: HELD");
    expect(b.stdout).toBe(a.stdout);
    // Another seed draws other faults.
    const c = runCli(args.map((x) => (x === "11" ? "12" : x)), { timeout: 120_000 });
    expect(c.code).toBe(0);
    expect(c.stdout).not.toBe(a.stdout);
  });

  test("in a tier, the client link of a netcat edge and the avro link to the collector each take their own partition", () => {
    const file = path.join(dir, "tier.conf");
    const agent = (name: string, source: string[], sink: string[]) => [
      `${name}.sources = r1`,
      `${name}.channels = c1`,
      `${name}.sinks = k1`,
      ...source.map((l) => `${name}.sources.r1.${l}`),
      `${name}.sources.r1.channels = c1`,
      `${name}.channels.c1.type = memory`,
      `${name}.channels.c1.capacity = 100000`,
      ...sink.map((l) => `${name}.sinks.k1.${l}`),
      `${name}.sinks.k1.channel = c1`,
    ];
    writeFileSync(
      file,
      [
        ...agent("edge1", ["type = netcat", "bind = 0.0.0.0", "port = 44444"], ["type = avro", "hostname = collector", "port = 4545"]),
        ...agent("collector", ["type = avro", "bind = 0.0.0.0", "port = 4545"], ["type = logger"]),
        "",
      ].join("\n"),
    );
    const r = simulate(["-f", file, "--events", "10000", "--partition", "client->edge1@200ms-600ms,edge1->collector@500ms-900ms"]);
    const links = Object.fromEntries(r.links.map((l) => [l.name, l]));
    expect(Object.keys(links).sort()).toEqual(["client->edge1", "edge1->collector"]);
    expect(links["client->edge1"].heldByPartition).toBeGreaterThan(0);
    expect(links["edge1->collector"].heldByPartition).toBeGreaterThan(0);
    expect(links["client->edge1"].events).toBe(10000);
    expect(links["edge1->collector"].events).toBe(10000);
    expect({ produced: r.produced, deliveredUnique: r.deliveredUnique, lost: r.lost, verdict: r.verdict }).toEqual({ produced: 10000, deliveredUnique: 10000, lost: 0, verdict: "HELD" });
  });

  test("a link fault naming an unknown link lists the client link among the links", () => {
    const file = conf("netcat-bad.conf", ["type = netcat", "bind = 0.0.0.0", "port = 44444"]);
    const r = runCli(["simulate", "-f", file, "--events", "100", "--partition", "edge1->a1@1s-2s"], { timeout: 120_000 });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("the links are client->a1");
  });
});
