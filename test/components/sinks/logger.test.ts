import { describe, expect, test } from "bun:test";
import { createEvent } from "../../../src/core/event.ts";
import { dumpEvent } from "../../../src/components/sinks/logger.ts";
import { cleanupsAfterEach, freePort, netcatConf, sendLines, startAgentCli, tempConf } from "../../support/helpers.ts";

const cleanups = cleanupsAfterEach();

describe("logger sink format", () => {
  test("matches Flume's EventHelper.dumpEvent: Java map headers, hex dump of at most maxBytesToLog", () => {
    expect(dumpEvent(createEvent("Hello world!\r"), 16)).toBe("{ headers:{} body: 48 65 6C 6C 6F 20 77 6F 72 6C 64 21 0D          Hello world!. }");
    expect(dumpEvent(createEvent("0123456789abcdefXYZ", { a: "1", b: "2" }), 16)).toBe(
      "{ headers:{a=1, b=2} body: 30 31 32 33 34 35 36 37 38 39 61 62 63 64 65 66 0123456789abcdef }",
    );
    expect(dumpEvent(createEvent("0123456789abcdefXYZ"), 100)).toBe(
      "{ headers:{} body: 30 31 32 33 34 35 36 37 38 39 61 62 63 64 65 66 0123456789abcdef\n00000010 58 59 5A                                        XYZ }",
    );
    expect(dumpEvent(createEvent(""), 16)).toBe("{ headers:{} body: }");
  });
});

describe("logger sink in a running agent", () => {
  test("equal events are each logged: the sink's output is data, never folded into a repeat count", async () => {
    const port = await freePort();
    const { conf } = tempConf(cleanups, netcatConf(port, { sink: "logger" }), "a.conf");
    const agent = await startAgentCli(cleanups, ["run", "-f", conf, "--quiet"]);
    expect(await sendLines(port, "same\nsame\nsame\n")).toBe("OK\nOK\nOK\n");
    // A different last event: once it is logged, the three before it have been taken.
    expect(await sendLines(port, "end\n")).toBe("OK\n");
    await agent.waitFor(/body: 65 6E 64 +end \}/);
    const logged = agent.stderr.split("\n").filter((l) => l.includes(" [k1] "));
    expect(logged.map((l) => l.slice(25))).toEqual([
      ...Array(3).fill("INFO  [k1] Event: { headers:{} body: 73 61 6D 65                                     same }"),
      "INFO  [k1] Event: { headers:{} body: 65 6E 64                                        end }",
    ]);
    expect(agent.stderr).not.toContain("repeated");
    agent.child.kill("SIGTERM");
    expect(await agent.exited()).toBe(0);
  });
});
