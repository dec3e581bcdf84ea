import http from "node:http";
import net, { type Socket } from "node:net";
import { ChannelException } from "../../core/errors.ts";
import type { Event } from "../../core/event.ts";
import type { EventDrivenSource } from "../../core/source.ts";
import { createPart, defineComponent, type ComponentContext } from "../component.ts";
import { builtIn } from "../registry.ts";
import type { Groups, OptionsOf, Props } from "../../config/schema.ts";
import { BaseSource } from "./base.ts";
import { HttpBadRequestError, type HttpSourceHandler } from "./http-handlers/handler.ts";
import { peerName } from "../../net/peer.ts";
import { SERVER_TLS_PROPS, type ServerTls, serverTls, createTlsServer, tlsProblems } from "../../net/tls.ts";

/** How long stop() lets requests in flight finish before it closes their connections. */
const FORCED_CLOSE_MS = 5000;

const props = {
  port: { type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on." },
  bind: { type: "string", default: "0.0.0.0", doc: "Host name or IP address to listen on." },
  handler: {
    type: "string",
    default: "org.apache.flume.source.http.JSONHandler",
    names: { kind: "httphandler", settings: "handlerSettings" },
    doc: "Handler: org.apache.flume.source.http.JSONHandler (JSON), org.apache.flume.source.http.BLOBHandler (BLOB), or the module of a custom one.",
  },
  maxBodySize: { type: "int", default: 16 * 1024 * 1024, min: 1, doc: "Largest request body in bytes; larger requests get 413 (for BLOB, handler.maxBlobLength when set)." },
  retryAfter: { type: "int", default: 1, min: 0, doc: "Seconds sent in Retry-After with a 503 when the channel is full." },
  ...SERVER_TLS_PROPS,
} as const satisfies Props;

const groups = {
  handlerSettings: { prefix: "handler.", doc: "The handler's properties, e.g. handler.maxBlobLength (BLOB)" },
  queuedThreadPool: { prefix: "QueuedThreadPool.", doc: "Jetty settings: accepted and ignored" },
  httpConfiguration: { prefix: "HttpConfiguration.", doc: "Jetty settings: accepted and ignored" },
  sslContextFactory: { prefix: "SslContextFactory.", doc: "Jetty settings: accepted and ignored" },
  serverConnector: { prefix: "ServerConnector.", doc: "Jetty settings: accepted and ignored" },
} as const satisfies Groups;

/** What the schema parses the properties into, with the handler built in place of its name. */
export type HttpSourceOptions = Omit<OptionsOf<typeof props, typeof groups>, "handler"> & { readonly handler: HttpSourceHandler };

class BodyTooLarge extends Error {}

/**
 * Flume's HTTP source: each POST (or GET) request is turned into events by its handler and
 * written to the channel in one transaction. 200 only after the commit; 400 for a malformed
 * request (with the reason); 413 over maxBodySize; 503 with Retry-After when the channel
 * refuses the batch (full); 500 for anything else.
 */
export class HttpSource extends BaseSource implements EventDrivenSource {
  readonly kind = "event-driven";
  private server: http.Server | null = null;
  /**
   * With TLS, the listener (src/net/tls.ts): it hands each secured connection to the HTTP
   * server, which does not listen itself. Bun's https.Server would hide failed handshakes and
   * client certificates from us.
   */
  private tlsListener: net.Server | null = null;
  /** Secured connections open now (the HTTP server does not track those it did not accept). */
  private readonly secured = new Set<Socket>();
  private stopping = false;
  /** Peer names read when each connection was accepted: Bun's sockets forget the address once reset. */
  private readonly peers = new WeakMap<object, string>();

  /** The TLS setup from the ssl properties, or null. */
  readonly tls: ServerTls | null;
  /** The handler's limit when it has one (BLOB's maxBlobLength), else maxBodySize. */
  private readonly maxBodySize: number;

  constructor(
    ctx: ComponentContext,
    readonly options: HttpSourceOptions,
  ) {
    super(ctx, { label: `http source ${ctx.name}` });
    this.tls = serverTls(options);
    this.maxBodySize = options.handler.maxBodySize ?? options.maxBodySize;
  }

  get port(): number {
    const a = (this.tlsListener ?? this.server)?.address();
    return a && typeof a === "object" ? a.port : this.options.port;
  }

  async start(): Promise<void> {
    this.stopping = false;
    this.beginStart();
    const server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: Error) => {
        // A bug here must cost one request, not the agent.
        this.emitter.failed(err, `unexpected error serving ${this.peerOf(req.socket)}`);
        this.reply(res, 500, `Unexpected error: ${err.message}`);
      });
    });
    const listener = this.tls ? this.secureListener(server, this.tls) : server;
    await new Promise<void>((resolve, reject) => {
      listener.once("error", reject);
      listener.listen(this.options.port, this.options.bind, () => {
        listener.off("error", reject);
        resolve();
      });
    });
    listener.on("error", (err) => this.logger.error(`http source ${this.name}: ${err.message}`));
    server.on("connection", (socket: Socket) => {
      if (!this.peers.has(socket)) this.peers.set(socket, peerName(socket));
    });
    server.on("clientError", (err, socket) => {
      this.logger.warn(`http source ${this.name}: bad HTTP from ${this.peerOf(socket)}: ${err.message}`);
      if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
      else socket.destroy();
    });
    this.server = server;
    this.state = "START";
    this.logger.info(`http source ${this.name} listening on ${this.tls ? "https" : "http"}://${this.options.bind}:${this.port}`);
  }

  /** A TLS listener that gives each secured connection to the HTTP server; refusals are logged with the peer. */
  private secureListener(server: http.Server, setup: ServerTls): net.Server {
    const listener = createTlsServer(
      setup,
      (tls) => {
        this.peers.set(tls, peerName(tls));
        this.secured.add(tls);
        tls.once("close", () => this.secured.delete(tls));
        if (this.stopping) tls.destroy();
        else server.emit("connection", tls);
      },
      (peer, reason) => this.logger.warn(`http source ${this.name}: TLS handshake with ${peer} failed: ${reason}`),
    );
    this.tlsListener = listener;
    return listener;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const server = this.server;
    this.server = null;
    if (server) {
      // Requests in flight finish (their events are committed or refused); idle keep-alive sockets close now.
      const closed = this.tlsListener ? this.closeTls(server) : new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = this.clock.setTimeout(() => {
        this.logger.warn(`http source ${this.name}: requests still in flight ${FORCED_CLOSE_MS} ms after stop; closing their connections`);
        server.closeAllConnections();
        for (const s of this.secured) s.destroy();
      }, FORCED_CLOSE_MS);
      await closed;
      this.clock.clearTimeout(timer);
    }
    this.emitter.stop();
    this.counter.stop();
    this.state = "STOP";
  }

  /** Stops accepting TLS connections; resolves once every secured one closed. */
  private async closeTls(server: http.Server): Promise<void> {
    const listener = this.tlsListener as net.Server;
    this.tlsListener = null;
    listener.close();
    server.close();
    await Promise.all([...this.secured].map((s) => new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once("close", () => resolve())))));
  }

  /** The peer's name as read when it connected (read now if that was missed). */
  private peerOf(socket: object): string {
    return this.peers.get(socket) ?? peerName(socket as Socket);
  }

  private reply(res: http.ServerResponse, status: number, message: string, extra: Record<string, string> = {}): void {
    if (res.headersSent) return;
    // While stopping, a keep-alive connection would keep server.close() waiting until the forced close.
    if (this.stopping) extra = { ...extra, Connection: "close" };
    res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", ...extra });
    res.end(message ? `${message}\n` : "");
  }

  private readBody(req: http.IncomingMessage): Promise<Uint8Array> {
    const limit = this.maxBodySize;
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > limit) {
          req.removeAllListeners("data");
          req.pause();
          reject(new BodyTooLarge());
          return;
        }
        chunks.push(chunk);
      });
      req.on("end", () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
      req.on("error", reject);
      req.on("aborted", () => reject(new Error("client aborted the request")));
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const peer = this.peerOf(req.socket);
    const c = this.counter.values;
    if (req.method !== "POST" && req.method !== "GET") {
      req.resume();
      this.reply(res, 405, `Method ${req.method} is not allowed; send events with POST`, { Allow: "POST, GET" });
      return;
    }
    if (this.stopping) {
      req.resume();
      this.reply(res, 503, "Source is shutting down", { "Retry-After": String(this.options.retryAfter), Connection: "close" });
      return;
    }
    const declared = Number(req.headers["content-length"] ?? 0);
    let body: Uint8Array;
    try {
      if (declared > this.maxBodySize) throw new BodyTooLarge();
      body = await this.readBody(req);
    } catch (err) {
      c.EventReadFail++;
      if (err instanceof BodyTooLarge) {
        this.logger.warn(`http source ${this.name}: request from ${peer} is larger than maxBodySize ${this.maxBodySize} bytes; answered 413`);
        this.reply(res, 413, `Request body is larger than ${this.maxBodySize} bytes (maxBodySize)`, { Connection: "close" });
        res.on("finish", () => req.socket.destroySoon?.());
      } else {
        this.logger.warn(`http source ${this.name}: request from ${peer} failed while reading: ${(err as Error).message}`);
      }
      return;
    }
    let events: Event[];
    try {
      const url = new URL(req.url ?? "/", "http://localhost");
      events = this.options.handler.getEvents({ method: req.method, url, headers: req.headers, body });
    } catch (err) {
      c.EventReadFail++;
      if (err instanceof HttpBadRequestError) {
        this.logger.warn(`http source ${this.name}: bad request from ${peer}: ${err.message}`);
        this.reply(res, 400, `Bad request from client. ${err.message}`);
      } else {
        this.logger.warn(`http source ${this.name}: handler failed on the request from ${peer}: ${(err as Error).message}`);
        this.reply(res, 500, `Deserializer threw unexpected exception. ${(err as Error).message}`);
      }
      return;
    }
    const refused = await this.emitter.offer(events, peer);
    if (refused instanceof ChannelException) {
      this.reply(res, 503, `Error appending event to channel. Channel might be full. ${refused.message}`, { "Retry-After": String(this.options.retryAfter) });
      return;
    }
    if (refused) {
      this.reply(res, 500, `Unexpected error while appending event to channel. ${refused.message}`);
      return;
    }
    this.reply(res, 200, "");
  }
}

export const definition = defineComponent({
  ...builtIn.httpSource,
  doc: "Accepts events by HTTP POST; each request is one transaction. JSON handler (Flume's event array) or BLOB handler (body as one event).",
  props,
  groups,
  create(config, ctx) {
    const handler = createPart<HttpSourceHandler>(ctx, "httphandler", "handler", config.handler, config.handlerSettings);
    const jetty = Object.entries({ QueuedThreadPool: config.queuedThreadPool, HttpConfiguration: config.httpConfiguration, SslContextFactory: config.sslContextFactory, ServerConnector: config.serverConnector }).flatMap(([prefix, group]) => Object.keys(group).map((k) => `${prefix}.${k}`));
    if (jetty.length) ctx.logger.warn(`http source ${ctx.name}: Jetty settings have no effect here and are ignored: ${jetty.join(", ")}`);
    return new HttpSource(ctx, { ...config, handler });
  },
  validate: (config) => tlsProblems(() => serverTls(config)),
});
