import { describe, expect, test } from "bun:test";
import { parseProperties } from "../../src/config/properties.ts";

function keys(text: string): string[] {
  return [...parseProperties(text, "t.properties").entries.keys()];
}

describe("java.util.Properties corner cases", () => {
  test("a line holding only a backslash, continued by a blank line, is no entry (Java skips the empty logical line)", () => {
    expect(keys("a=1\n\\\n\nb=2\n")).toEqual(["a", "b"]);
    expect(keys("a=1\n  \\\n   \nb=2\n")).toEqual(["a", "b"]);
  });

  test("a lone backslash on the last line followed by a newline is no entry either (Java 8; JDK 9+ loads an empty key)", () => {
    expect(keys("a=1\n\\\n")).toEqual(["a"]);
  });

  test("a lone backslash at the very end of the file (no newline) is an empty key, as Java loads it", () => {
    expect(keys("a=1\n\\")).toEqual(["a", ""]);
  });

  test("an odd number of backslashes before '=' escapes the separator; an even number does not", () => {
    const p = parseProperties("k\\\\\\=x=1\nj\\\\=2\nm\\:n:3\n", "t.properties");
    expect(Object.fromEntries([...p.entries].map(([k, e]) => [k, e.value]))).toEqual({ "k\\=x": "1", "j\\": "2", "m:n": "3" });
  });
});

describe("java.util.Properties corner cases (continued)", () => {
  test("continuation lines ending in a backslash at the very end of the file give an empty key, as Java loads it", () => {
    expect(keys("k=1\n\\\n\\")).toEqual(["k", ""]);
  });
});
