// PutListeners: what Channel.onPutsCommitted registers, notified once per commit.
import { describe, expect, test } from "bun:test";
import { PutListeners } from "../../src/core/put-listeners.ts";

describe("PutListeners", () => {
  test("notify calls every listener added; the function add returns removes only its own", () => {
    const listeners = new PutListeners();
    const calls: string[] = [];
    const offA = listeners.add(() => calls.push("a"));
    listeners.add(() => calls.push("b"));
    listeners.notify();
    expect(calls).toEqual(["a", "b"]);
    offA();
    listeners.notify();
    expect(calls).toEqual(["a", "b", "b"]);
  });
});
