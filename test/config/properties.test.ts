import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { decodeProperties, parseProperties } from "../../src/config/properties.ts";

function values(text: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, e] of parseProperties(text, "t.properties").entries) out[k] = e.value;
  return out;
}

function lines(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, e] of parseProperties(text, "t.properties").entries) out[k] = e.line;
  return out;
}

describe("Java .properties syntax", () => {
  test("# and ! start comments only at the beginning of a line (after blanks)", () => {
    expect(values("# a=1\n! b=2\n   # c=3\n\t! d=4\ne = 5 # not a comment\n")).toEqual({ e: "5 # not a comment" });
  });

  test("=, : and whitespace separate key and value, with blanks around them", () => {
    expect(values("a=1\nb:2\nc 3\nd = 4\ne : 5\nf \t 6\ng\t=\t7\nh=\ni\nj =\n")).toEqual({
      a: "1",
      b: "2",
      c: "3",
      d: "4",
      e: "5",
      f: "6",
      g: "7",
      h: "",
      i: "",
      j: "",
    });
  });

  test("only the first separator counts; a second one belongs to the value", () => {
    expect(values("a==b\nb:=c\nc = : d\nd e=f\nurl = http://host:80/x?y=z\n")).toEqual({
      a: "=b",
      b: "=c",
      c: ": d",
      d: "e=f",
      url: "http://host:80/x?y=z",
    });
  });

  test("leading blanks of the value are dropped, trailing ones kept (as Java does)", () => {
    expect(values("a =   x y  \n")).toEqual({ a: "x y  " });
  });

  test("escaped separators and blanks belong to the key", () => {
    expect(values("my\\ key = v\na\\=b = c\nx\\:y:z\n")).toEqual({ "my key": "v", "a=b": "c", "x:y": "z" });
  });

  test("escapes \\t \\n \\r \\f \\uXXXX \\\\ and \\x -> x", () => {
    expect(values("a = \\t|\\n|\\r|\\f|\\u0041\\u00e9|\\\\|\\q|\\#\n")).toEqual({ a: "\t|\n|\r|\f|A\u00e9|\\|q|#" });
    expect(values("\\u0061\\u0062 = key from escapes\n")).toEqual({ ab: "key from escapes" });
  });

  test("a backslash at the end of a line continues the entry; the next line's leading blanks are dropped", () => {
    const text = "a = one \\\n      two \\\n\t\tthree\nb = 2\n";
    expect(values(text)).toEqual({ a: "one two three", b: "2" });
    expect(lines(text)).toEqual({ a: 1, b: 4 });
  });

  test("an even number of trailing backslashes is an escaped backslash, not a continuation", () => {
    expect(values("a = x\\\\\nb = y\n")).toEqual({ a: "x\\", b: "y" });
    expect(values("a = x\\\\\\\nmore\n")).toEqual({ a: "x\\more" });
  });

  test("a continuation line starting with # is content; a comment ending in a backslash does not continue", () => {
    expect(values("a = x\\\n  # y\n")).toEqual({ a: "x# y" });
    expect(values("# comment \\\nb = 1\n")).toEqual({ b: "1" });
  });

  test("continuation at the end of the file drops the backslash", () => {
    expect(values("a = x\\")).toEqual({ a: "x" });
  });

  test("keys spanning lines via continuation", () => {
    expect(values("a1.sources.r1.\\\n  type = seq\n")).toEqual({ "a1.sources.r1.type": "seq" });
  });

  test("\\n, \\r\\n and \\r line ends all count lines", () => {
    expect(lines("a=1\r\nb=2\rc=3\n\nd=4")).toEqual({ a: 1, b: 2, c: 3, d: 5 });
  });

  test("a byte order mark is ignored", () => {
    expect(values("\uFEFFa=1\n")).toEqual({ a: "1" });
  });

  test("later duplicate keys win, keep the first key's position, and are reported with both lines", () => {
    const r = parseProperties("a = 1\nb = 2\na = 3\n", "f.conf");
    expect([...r.entries.keys()]).toEqual(["a", "b"]);
    expect(r.entries.get("a")).toEqual({ key: "a", value: "3", file: "f.conf", line: 3 });
    expect(r.duplicates).toHaveLength(1);
    expect(r.duplicates[0].entry.line).toBe(3);
    expect(r.duplicates[0].overridden.line).toBe(1);
  });

  test("a malformed \\u escape is an error with its line; other entries still load", () => {
    const r = parseProperties("a = 1\nb = \\u12G4\nc = 3\n", "f.conf");
    expect(r.errors).toEqual([{ file: "f.conf", line: 2, message: 'malformed \\uXXXX escape "\\u12G4"' }]);
    expect([...r.entries.keys()]).toEqual(["a", "c"]);
  });

  test("every entry remembers file and line", () => {
    const r = parseProperties("\n# x\n  a1.sources = r1\n\na1.channels = c1\n", "conf/flume.conf");
    expect(r.entries.get("a1.sources")).toEqual({ key: "a1.sources", value: "r1", file: "conf/flume.conf", line: 3 });
    expect(r.entries.get("a1.channels")?.line).toBe(5);
  });

  test("files are read as UTF-8, or as ISO-8859-1 (as Flume) when they are not valid UTF-8", () => {
    expect(decodeProperties(new TextEncoder().encode("a = caf\u00e9\n"))).toBe("a = caf\u00e9\n");
    expect(decodeProperties(Uint8Array.from([0x61, 0x3d, 0x63, 0x61, 0x66, 0xe9]))).toBe("a=caf\u00e9");
  });

  // Java's Properties.store escaping: anything written that way must read back identically.
  function storeEscape(s: string, isKey: boolean): string {
    let out = "";
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (c === "\\") out += "\\\\";
      else if (c === "\t") out += "\\t";
      else if (c === "\n") out += "\\n";
      else if (c === "\r") out += "\\r";
      else if (c === "\f") out += "\\f";
      else if (c === " " && (isKey || i === 0)) out += "\\ ";
      else if ("=:#!".includes(c)) out += "\\" + c;
      else if (c < " " || c > "~") out += "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0");
      else out += c;
    }
    return out;
  }

  test("round-trips any key and value escaped as Properties.store does", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 12, unit: "binary" }), fc.string({ maxLength: 20, unit: "binary" }), { maxKeys: 8 }), (dict) => {
        const text = Object.entries(dict)
          .map(([k, v]) => `${storeEscape(k, true)}=${storeEscape(v, false)}`)
          .join("\n");
        expect(values(text)).toEqual(dict);
      }),
      { numRuns: 300 },
    );
  });
});

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

  test("continuation lines ending in a backslash at the very end of the file give an empty key, as Java loads it", () => {
    expect(keys("k=1\n\\\n\\")).toEqual(["k", ""]);
  });
});
