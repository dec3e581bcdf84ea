import net from "node:net";
import type { Event } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import { peerName } from "../../net/peer.ts";
import { defineComponent, type ComponentContext } from "../component.ts";
import { BaseSource } from "./base.ts";

export interface NetcatOptions {
  bind: string;
  port: number;
  maxLineLength: number;
  ackEveryEvent: boolean;
}

const NEWLINE = 0x0a;
const OK = Buffer.from("OK\n");

/**
 * Flume's netcat source: each newline-terminated line from a TCP client becomes an event,
 * answered "OK" once it is committed (or "FAILED: ..." when the channel refused it: the client
 * retries). The lines of one read go to the channel as one batch, and the socket is paused
 * while that batch waits, so a slow channel slows the client instead of filling memory.
 * Without acks nobody would retry: a refused batch is retried until the channel takes it.
 */
export class NetcatSource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();

  constructor(
    ctx: ComponentContext,
    private readonly options: NetcatOptions,
  ) {
    super(ctx, { label: `netcat source ${ctx.name}` });
  }

  /** The port actually bound (useful with port 0). */
  get port(): number {
    const addr = this.server?.address();
    return addr && typeof addr === "object" ? addr.port : this.options.port;
  }

  async start(): Promise<void> {
    this.beginStart();
    // allowHalfOpen: a client that half-closes after its lines (printf ... | nc -N) still gets its OKs.
    const server = net.createServer({ allowHalfOpen: true }, (socket) => this.serve(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.port, this.options.bind, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (err) => this.logger.error(`netcat source ${this.name}: ${err.message}`));
    this.server = server;
    this.state = "START";
    this.logger.info(`netcat source ${this.name} listening on ${this.options.bind}:${this.port}`);
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.emitter.stop();
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    this.counter.stop();
    this.state = "STOP";
  }

  private serve(socket: net.Socket): void {
    const peer = peerName(socket);
    socket.setNoDelay(true);
    this.sockets.add(socket);
    this.counter.values.OpenConnectionCount++;
    let pending: Buffer | null = null;
    let busy = false;
    /** The client half-closed: end our side once what it sent is answered. */
    let ended = false;
    /** An overlong line was refused: nothing more is read from this client. */
    let refused = false;
    const queue: Buffer[] = [];

    const handle = async (chunk: Buffer) => {
      let data = pending ? Buffer.concat([pending, chunk]) : chunk;
      pending = null;
      const events: Event[] = [];
      let start = 0;
      let tooLong = false;
      for (;;) {
        const nl = data.indexOf(NEWLINE, start);
        if (nl < 0) break;
        // Flume's buffer holds max-line-length characters including the newline.
        if (nl - start + 1 > this.options.maxLineLength) {
          tooLong = true;
          break;
        }
        events.push({ headers: {}, body: data.subarray(start, nl) });
        start = nl + 1;
      }
      if (!tooLong && data.length - start >= this.options.maxLineLength) tooLong = true;
      if (events.length > 0 && this.options.ackEveryEvent) {
        const max = this.getChannelProcessor().maxBatchSize();
        for (let i = 0; i < events.length && !socket.destroyed; i += max) await this.offer(socket, events.length <= max ? events : events.slice(i, i + max), peer);
      } else if (events.length > 0 && !(await this.emitter.deliver(events, { from: peer }))) {
        this.logger.warn(`netcat source ${this.name}: stopping; ${events.length} lines from ${peer} that the channel did not take are dropped`);
      }
      if (tooLong) {
        this.counter.values.EventReadFail++;
        this.logger.warn(`netcat source ${this.name}: client ${peer} sent a line over max-line-length ${this.options.maxLineLength}; closing the connection`);
        refused = true;
        socket.end(`FAILED: Event exceeds the maximum length (${this.options.maxLineLength} chars, including newline)\n`);
        return;
      }
      if (start < data.length) pending = Buffer.from(data.subarray(start));
      data = Buffer.alloc(0);
    };

    const pump = async () => {
      busy = true;
      socket.pause();
      try {
        while (queue.length > 0 && !socket.destroyed && !refused) {
          await handle(queue.shift() as Buffer);
          // A client that does not read its OKs must not make us buffer them without bound.
          if (socket.writableLength > socket.writableHighWaterMark) await drained(socket);
        }
      } catch (err) {
        this.emitter.failed(err, `closing the connection from ${peer}`);
        socket.destroy();
      } finally {
        busy = false;
        if (ended) socket.end();
        else if (!socket.destroyed) socket.resume();
      }
    };

    socket.on("data", (chunk: Buffer) => {
      if (refused) return;
      queue.push(chunk);
      if (!busy) void pump();
    });
    socket.on("end", () => {
      ended = true;
      if (!busy) socket.end();
    });
    socket.on("error", (err) => this.logger.warn(`netcat source ${this.name}: connection from ${peer}: ${err.message}`));
    socket.on("close", () => {
      this.sockets.delete(socket);
      this.counter.values.OpenConnectionCount--;
      if (pending && pending.length > 0) this.logger.warn(`netcat source ${this.name}: ${peer} closed with ${pending.length} bytes after the last newline; they were not an event`);
    });
  }

  /** One attempt; every line is answered OK, or FAILED with the reason (the client retries). */
  private async offer(socket: net.Socket, events: Event[], peer: string): Promise<void> {
    const refused = await this.emitter.offer(events, peer);
    if (socket.destroyed) return;
    if (refused) socket.write(`FAILED: ${refused.message}\n`.repeat(events.length));
    else socket.write(events.length === 1 ? OK : Buffer.from("OK\n".repeat(events.length)));
  }
}

/** Resolves once the socket's write buffer drained, or it closed. */
function drained(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off("drain", done);
      socket.off("close", done);
      resolve();
    };
    socket.on("drain", done);
    socket.on("close", done);
  });
}

export const definition = defineComponent({
  kind: "source",
  type: "netcat",
  aliases: ["org.apache.flume.source.NetcatSource", "netcattcp"],
  doc: "Listens on a TCP port; each line of text becomes an event.",
  props: {
    bind: { type: "string", required: true, doc: "Host name or IP address to bind to" },
    port: { type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on" },
    "max-line-length": { type: "int", default: 512, min: 2, doc: "Maximum line length in bytes, including the newline" },
    "ack-every-event": { type: "boolean", default: true, doc: 'Answer "OK" for every event received' },
  },
  create(config, ctx) {
    return new NetcatSource(ctx, {
      bind: config.bind,
      port: config.port,
      maxLineLength: config["max-line-length"],
      ackEveryEvent: config["ack-every-event"],
    });
  },
});
