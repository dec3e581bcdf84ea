import { describe, expect, test } from "bun:test";
import net from "node:net";
import { PausingReadLoop } from "../../src/net/read-loop.ts";
import { listenTcp, type TcpConnection } from "../../src/net/tcp-server.ts";
import { waitUntil } from "../support/helpers.ts";

/** Consumes reads slowly (each batch waits for release()), recording what it saw. */
class SlowReader extends PausingReadLoop {
  bytes = 0;
  running = 0;
  mostAtOnce = 0;
  finishedAfter = -1;
  private gate: (() => void) | null = null;

  constructor(conn: TcpConnection) {
    super(conn);
  }

  release(): void {
    const g = this.gate;
    this.gate = null;
    g?.();
  }

  get waiting(): boolean {
    return this.gate !== null;
  }

  protected async consume(reads: Uint8Array[]): Promise<void> {
    this.running++;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    for (const r of reads) this.bytes += r.length;
    await new Promise<void>((resolve) => (this.gate = resolve));
    this.running--;
  }

  protected async finish(): Promise<void> {
    this.finishedAfter = this.bytes;
    this.conn.end();
  }

  protected failed(): void {}
}

for (const backend of ["bun", "node"] as const) {
  describe(`read loop (${backend})`, () => {
    test("one batch at a time, every byte consumed, and the half-close handled after the last byte", async () => {
      let reader: SlowReader | null = null;
      const server = await listenTcp({ host: "127.0.0.1", port: 0, allowHalfOpen: true, backend }, (conn) => (reader = new SlowReader(conn)));
      const total = 3 * 1024 * 1024;
      const client = net.connect(server.port, "127.0.0.1");
      const closed = new Promise<void>((resolve) => client.on("close", () => resolve()));
      try {
        await new Promise<void>((resolve) => client.once("connect", () => resolve()));
        client.end(Buffer.alloc(total, 0x61));
        // Let each batch wait a moment, so reads queue behind it.
        while ((reader as SlowReader | null)?.finishedAfter !== total) {
          await waitUntil(() => (reader as SlowReader | null)?.waiting === true || (reader as SlowReader | null)?.finishedAfter === total, "a batch waiting or the end");
          await Bun.sleep(5);
          (reader as unknown as SlowReader).release();
        }
        const r = reader as unknown as SlowReader;
        expect(r.bytes).toBe(total);
        expect(r.mostAtOnce).toBe(1);
        await closed;
      } finally {
        client.destroy();
        await server.close();
      }
    });
  });
}
