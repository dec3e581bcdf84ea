import { expect, test } from "bun:test";
import net from "node:net";
import { freePort, freePorts } from "./ports.ts";

test("free ports taken one after the other are never the same (the kernel hands a closed port out again about once in 7,000 draws), and each can be bound", async () => {
  // Without the memory, 300 binds of port 0 (150 one after the other, 150 at once) repeat a port
  // with a probability over 99%.
  const ports = [...(await freePorts(150)), ...(await Promise.all(Array.from({ length: 150 }, () => freePort())))];
  expect(new Set(ports).size).toBe(ports.length);
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(ports[ports.length - 1], "127.0.0.1", resolve));
  await new Promise((resolve) => server.close(resolve));
});
