import { describe, expect, test } from "bun:test";
import { createEvent } from "../../../src/core/event.ts";
import { dumpEvent } from "../../../src/components/sinks/logger.ts";

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
