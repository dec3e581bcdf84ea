import { describe, expect, test } from "bun:test";
import { headers as natsHeaders } from "@nats-io/nats-core";
import { readHeaders } from "../../src/core/event.ts";
import { ESCAPED_HEADERS, eventOfMessage, fromNatsHeaders, toNatsHeaders } from "../../src/nats/headers.ts";

const body = new TextEncoder().encode("a line");

describe("Flume headers through NATS headers", () => {
  test("headers NATS can carry travel as plain headers, the others escaped, and all come back exactly", () => {
    const flume = { host: "web-1", "with space": "x", "nats-reserved": "y", multi: "line\nbreak", padded: " v ", [ESCAPED_HEADERS]: "mine" };
    const h = toNatsHeaders(() => natsHeaders(), flume);
    expect(h?.get("host")).toBe("web-1");
    expect(h?.has("with space")).toBe(false);
    expect(h?.has(ESCAPED_HEADERS)).toBe(true);
    expect(fromNatsHeaders(h)).toEqual(flume);
  });

  test("the server's own Nats-* headers are not Flume headers", () => {
    const h = natsHeaders();
    h.set("Nats-Msg-Id", "abc");
    h.set("app", "1");
    expect(fromNatsHeaders(h)).toEqual({ app: "1" });
  });

  test("a message with no Flume headers gives an event whose headers were never made", () => {
    const idOnly = natsHeaders();
    idOnly.set("Nats-Msg-Id", "abc");
    for (const h of [undefined, idOnly]) {
      const e = eventOfMessage(body, h);
      expect(e.body).toBe(body);
      expect(Object.isFrozen(readHeaders(e))).toBe(true);
      expect(readHeaders(e)).toEqual({});
    }
    const withHeaders = natsHeaders();
    withHeaders.set("app", "1");
    const e = eventOfMessage(body, withHeaders);
    expect(e.headers).toEqual({ app: "1" });
    expect(Object.isFrozen(readHeaders(e))).toBe(false);
  });
});
