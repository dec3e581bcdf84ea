import { describe, expect, test } from "bun:test";
import { colorEnabled, forStream, plainWhereNoColor } from "../../src/io/terminal.ts";

describe("colour policy", () => {
  const tty = { isTTY: true };
  const pipe = { isTTY: false };

  test("colour only on a terminal, off with NO_COLOR set to anything or TERM=dumb, FORCE_COLOR forces it", () => {
    expect(colorEnabled(tty, {})).toBe(true);
    expect(colorEnabled(pipe, {})).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: "true" })).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: "" })).toBe(true);
    expect(colorEnabled(tty, { TERM: "dumb" })).toBe(false);
    expect(colorEnabled(pipe, { FORCE_COLOR: "1" })).toBe(true);
    expect(colorEnabled(pipe, { FORCE_COLOR: "0" })).toBe(false);
    expect(colorEnabled(pipe, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(false);
  });

  test("text for a pipe loses its colour codes; a stand-in stream strips what is written through it", () => {
    expect(forStream(pipe, "\x1b[36mUSAGE\x1b[39m flume")).toBe("USAGE flume");
    const written: string[] = [];
    const stream = { isTTY: false, columns: 80, write: (s: string) => written.push(s) };
    const plain = plainWhereNoColor(stream);
    plain.write("\x1b[32m✔\x1b[39m agent a1 started\n");
    expect(written).toEqual(["✔ agent a1 started\n"]);
    expect(plain.columns).toBe(80);
  });
});
