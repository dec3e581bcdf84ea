import { describe, expect, test } from "bun:test";
import dgram from "node:dgram";
import { definition as netcatUdp } from "../../../src/components/sources/netcat-udp.ts";
import type { Source } from "../../../src/core/source.ts";
import { collect, rig, stoppedAfterEach, text } from "../../support/network.ts";
import { waitUntil } from "../../support/helpers.ts";

const started = stoppedAfterEach<Source>();

function sendUdp(port: number, ...messages: (string | Uint8Array)[]): Promise<number> {
  return new Promise((resolve) => {
    const client = dgram.createSocket("udp4");
    let left = messages.length;
    for (const m of messages)
      client.send(m, port, "127.0.0.1", () => {
        if (--left === 0) {
          const local = client.address().port;
          client.close();
          resolve(local);
        }
      });
  });
}

describe("netcatudp", () => {
  test("each line of a datagram is an event; remoteAddressHeader holds /ip:port", async () => {
    const r = rig(netcatUdp, { bind: "127.0.0.1", port: "0", remoteAddressHeader: "remote" });
    await r.source.start();
    started.push(r.source);
    const from = await sendUdp(r.source.port, "one\n", "two\nthree\n");
    const events = await collect(r.channel, 3);
    expect(events.map(text).sort()).toEqual(["one", "three", "two"]);
    expect(events[0].headers.remote).toBe(`/127.0.0.1:${from}`);
    expect(r.source.counter.get("EventAcceptedCount")).toBe(3);
  });

  test("binary datagrams pass through as bytes and the source keeps serving", async () => {
    const r = rig(netcatUdp, { bind: "127.0.0.1", port: "0" });
    await r.source.start();
    started.push(r.source);
    await sendUdp(r.source.port, new Uint8Array([0xff, 0x00, 0xfe]));
    await sendUdp(r.source.port, "next");
    const events = await collect(r.channel, 2);
    expect(events.map((e) => [...e.body])).toContainEqual([0xff, 0x00, 0xfe]);
    expect(events.map(text)).toContain("next");
    expect(events[0].headers).toEqual({});
  });

  test("when the channel is full, datagrams beyond maxBacklog are dropped, counted and logged", async () => {
    const r = rig(netcatUdp, { bind: "127.0.0.1", port: "0", maxBacklog: "5" }, { capacity: 2, transactionCapacity: 2, keepAlive: 0 });
    await r.source.start();
    started.push(r.source);
    await sendUdp(r.source.port, ...Array.from({ length: 40 }, (_, i) => `m${i}`));
    await waitUntil(() => r.source.counter.get("ChannelWriteFail") > 0, "a refused write counted", 5000);
    expect(r.logger.lines.some((l) => l.level === "error" && l.message.includes("127.0.0.1:"))).toBe(true);
  });
});
