import { describe, expect, test } from "bun:test";
import { definition as httpSource } from "../../../src/components/sources/http.ts";
import { rig, takeAll, text, until } from "../../support/network.ts";

describe("http source stopping with a request in flight", () => {
  test("stop() lets the request finish: 200 only for committed events, and the keep-alive connection is closed at once", async () => {
    const r = rig(httpSource, { bind: "127.0.0.1", port: "0" }, { capacity: 2, transactionCapacity: 2, keepAlive: 2 });
    await r.source.start();
    const url = `http://127.0.0.1:${r.source.port}/`;
    const body = JSON.stringify([{ body: "a" }, { body: "b" }]);
    expect((await fetch(url, { method: "POST", body })).status).toBe(200);
    // The channel is full: this request waits for room (keepAlive) while the source stops.
    const inFlight = fetch(url, { method: "POST", body: JSON.stringify([{ body: "c" }, { body: "d" }]) });
    await until(() => r.source.counter.get("AppendBatchReceivedCount") === 2, 5000, "the second request");
    const stopped = r.source.stop();
    const drained = (await takeAll(r.channel)).map(text);
    const res = await inFlight;
    await stopped;
    expect(res.status).toBe(200);
    expect(res.headers.get("connection")).toBe("close");
    expect([...drained, ...(await takeAll(r.channel)).map(text)]).toEqual(["a", "b", "c", "d"]);
  });
});
