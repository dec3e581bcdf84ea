import { describe, expect, test } from "bun:test";
import { definition as removeHeader } from "../../src/components/interceptors/remove-header.ts";
import { definition as regexFilter } from "../../src/components/interceptors/regex-filter.ts";
import { definition as searchReplace } from "../../src/components/interceptors/search-replace.ts";
import { bodyText, createEvent } from "../../src/core/event.ts";
import type { Interceptor } from "../../src/core/interceptor.ts";
import { build, configErrors } from "../support/interceptors.ts";

const body = (text: string) => createEvent(new TextEncoder().encode(text));

describe("Java regex spellings", () => {
  test("\\Q...\\E quotes its text literally", () => {
    const { component } = build<Interceptor>(regexFilter, { regex: "\\Qa.b(c)\\E$" });
    expect(component.intercept(body("x a.b(c)"))).not.toBeNull();
    expect(component.intercept(body("x aXb(c)"))).toBeNull();
    expect(component.intercept(body("x Qa.bcE"))).toBeNull();
  });

  test("\\Q without \\E quotes to the end of the pattern", () => {
    const { component } = build<Interceptor>(regexFilter, { regex: "^id\\Q+*" });
    expect(component.intercept(body("id+*"))).not.toBeNull();
    expect(component.intercept(body("iddd"))).toBeNull();
  });

  test("POSIX classes \\p{Alpha} \\p{Digit} \\p{Punct} match as in Java", () => {
    const { component } = build<Interceptor>(searchReplace, { searchPattern: "\\p{Alpha}+\\p{Digit}\\p{Punct}", replaceString: "X" });
    const e = component.intercept(body("abc1! p{Alpha}"));
    expect(bodyText(e as NonNullable<typeof e>)).toBe("X p{Alpha}");
  });
});

describe("Matcher.replaceAll group references", () => {
  test("$12 means group 12 when the pattern has 12 groups, else group 1 then '2'", () => {
    const twelve = build<Interceptor>(searchReplace, { searchPattern: "(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(l)", replaceString: "[$12]" }).component;
    expect(bodyText(twelve.intercept(body("abcdefghijkl")) as NonNullable<ReturnType<Interceptor["intercept"]>>)).toBe("[l]");
    const one = build<Interceptor>(searchReplace, { searchPattern: "(a)", replaceString: "[$12]" }).component;
    expect(bodyText(one.intercept(body("a")) as NonNullable<ReturnType<Interceptor["intercept"]>>)).toBe("[a2]");
  });
});

describe("Java character classes JavaScript reads differently", () => {
  test("a ']' first in a class is a literal, as in Java", () => {
    const { component } = build<Interceptor>(regexFilter, { regex: "^[]a]+$" });
    expect(component.intercept(body("]a]"))).not.toBeNull();
    expect(component.intercept(body("b"))).toBeNull();
  });

  test("intersections and nested classes are reported instead of matching something else", () => {
    expect(configErrors(regexFilter, { regex: "[a-z&&[^b]]" }).join()).toContain("intersections are not supported");
    expect(configErrors(regexFilter, { regex: "\\p{L}+" }).join()).toContain("\\p{L} is not supported");
  });
});

describe("more Java-only spellings", () => {
  test("(?x) ignores blanks and # comments in the pattern", () => {
    const { component } = build<Interceptor>(regexFilter, { regex: "(?x) ^ ERROR \\d+  # the code\n" });
    expect(component.intercept(body("ERROR42 x"))).not.toBeNull();
    expect(component.intercept(body("ERROR 42"))).toBeNull();
  });

  test("\\h is horizontal whitespace and \\R a line break, not the letters h and R", () => {
    const { component } = build<Interceptor>(searchReplace, { searchPattern: "a\\h+b\\Rc", replaceString: "X" });
    const e = component.intercept(body("a \tb\r\nc hbRc"));
    expect(bodyText(e as NonNullable<typeof e>)).toBe("X hbRc");
  });

  test("remove_header's matching is a whole-name match even under (?m)", () => {
    const { component } = build<Interceptor>(removeHeader, { matching: "(?m)ab" });
    const e = createEvent(new Uint8Array(), { ab: "1", "ab\ncd": "2" });
    expect(Object.keys(component.intercept(e)?.headers ?? {})).toEqual(["ab\ncd"]);
  });
});

describe("search_replace replacement strings Java's replaceAll would reject at every event", () => {
  test("a group the pattern does not have, a bare $, a trailing backslash are configuration errors", () => {
    expect(configErrors(searchReplace, { searchPattern: "(a)(b)", replaceString: "$3" }).join()).toContain("replaceString: refers to group $3, but the search pattern has 2 group(s)");
    expect(configErrors(searchReplace, { searchPattern: "a", replaceString: "US$ 5" }).join()).toContain('replaceString: has a "$" that starts no group reference');
    expect(configErrors(searchReplace, { searchPattern: "a", replaceString: "x\\" }).join()).toContain("replaceString: ends with a backslash");
    expect(configErrors(searchReplace, { searchPattern: "(?<y>a)", replaceString: "${z}" }).join()).toContain("replaceString: refers to group ${z}");
  });

  test("valid references, escaped dollars and $12 with one group (group 1 then '2') are accepted", () => {
    expect(configErrors(searchReplace, { searchPattern: "(?<y>a)(b)", replaceString: "${y}-$2-\\$-$0-$12" })).toEqual([]);
  });
});

describe("Java's end-of-input anchors", () => {
  test("$ also matches before a final line terminator, as Java's (a body ending in a newline)", () => {
    const { component } = build<Interceptor>(regexFilter, { regex: "ERROR$" });
    expect(component.intercept(body("disk ERROR\n"))).not.toBeNull();
    expect(component.intercept(body("disk ERROR\r\n"))).not.toBeNull();
    expect(component.intercept(body("ERROR\nmore"))).toBeNull();
  });

  test("\\z is the very end even under (?m); \\Z allows a final line terminator", () => {
    const z = build<Interceptor>(regexFilter, { regex: "(?m)x\\z" }).component;
    expect(z.intercept(body("x\ny"))).toBeNull();
    expect(z.intercept(body("y\nx"))).not.toBeNull();
    const Z = build<Interceptor>(regexFilter, { regex: "x\\Z" }).component;
    expect(Z.intercept(body("x\n"))).not.toBeNull();
  });

  test("search_replace of trailing blanks keeps the final newline, as Java's replaceAll", () => {
    const { component } = build<Interceptor>(searchReplace, { searchPattern: "[ \\t]+$", replaceString: "" });
    const e = component.intercept(body("a  \n"));
    expect(bodyText(e as NonNullable<typeof e>)).toBe("a\n");
  });

  test("octal escapes \\0nn are characters, not NUL followed by digits", () => {
    const { component } = build<Interceptor>(regexFilter, { regex: "^\\0101\\012$" });
    expect(component.intercept(body("A\n"))).not.toBeNull();
  });
});
