import { expect, test } from "bun:test";
import dgram from "node:dgram";
import { listenUdp } from "../../src/net/datagram.ts";
import { waitUntil } from "../support/helpers.ts";

test("listenUdp hands on each datagram with its sender's address, and a bind error rejects", async () => {
  const got: { text: string; ip: string; port: number }[] = [];
  const errors: Error[] = [];
  const listener = await listenUdp({ host: "127.0.0.1", port: 0 }, (data, ip, port) => got.push({ text: new TextDecoder().decode(data), ip, port }), (err) => errors.push(err));
  const client = dgram.createSocket("udp4");
  try {
    await new Promise<void>((resolve) => client.bind(0, "127.0.0.1", () => resolve()));
    client.send("one", listener.port, "127.0.0.1");
    client.send("two", listener.port, "127.0.0.1");
    await waitUntil(() => got.length === 2, "both datagrams");
    const from = client.address().port;
    expect(got).toEqual([
      { text: "one", ip: "127.0.0.1", port: from },
      { text: "two", ip: "127.0.0.1", port: from },
    ]);
    expect(errors).toEqual([]);
    await expect(listenUdp({ host: "192.0.2.1", port: 0 }, () => {}, () => {})).rejects.toThrow(/EADDRNOTAVAIL|bind/);
  } finally {
    client.close();
    await listener.close();
  }
});
