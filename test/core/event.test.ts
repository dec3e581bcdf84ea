// Events and the typed errors of the core.
import { describe, expect, test } from "bun:test";
import { ChannelException, ChannelFullException, ConfigurationError, EventDeliveryException, FlumeError, TransactionStateError } from "../../src/core/errors.ts";
import { bodyText, createEvent } from "../../src/core/event.ts";

describe("Event", () => {
  test("a string body is encoded as UTF-8; headers are plain strings", () => {
    const e = createEvent("héllo ✓", { host: "h1" });
    expect(e.body).toBeInstanceOf(Uint8Array);
    expect(e.body.length).toBe(Buffer.byteLength("héllo ✓"));
    expect(bodyText(e)).toBe("héllo ✓");
    expect(e.headers).toEqual({ host: "h1" });
  });

  test("a byte body is kept as given, and headers default to empty", () => {
    const body = new Uint8Array([0, 255, 10]);
    const e = createEvent(body);
    expect(e.body).toBe(body);
    expect(e.headers).toEqual({});
  });
});

describe("errors", () => {
  test("each error is its own class, named after itself, under FlumeError", () => {
    const full = new ChannelFullException("no room");
    expect(full).toBeInstanceOf(ChannelException);
    expect(full).toBeInstanceOf(FlumeError);
    expect(full.name).toBe("ChannelFullException");
    expect(new EventDeliveryException("x").name).toBe("EventDeliveryException");
    expect(new TransactionStateError("x")).toBeInstanceOf(FlumeError);
    expect(new TransactionStateError("x")).not.toBeInstanceOf(ChannelException);
  });

  test("a configuration error names its key and component", () => {
    const e = new ConfigurationError("capacity", "must be greater than 0, got -1", "c1");
    expect(e.key).toBe("capacity");
    expect(e.component).toBe("c1");
    expect(e.message).toBe("c1: capacity: must be greater than 0, got -1");
    expect(new ConfigurationError("type", "missing").message).toBe("type: missing");
  });

  test("a cause is kept", () => {
    const cause = new Error("disk");
    expect(new ChannelException("failed", { cause }).cause).toBe(cause);
  });
});
