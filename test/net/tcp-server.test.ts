// The TCP listener of the line sources, both ways it is built: Bun's sockets (what runs under
// Bun and in the binary) and node:net (Deno, TLS). Real clients on 127.0.0.1.
import { afterEach, describe, expect, test } from "bun:test";
import net from "node:net";
import { type ConnectionHandler, listenTcp, type TcpConnection, type TcpServer, WRITE_HIGH_WATER } from "../../src/net/tcp-server.ts";
import { waitUntil } from "../support/helpers.ts";

const servers: TcpServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

/** A server whose handlers record what happens; `reply` answers each read. */
async function recorder(backend: "bun" | "node", options: { allowHalfOpen?: boolean; reply?: (conn: TcpConnection, chunk: Uint8Array) => void } = {}) {
  const log: string[] = [];
  const conns: TcpConnection[] = [];
  const server = await listenTcp({ host: "127.0.0.1", port: 0, allowHalfOpen: options.allowHalfOpen, backend }, (conn): ConnectionHandler => {
    conns.push(conn);
    return {
      data(chunk) {
        log.push(`data ${new TextDecoder().decode(chunk)}`);
        options.reply?.(conn, chunk);
      },
      end() {
        log.push("end");
        conn.end("bye\n");
      },
      close(hadError) {
        log.push(`close ${hadError}`);
      },
    };
  });
  servers.push(server);
  return { server, log, conns };
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => resolve(s));
    s.once("error", reject);
  });
}

for (const backend of ["bun", "node"] as const) {
  describe(`tcp listener (${backend})`, () => {
    test("reads arrive as the client's bytes; replies go back; the peer is named", async () => {
      const { server, log, conns } = await recorder(backend, { reply: (conn, chunk) => conn.write(chunk) });
      const client = await connect(server.port);
      let echoed = "";
      client.on("data", (d) => (echoed += d));
      client.write("hello\n");
      await waitUntil(() => echoed === "hello\n", "the echo", 5000);
      expect(log).toEqual(["data hello\n"]);
      expect(conns[0].peer).toBe(`127.0.0.1:${client.localPort}`);
      expect(conns[0].remoteIp).toBe("127.0.0.1");
      expect(conns[0].localPort).toBe(server.port);
      expect(server.connections.size).toBe(1);
      client.destroy();
      await waitUntil(() => log.at(-1)?.startsWith("close") === true, "the close", 5000);
      expect(server.connections.size).toBe(0);
    });

    test("a client that half-closes still gets the answer written after its FIN (allowHalfOpen)", async () => {
      const { server, log } = await recorder(backend, { allowHalfOpen: true });
      const client = await connect(server.port);
      let got = "";
      client.on("data", (d) => (got += d));
      const closed = new Promise((r) => client.once("close", r));
      client.end("last line\n");
      await closed;
      expect(got).toBe("bye\n");
      expect(log.slice(0, 2)).toEqual(["data last line\n", "end"]);
    });

    test("a paused connection reads nothing until resumed", async () => {
      const { server, log, conns } = await recorder(backend);
      const client = await connect(server.port);
      await waitUntil(() => conns.length === 1, "the connection", 5000);
      conns[0].pause();
      client.write("held\n");
      await new Promise((r) => setTimeout(r, 100));
      expect(log).toEqual([]);
      conns[0].resume();
      await waitUntil(() => log.length === 1, "the read after resume", 5000);
      expect(log).toEqual(["data held\n"]);
      client.destroy();
    });

    test("writes to a client that does not read are held, write() says so, and drained() waits for the client", async () => {
      const { server, conns } = await recorder(backend);
      const client = await connect(server.port);
      client.pause();
      await waitUntil(() => conns.length === 1, "the connection", 5000);
      const conn = conns[0];
      const block = new Uint8Array(256 * 1024).fill(120);
      let accepted = true;
      let written = 0;
      for (let i = 0; i < 200 && accepted; i++) {
        accepted = conn.write(block);
        written += block.length;
      }
      expect(accepted).toBe(false);
      expect(conn.pendingBytes).toBeGreaterThan(WRITE_HIGH_WATER);
      let drained = false;
      void conn.drained().then(() => (drained = true));
      await new Promise((r) => setTimeout(r, 100));
      expect(drained).toBe(false);
      let read = 0;
      client.on("data", (d) => (read += d.length));
      client.resume();
      await waitUntil(() => drained && read === written, "every byte read", 10000);
      expect(conn.pendingBytes).toBe(0);
      client.destroy();
    });

    test("close() ends open connections; a taken port is refused with node's words", async () => {
      const { server } = await recorder(backend);
      const client = await connect(server.port);
      const closed = new Promise((r) => client.once("close", r));
      const again = listenTcp({ host: "127.0.0.1", port: server.port, backend }, () => ({ data() {} }));
      await expect(again).rejects.toThrow(`listen EADDRINUSE: address already in use 127.0.0.1:${server.port}`);
      await server.close();
      servers.length = 0;
      await closed;
    });

    test(backend === "bun" ? "release() frees a large read at once (its bytes are gone); small reads are left alone" : "release() leaves node:net's reads alone (they may share memory)", async () => {
      const chunks: Uint8Array[] = [];
      let connection: TcpConnection | null = null;
      const server = await listenTcp({ host: "127.0.0.1", port: 0, backend }, (conn) => {
        connection = conn;
        return { data: (chunk) => void chunks.push(chunk) };
      });
      servers.push(server);
      const client = await connect(server.port);
      const big = new Uint8Array(256 * 1024).fill(120);
      client.write(big);
      await waitUntil(() => chunks.reduce((n, c) => n + c.length, 0) === big.length, "the 256 KiB arrived");
      client.write("small\n");
      await waitUntil(() => chunks.reduce((n, c) => n + c.length, 0) === big.length + 6, "the small write arrived");
      const last = chunks[chunks.length - 1];
      const lengths = chunks.map((c) => c.length);
      for (const c of chunks) (connection as unknown as TcpConnection).release(c);
      expect(new TextDecoder().decode(last)).toBe("small\n");
      const large = chunks.filter((_, i) => lengths[i] >= 4 * 1024);
      expect(large.length).toBeGreaterThan(0);
      if (backend === "bun") for (const c of large) expect(c.length).toBe(0);
      else for (const c of chunks) expect(c.length).toBe(lengths[chunks.indexOf(c)]);
      client.destroy();
    });
  });
}
