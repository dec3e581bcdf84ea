import type { Logger } from "../core/logger.ts";
import { metricsJson, prometheusText, wantsPrometheus } from "./metrics.ts";
import { processMetricsText } from "./process-metrics.ts";
import type { MetricsProvider } from "./metrics.ts";

const INDEX = '<html><body><a href="./metrics">Metrics</a> <a href="./prometheus">Prometheus</a> <a href="./health">Health</a> <a href="./ready">Ready</a> <a href="./components">Components</a></body></html>\n';
const PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * What /ready reports: every configured component that did not start, with its last error; and
 * every started sink whose deliveries fail, source or channel whose reads fail (state FAILING),
 * with the last error and since when (ISO 8601). Ready only when both are empty.
 */
export interface Readiness {
  ready: boolean;
  notStarted: { kind: string; name: string; state: string; error?: string }[];
  failing: { kind: string; name: string; state: "FAILING"; error: string; since: string }[];
}

/** A configured component as /components lists it (whether or not it has Flume counters). */
export interface ComponentInfo {
  kind: "source" | "channel" | "sink";
  name: string;
  type: string;
}

export interface HealthProvider extends MetricsProvider {
  readiness(): Readiness;
  /** Every configured component: what `flume top` shows a row for. */
  componentList(): ComponentInfo[];
}

/**
 * Flume's HTTP monitoring, plus what supervisors and scrapers expect: GET /metrics answers
 * Flume's counter JSON, or Prometheus text when the scraper asks for it (Accept
 * text/plain;version=0.0.4 or application/openmetrics-text), GET /prometheus always the
 * Prometheus text, GET /health 200 while the process answers, GET /ready 200 once every
 * configured component has started and no sink's deliveries fail (503 with the ones that have
 * not started, the sinks failing, and why), GET
 * /components every configured component (kind, name, type: a logger sink has no counters, yet
 * is there), GET / a page linking them; anything else 404.
 */
/** An answer: status, content type and body (HEAD sends the same without the body). */
interface Answer {
  status: number;
  type: string;
  body: string;
  allow?: string;
}

export class MetricsServer {
  private stopServer: (() => Promise<void>) | null = null;
  /** The port bound (the configured one until started; port 0 picks one). */
  private bound: number;

  constructor(
    private readonly provider: MetricsProvider & Partial<HealthProvider>,
    private readonly port: number,
    private readonly bind = "0.0.0.0",
    private readonly logger?: Logger,
  ) {
    this.bound = port;
  }

  get boundPort(): number {
    return this.bound;
  }

  /**
   * Under Bun the server is Bun.serve: node:http would cost the agent about 8 MB of memory for
   * a page scraped every few seconds. Elsewhere (Deno) node:http.
   */
  async start(): Promise<void> {
    const bun = (globalThis as { Bun?: BunServe }).Bun;
    if (bun) this.startBun(bun);
    else await this.startNode();
    this.logger?.info(`metrics on http://${this.bind}:${this.boundPort}/metrics`);
  }

  async stop(): Promise<void> {
    const stop = this.stopServer;
    this.stopServer = null;
    await stop?.();
  }

  private startBun(bun: BunServe): void {
    let server: ReturnType<BunServe["serve"]>;
    try {
      server = bun.serve({
        hostname: this.bind,
        port: this.port,
        fetch: (req: Request) => {
          const a = this.answer(req.method, new URL(req.url).pathname, req.headers.get("accept") ?? undefined);
          const headers: Record<string, string> = { "Content-Type": a.type };
          if (a.allow) headers.Allow = a.allow;
          return new Response(req.method === "HEAD" ? null : a.body, { status: a.status, headers });
        },
        error: (err: Error) => {
          this.logger?.error(`metrics server: ${err.message}`);
          return new Response("internal error\n", { status: 500 });
        },
      });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw typeof code === "string" ? new Error(`listen ${code}: ${(err as Error).message} ${this.bind}:${this.port}`) : err;
    }
    this.bound = server.port ?? this.port;
    this.stopServer = async () => {
      await server.stop(true);
    };
  }

  private async startNode(): Promise<void> {
    const http = process.getBuiltinModule("node:http") as typeof import("node:http");
    const server = http.createServer((req, res) => {
      const a = this.answer(req.method ?? "GET", (req.url ?? "/").split("?")[0], req.headers.accept);
      res.writeHead(a.status, a.allow ? { Allow: a.allow, "Content-Type": a.type } : { "Content-Type": a.type }).end(req.method === "HEAD" ? undefined : a.body);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, this.bind, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // After listen, a server error must not take the agent down: log it.
    server.on("error", (err) => this.logger?.error(`metrics server: ${err.message}`));
    const addr = server.address();
    this.bound = addr && typeof addr === "object" ? addr.port : this.port;
    this.stopServer = async () => {
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    };
  }

  private answer(method: string, path: string, accept: string | undefined): Answer {
    const json = "application/json;charset=utf-8";
    if (method !== "GET" && method !== "HEAD") return { status: 405, type: "text/plain", body: "method not allowed\n", allow: "GET, HEAD" };
    if ((path === "/metrics" && wantsPrometheus(accept)) || path === "/prometheus") return { status: 200, type: PROMETHEUS_TYPE, body: prometheusText(this.provider) + processMetricsText() };
    if (path === "/metrics") return { status: 200, type: json, body: JSON.stringify(metricsJson(this.provider)) };
    if (path === "/health") return { status: 200, type: json, body: JSON.stringify({ status: "ok", agent: this.provider.name }) + "\n" };
    if (path === "/ready") {
      const r = this.provider.readiness?.() ?? { ready: true, notStarted: [], failing: [] };
      return { status: r.ready ? 200 : 503, type: json, body: JSON.stringify({ ready: r.ready, agent: this.provider.name, notStarted: r.notStarted, failing: r.failing }) + "\n" };
    }
    if (path === "/components") {
      return { status: 200, type: json, body: JSON.stringify({ agent: this.provider.name, components: this.provider.componentList?.() ?? [] }) + "\n" };
    }
    if (path === "/" || path === "") return { status: 200, type: "text/html;charset=utf-8", body: INDEX };
    return { status: 404, type: "text/plain", body: "not found\n" };
  }
}

/** The part of Bun.serve used here. */
interface BunServe {
  serve(options: { hostname: string; port: number; fetch(req: Request): Response; error(err: Error): Response }): { port?: number; stop(closeActiveConnections?: boolean): Promise<void> | void };
}
