/**
 * Free TCP ports of 127.0.0.1, for configs that need a fixed port (tests, harnesses, benchmarks).
 *
 * A port is free when a probe binds it; its user binds it a moment later, and in between another
 * process may take it. On Linux, ports are picked below the ephemeral range
 * (net.ipv4.ip_local_port_range), where the kernel never hands one out for bind(0) or an outgoing
 * connection: the brokers, JVMs and clients the suite starts open thousands of those. Elsewhere a
 * port comes from bind(0). No port handed out lately is handed out again; the suite runs its
 * files in one process, so this covers every caller. A port handed out long ago is bound or
 * forgotten.
 */
import { readFileSync } from "node:fs";
import net from "node:net";

const REMEMBERED = 512;
const lately = new Set<number>();

/** Ports picked from below the ephemeral range at most; fewer would make picks collide more often. */
const SPAN = 12_000;

/** The ports to pick from, below Linux's ephemeral range; null where it cannot be read. */
function quietRange(): { low: number; count: number } | null {
  let text: string;
  try {
    text = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8");
  } catch {
    return null;
  }
  const ephemeralLow = Number(text.trim().split(/\s+/)[0]);
  const low = Math.max(1024, ephemeralLow - SPAN);
  return Number.isInteger(ephemeralLow) && ephemeralLow - low >= 1000 ? { low, count: ephemeralLow - low } : null;
}

const QUIET = quietRange();

/** Binds the port (0: any) and closes it again; resolves with the port bound, or null when it is taken. */
function probe(port: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" || err.code === "EACCES" ? resolve(null) : reject(err)));
    s.listen(port, "127.0.0.1", () => {
      const bound = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(bound));
    });
  });
}

async function pickPort(): Promise<number> {
  if (QUIET) {
    for (let i = 0; i < 50; i++) {
      const port = await probe(QUIET.low + Math.floor(Math.random() * QUIET.count));
      if (port !== null) return port;
    }
  }
  const port = await probe(0);
  if (port === null) throw new Error("no free TCP port on 127.0.0.1");
  return port;
}

/** A TCP port of 127.0.0.1 that was free a moment ago and was not handed out lately. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await pickPort();
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
