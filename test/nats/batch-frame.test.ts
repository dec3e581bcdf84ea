import { expect, test } from "bun:test";
import { bodyEvent, bodyText, createEvent, lineEvent } from "../../src/core/event.ts";
import { BatchFrameError, decodeBatch, encodeBatch, framedSize, splitBatch } from "../../src/nats/batch-frame.ts";

const encoder = new TextEncoder();

test("a batch round-trips headers (any strings) and bodies (binary, empty, a line of a larger read), each event in the documented layout", () => {
  const read = encoder.encode("skip|the line|skip");
  const events = [createEvent(new Uint8Array([0, 255, 13, 10]), { "a:b": "x\r\ny", "": "empty name", "☃": " padded " }), bodyEvent(new Uint8Array(0)), lineEvent(read, 5, 13)];
  const total = 4 + events.reduce((n, e) => n + framedSize(e), 0);
  const data = encodeBatch(events, 0, 3, total);
  expect(data.length).toBe(total);
  // u32 count 3; first event: u16 3 headers; u16 name length 3, "a:b", u32 value length 4, "x\r\ny".
  expect([...data.subarray(0, 15)]).toEqual([0, 0, 0, 3, 0, 3, 0, 3, 97, 58, 98, 0, 0, 0, 4]);
  const back = decodeBatch(data, "1");
  expect(back.map((e) => e.headers)).toEqual([{ "a:b": "x\r\ny", "": "empty name", "☃": " padded " }, {}, {}]);
  expect([...back[0].body]).toEqual([0, 255, 13, 10]);
  expect(back.slice(1).map(bodyText)).toEqual(["", "the line"]);
});

test("a truncated or damaged batch and an unknown version are refused with a typed error, never a crash or a huge allocation", () => {
  const data = encodeBatch([createEvent("hello", { k: "v" })], 0, 1, 4 + framedSize(createEvent("hello", { k: "v" })));
  for (let cut = 0; cut < data.length; cut++) expect(() => decodeBatch(data.subarray(0, cut), "1")).toThrow(BatchFrameError);
  expect(() => decodeBatch(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0, 0]), "1")).toThrow(/truncated/);
  expect(() => decodeBatch(data, "2")).toThrow(/Flume-Batch version 2 is not one this agent reads \(it reads 1\)/);
});

test("splitBatch cuts at the byte limit, in order, and names an event that cannot fit alone", () => {
  const events = Array.from({ length: 10 }, (_, i) => createEvent("x".repeat(94), { n: String(i) }));
  // 2+4+94 body + 2+1+4+1 header = 108 bytes each.
  expect(framedSize(events[0])).toBe(108);
  const { ends, totals } = splitBatch(events, 4 + 3 * 108, () => new Error("no"));
  expect(ends).toEqual([3, 6, 9, 10]);
  expect(totals).toEqual([328, 328, 328, 112]);
  const big = [...events.slice(0, 2), createEvent("y".repeat(500))];
  expect(() => splitBatch(big, 400, (i, size) => new Error(`event ${i} is ${size} bytes`))).toThrow("event 2 is 506 bytes");
});
