import { describe, expect, test } from "bun:test";
import { didYouMean, editDistance, formatProblem, type Problem, sortProblems } from "../../src/config/problems.ts";

const problem = (over: Partial<Problem>): Problem => ({ file: "f.conf", line: 3, component: "source r1", key: "type", message: "m", severity: "error", code: "unknown-type", ...over });

describe("problem helpers", () => {
  test("edit distance is Levenshtein, case-insensitive", () => {
    expect(editDistance("memroy", "memory")).toBe(2);
    expect(editDistance("TAILDIR", "taildir")).toBe(0);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
  });

  test("did-you-mean suggests plausible typos only", () => {
    expect(didYouMean("memroy", ["memory", "file"])).toBe("memory");
    expect(didYouMean("timestmp", ["timestamp", "host", "static"])).toBe("timestamp");
    expect(didYouMean("keepalive", ["keep-alive", "capacity"])).toBe("keep-alive");
    expect(didYouMean("transactioncapacity", ["capacity", "transactionCapacity"])).toBe("transactionCapacity");
    expect(didYouMean("c3", ["c1"])).toBe("c1");
    expect(didYouMean("zz", ["a1"])).toBeUndefined();
    expect(didYouMean("kafka", ["memory", "file"])).toBeUndefined();
    expect(didYouMean("memory", ["memory"])).toBeUndefined();
  });

  test("format: file:line: severity: component: key: message (hint)", () => {
    expect(formatProblem(problem({ hint: "did you mean x?" }))).toBe("f.conf:3: error: source r1: type: m (did you mean x?)");
    expect(formatProblem(problem({ line: 0, component: "", key: "", severity: "warning" }))).toBe("f.conf: warning: m");
  });

  test("sorting: by line, errors before warnings", () => {
    const sorted = sortProblems([problem({ line: 5 }), problem({ line: 2, severity: "warning" }), problem({ line: 2 })]);
    expect(sorted.map((p) => `${p.line}${p.severity[0]}`)).toEqual(["2e", "2w", "5e"]);
  });
});
