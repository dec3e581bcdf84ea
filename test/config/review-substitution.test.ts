import { describe, expect, test } from "bun:test";
import { substitute, type SubstitutionSources } from "../../src/config/substitution.ts";

const props: Record<string, string> = { A: "aval" };
const src: SubstitutionSources = { env: { HOME: "/h" }, sys: {}, property: (k) => props[k] };

describe("defaults with variables (${X:-${Y}})", () => {
  test("the default is not looked at when the variable is set: an unset variable there is no error", () => {
    const r = substitute("${env:HOME:-${env:NOT_SET_ANYWHERE}}", src);
    expect(r).toEqual({ value: "/h", issues: [] });
  });

  test("the default is used, and its variables resolved, when the variable is unset", () => {
    expect(substitute("${env:NOT_SET_ANYWHERE:-${A}/x}", src)).toEqual({ value: "aval/x", issues: [] });
  });

  test("an unset variable in a default that is used is still reported", () => {
    const r = substitute("${env:NOT_SET_1:-${env:NOT_SET_2}}", src);
    expect(r.issues.map((i) => i.message)).toEqual(["environment variable NOT_SET_2 is not set"]);
  });

  test("a variable in the name part is resolved before the lookup", () => {
    expect(substitute("${env:${B:-HOME}:-none}", src)).toEqual({ value: "/h", issues: [] });
  });
});
