/**
 * Free TCP ports of 127.0.0.1, for configs that need a fixed port (tests, harnesses, benchmarks).
 *
 * A port is found by binding port 0 and closing the socket, so the kernel may hand the same port
 * out again before its user binds it: Linux picks at random among some 7,000 ports here, so two
 * ports taken one after the other collide about once in 7,000, and a run of the suite takes
 * dozens of such pairs. No port handed out lately is handed out again; the suite runs its files
 * in one process, so this covers every caller. A port handed out long ago is bound or forgotten.
 */
import net from "node:net";

const REMEMBERED = 512;
const lately = new Set<number>();

function bindPortZero(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** A TCP port of 127.0.0.1 that was free a moment ago and was not handed out lately. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await bindPortZero();
    if (lately.has(port)) continue;
    lately.add(port);
    // A Set iterates in insertion order: the first is the oldest.
    if (lately.size > REMEMBERED) lately.delete(lately.values().next().value as number);
    return port;
  }
}

/** n distinct free ports. */
export async function freePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  return ports;
}
