import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { ConfigurationError } from "../../src/core/errors.ts";
import { EscapeTemplate, Escaper, lookupHostNames, MissingTimestampError, sanitizeHeaderValue, ZonedCalendar } from "../../src/pipeline/bucket-path.ts";

const hosts = { localhost: "web-1", ip: "10.0.0.7", fqdn: "web-1.example.com" };
const esc = (over: Partial<ConstructorParameters<typeof Escaper>[0]> = {}, now = () => 0) =>
  new Escaper({ timeZone: "UTC", round: false, roundValue: 1, roundUnit: "second", useLocalTimeStamp: false, useLocalTimeStampKey: "hdfs.useLocalTimeStamp", ...over }, hosts, now);
const path = (t: string) => new EscapeTemplate(t, "hdfs.path");

// 2024-03-05 07:08:09.123 UTC, a Tuesday, day 65 of a leap year.
const TS = Date.UTC(2024, 2, 5, 7, 8, 9, 123);
const h = { timestamp: String(TS) };

describe("Flume's escapes (BucketPath), as hdfs.path and kafka.topic take them", () => {
  test("every date shorthand, written as Java's SimpleDateFormat writes it", () => {
    const e = esc();
    const cases: Record<string, string> = {
      a: "Tue", A: "Tuesday", b: "Mar", B: "March", c: "Tue Mar 5 07:08:09 2024", d: "05", e: "5", D: "03/05/24",
      H: "07", I: "07", j: "065", k: "7", l: "7", m: "03", n: "3", M: "08", p: "AM", s: String(Math.floor(TS / 1000)),
      S: "09", t: String(TS), y: "24", Y: "2024", z: "+0000",
    };
    for (const [c, want] of Object.entries(cases)) expect({ c, got: e.escape(path(`%${c}`), h) }).toEqual({ c, got: want });
    expect(e.escape(path("100%%"), h)).toBe("100%");
  });

  test("a time zone moves the fields and %z; PM hours in 12-hour form", () => {
    const e = esc({ timeZone: "America/Los_Angeles" });
    const evening = { timestamp: String(Date.UTC(2024, 6, 1, 3, 30)) };
    expect(e.escape(path("%Y-%m-%d %H:%M %I%p %z"), evening)).toBe("2024-06-30 20:30 08PM -0700");
  });

  test("%{header}, %[localhost] %[IP] %[FQDN]; a missing header is empty", () => {
    const e = esc();
    expect(e.escape(path("/logs/%{app}/%[localhost]-%[IP]-%[FQDN]/%{nope}x"), { app: "billing" })).toBe("/logs/billing/web-1-10.0.0.7-web-1.example.com/x");
    expect(() => path("/x/%[host]")).toThrow(ConfigurationError);
    expect(() => new EscapeTemplate("logs-%[host]", "kafka.topic")).toThrow(/kafka\.topic: the static escape %\[host\] matches none of localhost, IP, FQDN/);
  });

  test("escape writes header values as they are (Flume's escapeString); only directory and name encode them", () => {
    const t = path("logs.%{app}");
    expect(esc().escape(t, { app: "a/b:c%d" })).toBe("logs.a/b:c%d");
    expect(esc().directory(t, { app: "a/b:c%d" })).toBe("logs.a%2Fb%3Ac%25d");
  });

  test("a template says what it needs: the event's time, this host's names, nothing (literal)", () => {
    const kinds = (t: string) => {
      const c = new EscapeTemplate(t, "kafka.topic");
      return { isLiteral: c.isLiteral, needsTime: c.needsTime, needsHosts: c.needsHosts };
    };
    expect(kinds("events")).toEqual({ isLiteral: true, needsTime: false, needsHosts: false });
    expect(kinds("events-%{app}")).toEqual({ isLiteral: false, needsTime: false, needsHosts: false });
    expect(kinds("events-%Y")).toEqual({ isLiteral: false, needsTime: true, needsHosts: false });
    expect(kinds("events-%[IP]")).toEqual({ isLiteral: false, needsTime: false, needsHosts: true });
  });

  test("this host's names: the host name, an address, a DNS name (or the host name)", async () => {
    const names = await lookupHostNames(() => "192.0.2.1");
    expect(names.localhost).toBe((await import("node:os")).hostname());
    expect(names.ip).toMatch(/^[\d.]+$|:/);
    expect(names.fqdn.length).toBeGreaterThan(0);
  });

  test("rounding down to 10 minutes, 2 hours, 15 seconds: the date fields and %s move, %t keeps the header", () => {
    expect(esc({ round: true, roundValue: 10, roundUnit: "minute" }).escape(path("%H%M%S %t"), h)).toBe(`070000 ${TS}`);
    expect(esc({ round: true, roundValue: 2, roundUnit: "hour" }).escape(path("%H:%M:%S %s"), h)).toBe(`06:00:00 ${Date.UTC(2024, 2, 5, 6) / 1000}`);
    expect(esc({ round: true, roundValue: 15, roundUnit: "second" }).escape(path("%M:%S"), h)).toBe("08:00");
    // In a zone half an hour off UTC, hours round on its own clock.
    expect(esc({ round: true, roundValue: 1, roundUnit: "hour", timeZone: "Asia/Kolkata" }).escape(path("%H:%M"), h)).toBe("12:00");
  });

  test("useLocalTimeStamp takes the clock and needs no header", () => {
    expect(esc({ useLocalTimeStamp: true }, () => TS).escape(path("%Y%m%d/%t"), {})).toBe(`20240305/${TS}`);
  });

  test("an event without a usable timestamp is refused with what to do (the batch rolls back, as in Flume)", () => {
    expect(() => esc().escape(path("/logs/%Y"), {})).toThrow(MissingTimestampError);
    expect(() => esc().escape(path("/logs/%Y"), {})).toThrow(/timestamp interceptor .* hdfs\.useLocalTimeStamp = true/);
    // A sink without useLocalTimeStamp (the Kafka sink) offers only the interceptor.
    const topic = new EscapeTemplate("logs-%Y", "kafka.topic");
    expect(() => esc({ useLocalTimeStampKey: undefined }).escape(topic, {})).toThrow('kafka.topic "logs-%Y" needs the event\'s time, but the event has no timestamp header: add a timestamp interceptor to the source');
    expect(() => esc({ useLocalTimeStampKey: undefined }).escape(topic, {})).not.toThrow(/useLocalTimeStamp/);
    expect(() => esc().escape(path("/logs/%Y"), { timestamp: "yesterday" })).toThrow(/"yesterday" is not a number/);
    // A path without date escapes needs no timestamp.
    expect(esc().escape(path("/logs/%{app}"), { app: "x" })).toBe("/logs/x");
  });

  test("an unknown time zone is a configuration error naming the sink's setting", () => {
    expect(() => new ZonedCalendar("Mars/Olympus", "hdfs.timeZone")).toThrow(/hdfs\.timeZone: unknown time zone "Mars\/Olympus"/);
    expect(() => esc({ timeZone: "Mars/Olympus", timeZoneKey: "hdfs.timeZone" })).toThrow(/hdfs\.timeZone: unknown time zone/);
  });
});

describe("header values cannot leave hdfs.path's directory", () => {
  test("separators, '..' and control characters in a header are encoded", () => {
    const e = esc();
    const t = path("/flume/events/%{app}/%{day}");
    expect(e.directory(t, { app: "../../etc", day: "passwd" })).toBe("/flume/events/..%2F..%2Fetc/passwd");
    expect(e.directory(t, { app: "..", day: "." })).toBe("/flume/events/%2E%2E/%2E");
    expect(e.directory(t, { app: "a\nb\u0000", day: "c:d\\e%f" })).toBe("/flume/events/a%0Ab%00/c%3Ad%5Ce%25f");
    // Two headers that make ".." together.
    expect(e.directory(path("/flume/%{a}%{b}/x"), { a: ".", b: "." })).toBe("/flume/%2E%2E/x");
    expect(e.name(new EscapeTemplate("%{p}", "hdfs.filePrefix"), { p: ".." })).toBe("%2E%2E");
    expect(sanitizeHeaderValue("plain-value_1.2")).toBe("plain-value_1.2");
  });

  test("for any header values, the directory starts with the literal part and has no '.' or '..' segment after it", () => {
    const e = esc();
    const templates = ["/flume/in/%{a}", "/flume/in/x-%{a}/%{b}", "/flume/in/%{a}%{b}/%Y"].map(path);
    fc.assert(
      fc.property(fc.constantFrom(...templates), fc.string(), fc.string(), (t, a, b) => {
        const dir = e.directory(t, { a, b, timestamp: String(TS) });
        expect(dir.startsWith("/flume/in/")).toBe(true);
        const rest = dir.slice("/flume/in/".length).split("/");
        expect(rest.length).toBe(t.template.split("/").length - 3);
        for (const seg of rest) expect(seg === "." || seg === "..").toBe(false);
        // eslint-disable-next-line no-control-regex
        expect(/[\x00-\x1f\\:]/.test(dir)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});
