/** A TCP peer on 127.0.0.1 that accepts connections, reads what it is sent and never answers: a hung broker, or a port that is no Kafka broker's. */
import net from "node:net";

export interface SilentPeer {
  port: number;
  /** Connections accepted so far. */
  accepted(): number;
  close(): void;
}

export async function silentPeer(): Promise<SilentPeer> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on("error", () => {});
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
