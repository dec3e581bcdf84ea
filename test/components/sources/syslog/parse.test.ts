import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseRfc3164Timestamp, parseRfc5424Timestamp } from "../../../../src/components/sources/syslog/dates.ts";
import { type Frame, SyslogFrameDecoder } from "../../../../src/components/sources/syslog/framing.ts";
import { parseKeepFields, SyslogEventParser } from "../../../../src/components/sources/syslog/parse.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

function decodeAll(chunks: Uint8Array[], max = 2500): { text: string; part: string }[] {
  const d = new SyslogFrameDecoder(max);
  const out: Frame[] = [];
  for (const c of chunks) d.push(c, out);
  d.flush(out);
  return out.map((f) => ({ text: dec.decode(f.bytes), part: f.part }));
}

describe("frame decoder", () => {
  test("newline, CRLF and octet-counted messages; blank lines skipped", () => {
    const stream = "<1>a\r\n\n\n10 <2>b\nc d e<3>f\n";
    expect(decodeAll([enc.encode(stream)])).toEqual([
      { text: "<1>a", part: "whole" },
      { text: "<2>b\nc d e", part: "whole" },
      { text: "<3>f", part: "whole" },
    ]);
  });

  test("any split of the stream into chunks gives the same messages", () => {
    const messages = fc.array(fc.stringMatching(/^<[0-9]{1,3}>[ -~]{0,40}$/), { minLength: 1, maxLength: 20 });
    fc.assert(
      fc.property(messages, fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }), fc.array(fc.nat(), { maxLength: 10 }), (msgs, octet, cuts) => {
        const wire = msgs.map((m, i) => (octet[i] ? `${enc.encode(m).length} ${m}` : `${m}\n`)).join("");
        const bytes = enc.encode(wire);
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const chunks: Uint8Array[] = [];
        let last = 0;
        for (const p of points) {
          chunks.push(bytes.slice(last, p));
          last = p;
        }
        chunks.push(bytes.slice(last));
        expect(decodeAll(chunks).map((f) => f.text)).toEqual(msgs);
      }),
      { numRuns: 300 },
    );
  });

  test("a message of exactly eventSize is whole; one byte more is split into first + rest", () => {
    expect(decodeAll([enc.encode("<1>4567890\n")], 10)).toEqual([{ text: "<1>4567890", part: "whole" }]);
    expect(decodeAll([enc.encode("<1>45678901\n<2>x\n")], 10)).toEqual([
      { text: "<1>4567890", part: "first" },
      { text: "1", part: "rest" },
      { text: "<2>x", part: "whole" },
    ]);
  });

  test("an octet-counted frame cut short by the end of the stream is flushed as first (Incomplete)", () => {
    const d = new SyslogFrameDecoder(100);
    const out: Frame[] = [];
    d.push(enc.encode("50 <1>only part"), out);
    expect(out).toEqual([]);
    expect(d.midMessage).toBe(true);
    expect(d.flush(out).truncated).toBe(true);
    expect(out.map((f) => [dec.decode(f.bytes), f.part])).toEqual([["<1>only part", "first"]]);
  });
});

describe("timestamps", () => {
  test("RFC 5424 with offsets, Z, fractions of any length, and local time without a zone", () => {
    expect(parseRfc5424Timestamp("2003-10-11T22:14:15.003Z")).toBe(Date.UTC(2003, 9, 11, 22, 14, 15, 3));
    expect(parseRfc5424Timestamp("2003-08-24T05:14:15.000003-07:00")).toBe(Date.UTC(2003, 7, 24, 12, 14, 15, 0));
    expect(parseRfc5424Timestamp("2003-08-24T05:14:15.5+02:00")).toBe(Date.UTC(2003, 7, 24, 3, 14, 15, 500));
    expect(parseRfc5424Timestamp("2003-08-24T05:14:15")).toBe(new Date(2003, 7, 24, 5, 14, 15).getTime());
    expect(parseRfc5424Timestamp("2003-13-24T05:14:15Z")).toBeUndefined();
  });

  test("RFC 3164 takes the current year, moved back when it would be over a month ahead (Flume's rule)", () => {
    const now = Date.UTC(2024, 0, 3, 12, 0, 0);
    expect(parseRfc3164Timestamp("Jan  3 11:00:00", now, "utc")).toBe(Date.UTC(2024, 0, 3, 11, 0, 0));
    expect(parseRfc3164Timestamp("Dec 31 23:59:59", now, "utc")).toBe(Date.UTC(2023, 11, 31, 23, 59, 59));
    const late = Date.UTC(2023, 11, 31, 23, 0, 0);
    expect(parseRfc3164Timestamp("Jan  1 00:10:00", late, "utc")).toBe(Date.UTC(2024, 0, 1, 0, 10, 0));
    expect(parseRfc3164Timestamp("Foo  1 00:10:00", late, "utc")).toBeUndefined();
  });
});

describe("message parsing", () => {
  const parser = (keep = "none", dialect: "syslog" | "multiport" = "syslog") =>
    new SyslogEventParser({ dialect, keepFields: parseKeepFields(keep), rfc3164Zone: "utc", now: () => Date.UTC(2024, 5, 1) });

  test("RFC 5424 example from the RFC", () => {
    const { event } = parser().parse(enc.encode("<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - 'su root' failed"));
    expect(event.headers).toEqual({ Facility: "4", Severity: "2", priority: "34", version: "1", timestamp: String(Date.UTC(2003, 9, 11, 22, 14, 15, 3)), host: "mymachine.example.com" });
    expect(dec.decode(event.body)).toBe("su - ID47 - 'su root' failed");
  });

  test("keepFields lists put fields back in Flume's order", () => {
    const msg = enc.encode("<34>1 2003-10-11T22:14:15.003Z host app - - - text");
    expect(dec.decode(parser("priority timestamp hostname version").parse(msg).event.body)).toBe("<34>1 2003-10-11T22:14:15.003Z host app - - - text");
    expect(dec.decode(parser("hostname").parse(msg).event.body)).toBe("host app - - - text");
    expect(dec.decode(parser("true").parse(msg).event.body)).toBe("<34>1 2003-10-11T22:14:15.003Z host app - - - text");
  });

  test("a valid priority with an unknown layout keeps Facility/Severity and the whole text (syslogtcp)", () => {
    const { event, invalid } = parser().parse(enc.encode("<165>free text"));
    expect(invalid).toBeUndefined();
    expect(event.headers).toEqual({ Facility: "20", Severity: "5" });
    expect(dec.decode(event.body)).toBe("<165>free text");
  });

  test("multiport dialect: Priority/Version headers, nil timestamp is now, bad layout is Invalid", () => {
    const { event } = parser("none", "multiport").parse(enc.encode("<13>1 - host app - - - msg"));
    expect(event.headers).toEqual({ Priority: "13", Version: "1", Facility: "1", Severity: "5", timestamp: String(Date.UTC(2024, 5, 1)), host: "host" });
    expect(parser("none", "multiport").parse(enc.encode("<13>free text")).event.headers).toEqual({ "flume.syslog.status": "Invalid" });
  });

  test("body bytes are the message's own bytes (multi-byte characters intact)", () => {
    const { event } = parser().parse(enc.encode("<13>Jan  2 03:04:05 host héllo wörld ✓"));
    expect(dec.decode(event.body)).toBe("héllo wörld ✓");
  });
});

describe("the RFC 3164 fast path (parseRange) reads messages exactly as the regular expressions do", () => {
  const make = () => new SyslogEventParser({ dialect: "syslog", keepFields: null, rfc3164Zone: "utc", now: () => Date.UTC(2024, 5, 1) });
  const pick = <T>(xs: readonly T[]) => fc.constantFrom(...xs);
  // Mostly well-formed parts, with the near misses the expressions refuse.
  const part = {
    pri: fc.oneof(fc.integer({ min: 0, max: 191 }).map(String), pick(["007", "1000", "", "x", "23"])),
    month: pick(["May", "Dec", "Jan", "may", "MAY", "Foo", "Ma", "Mayy"]),
    gap1: pick([" ", "  ", "   ", "\t", ""]),
    day: pick(["6", "16", "31", "00", "123", "x"]),
    time: pick(["07:08:09", "23:59:60", "7:08:09", "07:08", "24:00:00", "07-08-09"]),
    gap2: pick([" ", "  ", "\t", ""]),
    host: pick(["web-01", "a", "host.example.com", "u@h", "_x", "-bad", "", "h".repeat(70), "wéb"]),
    gap3: pick([" ", "  ", "", "\r"]),
    msg: pick(["GET /index.html 200", "", " leading", "naïve", "tab\there", "x".repeat(300), "a\nb"]),
  };
  const message = fc.record(part).map((p) => `<${p.pri}>${p.month}${p.gap1}${p.day} ${p.time}${p.gap2}${p.host}${p.gap3}${p.msg}`);

  test("same headers, body and Invalid verdict as parse(), for any message around the layout", () => {
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 5 }), (texts) => {
        const fast = make();
        const slow = make();
        for (const text of texts) {
          // Inside a larger read, as the decoder hands them over.
          const bytes = enc.encode(`xx${text}yy`);
          const got = fast.parseRange(bytes, 2, bytes.length - 2);
          const want = slow.parse(bytes.subarray(2, bytes.length - 2));
          expect(got.headers).toEqual(want.event.headers);
          expect([...got.body]).toEqual([...want.event.body]);
          expect(fast.invalid).toBe(want.invalid);
        }
      }),
      { numRuns: 3000 },
    );
  });

  test("the usual message takes the fast path: its strings are shared, its body is its own", () => {
    const p = make();
    // parse() is the expressions' path: the usual message must not need it.
    p.parse = () => {
      throw new Error("took the slow path");
    };
    const line = enc.encode("<134>May  6 07:08:09 web-01 nginx[4242]: GET /index.html HTTP/1.1 200 512");
    const a = p.parseRange(line, 0, line.length);
    const b = p.parseRange(line, 0, line.length);
    expect(a.headers).toEqual({ Facility: "16", Severity: "6", priority: "134", timestamp: String(Date.UTC(2024, 4, 6, 7, 8, 9)), host: "web-01" });
    expect(dec.decode(a.body)).toBe("nginx[4242]: GET /index.html HTTP/1.1 200 512");
    expect(a.body.byteOffset).toBe(0);
    expect(a.body.buffer.byteLength).toBe(a.body.length);
    expect(a.body).not.toBe(b.body);
  });

  test("its headers, made when first read, are the same object after, take writes and can be replaced", () => {
    const p = make();
    const line = enc.encode("<13>Dec 31 23:59:59 db-2 kernel: oops");
    const e = p.parseRange(line, 0, line.length);
    expect(Object.keys(e.headers)).toEqual(["Facility", "Severity", "priority", "timestamp", "host"]);
    e.headers.port = "5140";
    expect(e.headers).toBe(e.headers);
    expect(e.headers).toMatchObject({ Facility: "1", Severity: "5", host: "db-2", port: "5140" });
    expect(JSON.parse(JSON.stringify(e)).headers).toEqual(e.headers);
    e.headers = { only: "this" };
    expect(e.headers).toEqual({ only: "this" });
  });
});
