import { describe, expect, test } from "bun:test";
import { figureLine, parseFigureLine } from "../../scripts/bench/_util.ts";

describe("benchmark figures: the footprint run counts the targets of the benchmarks it runs from their output", () => {
  test("a figure with a target is read back from its line, met or not", () => {
    const met = { what: "TAILDIR, 1,000 files: peak RSS", value: "90 MB", target: "< 150 MB (before: 1,168-1,232 MB)", met: true };
    const missed = { what: "TAILDIR, one 300 MB file, from the start: peak RSS", value: "94 MB", target: "<= 64 MB (before: 127 MB)", met: false };
    expect(figureLine(missed)).toBe("  TAILDIR, one 300 MB file, from the start: peak RSS: 94 MB  (target <= 64 MB (before: 127 MB): NOT met)");
    expect(parseFigureLine(figureLine(met))).toEqual(met);
    expect(parseFigureLine(figureLine(missed))).toEqual(missed);
  });

  test("lines without a target are not figures", () => {
    expect(parseFigureLine(figureLine({ what: "binary size", value: "120.2 MB" }))).toBeNull();
    expect(parseFigureLine("TAILDIR one 300 MB file: 4,947,774 lines/s (agent CPU 0.85 s); peak RSS 94 MB")).toBeNull();
  });
});
