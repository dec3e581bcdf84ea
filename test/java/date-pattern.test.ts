import { describe, expect, test } from "bun:test";
import { DatePattern } from "../../src/java/date-pattern.ts";
import { definition as regexExtractor } from "../../src/components/interceptors/regex-extractor.ts";
import { createEvent } from "../../src/core/event.ts";
import type { Interceptor } from "../../src/core/interceptor.ts";
import { build } from "../support/interceptors.ts";

const body = (text: string) => createEvent(new TextEncoder().encode(text));

describe("date patterns with month names (Joda MMM / MMMM)", () => {
  test("an Apache access log timestamp dd/MMM/yyyy:HH:mm:ss Z parses", () => {
    const p = new DatePattern("dd/MMM/yyyy:HH:mm:ss Z");
    expect(p.parse("10/Oct/2000:13:55:36 -0700")).toBe(Date.UTC(2000, 9, 10, 20, 55, 36));
  });

  test("a full month name with MMMM parses; a number where MMM wants a name does not", () => {
    expect(new DatePattern("MMMM d, yyyy HH:mm Z").parse("March 5, 2021 08:00 +0000")).toBe(Date.UTC(2021, 2, 5, 8, 0));
    expect(new DatePattern("dd MMM yyyy Z").parse("05 03 2021 +0000")).toBeUndefined();
  });

  test("the millis serializer of regex_extractor turns a syslog-style date into epoch millis", () => {
    const { component } = build<Interceptor>(regexExtractor, {
      regex: "^\\[([^\\]]+)\\]",
      serializers: "s1",
      "serializers.s1.name": "ts",
      "serializers.s1.type": "org.apache.flume.interceptor.RegexExtractorInterceptorMillisSerializer",
      "serializers.s1.pattern": "dd/MMM/yyyy:HH:mm:ss Z",
    });
    const e = component.intercept(body("[10/Oct/2000:13:55:36 -0700] GET /"));
    expect(e?.headers.ts).toBe(String(Date.UTC(2000, 9, 10, 20, 55, 36)));
  });
});

describe("two-digit years (Joda yy: 80 years back, 19 ahead, as SimpleDateFormat)", () => {
  const now = Date.UTC(2026, 5, 1);
  test("yy lands between now-80 and now+19 years", () => {
    const p = new DatePattern("yy-MM-dd Z");
    expect(p.parse("70-01-01 +0000", now)).toBe(Date.UTC(1970, 0, 1));
    expect(p.parse("46-01-01 +0000", now)).toBe(Date.UTC(1946, 0, 1));
    expect(p.parse("45-01-01 +0000", now)).toBe(Date.UTC(2045, 0, 1));
    expect(p.parse("26-03-04 +0000", now)).toBe(Date.UTC(2026, 2, 4));
  });

  test("a yy field not followed by a number also reads a full year, as Joda parses leniently", () => {
    expect(new DatePattern("dd/MM/yy Z").parse("04/03/2021 +0000", now)).toBe(Date.UTC(2021, 2, 4));
  });
});

describe("Joda-Time details the millis serializer follows (checked against joda-time)", () => {
  const millis = (pattern: string, value: string) => {
    const { component } = build<Interceptor>(regexExtractor, {
      regex: "^(.*)$",
      serializers: "s1",
      "serializers.s1.name": "ts",
      "serializers.s1.type": "org.apache.flume.interceptor.RegexExtractorInterceptorMillisSerializer",
      "serializers.s1.pattern": pattern,
    });
    return component.intercept(createEvent(new TextEncoder().encode(value)))?.headers.ts;
  };

  test("a date without a year is in 2000, Joda's default year", () => {
    expect(millis("MMM dd HH:mm:ss Z", "Oct 10 13:55:36 +0000")).toBe(String(Date.UTC(2000, 9, 10, 13, 55, 36)));
  });

  test("a time of day alone stays on 1970-01-01", () => {
    expect(millis("HH:mm Z", "07:05 +0000")).toBe(String(Date.UTC(1970, 0, 1, 7, 5)));
  });

  test("a day the month does not have is no date (no rolling over to March)", () => {
    expect(new DatePattern("yyyy-MM-dd Z").parse("2012-02-30 +0000")).toBeUndefined();
    expect(new DatePattern("yyyy-MM-dd Z").parse("2012-02-29 +0000")).toBe(Date.UTC(2012, 1, 29));
  });

  test("D is the day of the year", () => {
    expect(new DatePattern("yyyy-DDD Z").parse("2012-045 +0000")).toBe(Date.UTC(2012, 1, 14));
  });
});
