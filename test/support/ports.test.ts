import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import net from "node:net";
import { freePort, freePorts } from "./ports.ts";
import { precondition } from "./requires.ts";

test("free ports taken one after the other are never the same, and each can be bound", async () => {
  // Without the memory, 300 draws among some 7,000 to 12,000 ports (150 one after the other, 150
  // at once) repeat a port with a probability over 97%.
  const ports = [...(await freePorts(150)), ...(await Promise.all(Array.from({ length: 150 }, () => freePort())))];
  expect(new Set(ports).size).toBe(ports.length);
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(ports[ports.length - 1], "127.0.0.1", resolve));
  await new Promise((resolve) => server.close(resolve));
});

const RANGE = "/proc/sys/net/ipv4/ip_local_port_range";
const needsPortRange = precondition(() => existsSync(RANGE), `needs ${RANGE} (Linux)`);

needsPortRange.test("the ports lie below the ephemeral range, where the kernel puts no bind(0) and no outgoing connection", async () => {
  const ephemeralLow = Number(readFileSync(RANGE, "utf8").trim().split(/\s+/)[0]);
  const ports = await freePorts(20);
  expect(ports.filter((p) => p >= ephemeralLow || p < 1024)).toEqual([]);
});
