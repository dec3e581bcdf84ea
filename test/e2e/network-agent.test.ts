import { afterEach, describe, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { freePort, startCli, tempDir } from "../support/helpers.ts";
import { runLogger } from "../support/network.ts";
import { needsLogger } from "../support/requires.ts";

type Agent = ReturnType<typeof startCli>;
const running: Agent[] = [];
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const a of running.splice(0)) {
    if (a.child.exitCode === null && a.child.signalCode === null) {
      a.child.kill("SIGTERM");
      await a.exited();
    }
  }
  for (const c of cleanups.splice(0)) await c();
});


async function waitFor(cond: () => boolean, ms: number, what: string, agent: Agent): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}\n${agent.stdout}\n${agent.stderr}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("flume run: syslog and http sources, interceptors, http sink", () => {
  needsLogger.test("logger and JSON posts go through interceptors to a collector over the http sink", async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const received: { body: string; type?: string }[] = [];
    const collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (d) => chunks.push(d));
      req.on("end", () => {
        received.push({ body: Buffer.concat(chunks).toString(), type: req.headers["content-type"] });
        res.end("ok");
      });
    });
    await new Promise<void>((r) => collector.listen(0, "127.0.0.1", () => r()));
    cleanups.push(() => new Promise<void>((r) => { collector.closeAllConnections(); collector.close(() => r()); }));
    const collectorPort = (collector.address() as net.AddressInfo).port;
    const [syslogPort, httpPort] = [await freePort(), await freePort()];
    const conf = `a1.sources = sys web
a1.channels = c1
a1.sinks = k1
a1.sources.sys.type = syslogtcp
a1.sources.sys.host = 127.0.0.1
a1.sources.sys.port = ${syslogPort}
a1.sources.sys.channels = c1
a1.sources.sys.interceptors = drop mark
a1.sources.sys.interceptors.drop.type = regex_filter
a1.sources.sys.interceptors.drop.regex = DEBUG
a1.sources.sys.interceptors.drop.excludeEvents = true
a1.sources.sys.interceptors.mark.type = search_replace
a1.sources.sys.interceptors.mark.searchPattern = ^app:
a1.sources.sys.interceptors.mark.replaceString = [syslog]
a1.sources.web.type = http
a1.sources.web.bind = 127.0.0.1
a1.sources.web.port = ${httpPort}
a1.sources.web.channels = c1
a1.sources.web.interceptors = ts
a1.sources.web.interceptors.ts.type = org.apache.flume.interceptor.TimestampInterceptor$Builder
a1.channels.c1.type = memory
a1.sinks.k1.type = http
a1.sinks.k1.channel = c1
a1.sinks.k1.endpoint = http://127.0.0.1:${collectorPort}/ingest
a1.sinks.k1.contentTypeHeader = text/x-log
a1.sinks.k1.backoff.2XX = false
a1.sinks.k1.rollback.2XX = false
`;
    const file = path.join(tmp.dir, "a1.conf");
    writeFileSync(file, conf);
    const agent = startCli(["run", "-f", file, "-n", "a1", "--no-reload-conf"]);
    running.push(agent);
    // The sources are up once the http source answers.
    const deadline = Date.now() + 15000;
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${httpPort}/`, { method: "POST", body: JSON.stringify([{ headers: {}, body: "from http" }]) });
        if (res.status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`agent did not start\n${agent.stdout}\n${agent.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const msg of ["hello one", "DEBUG noise", "hello two"]) {
      const r = await runLogger(["--tcp", "--rfc3164", "-n", "127.0.0.1", "-P", String(syslogPort), "-t", "app", msg]);
      expect(r.code).toBe(0);
    }
    await waitFor(() => received.length >= 3, 15000, "3 posts at the collector", agent);
    const bodies = received.map((r) => r.body).sort();
    expect(bodies).toEqual(["[syslog] hello one", "[syslog] hello two", "from http"]);
    expect(received.every((r) => r.type === "text/x-log")).toBe(true);
  });
});
