import http from "node:http";
import type { Logger } from "../core/logger.ts";
import { metricsJson, prometheusText, wantsPrometheus } from "./metrics.ts";
import type { MetricsProvider } from "./metrics.ts";

const INDEX = '<html><body><a href="./metrics">Metrics</a> <a href="./prometheus">Prometheus</a> <a href="./health">Health</a> <a href="./ready">Ready</a></body></html>\n';
const PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** What /ready reports: every configured component that is not running, with its last error. */
export interface Readiness {
  ready: boolean;
  notStarted: { kind: string; name: string; state: string; error?: string }[];
}

export interface HealthProvider extends MetricsProvider {
  readiness(): Readiness;
}

/**
 * Flume's HTTP monitoring, plus what supervisors and scrapers expect: GET /metrics answers
 * Flume's counter JSON, or Prometheus text when the scraper asks for it (Accept
 * text/plain;version=0.0.4 or application/openmetrics-text), GET /prometheus always the
 * Prometheus text, GET /health 200 while the process answers, GET /ready 200 once every
 * configured component has started (503 with the ones that have not, and why), GET / a page
 * linking them; anything else 404.
 */
export class MetricsServer {
  private server: http.Server | null = null;

  constructor(
    private readonly provider: MetricsProvider & Partial<HealthProvider>,
    private readonly port: number,
    private readonly bind = "0.0.0.0",
    private readonly logger?: Logger,
  ) {}

  get boundPort(): number {
    const addr = this.server?.address();
    return addr && typeof addr === "object" ? addr.port : this.port;
  }

  async start(): Promise<void> {
    const server = http.createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, this.bind, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // After listen, a server error must not take the agent down: log it.
    server.on("error", (err) => this.logger?.error(`metrics server: ${err.message}`));
    this.server = server;
    this.logger?.info(`metrics on http://${this.bind}:${this.boundPort}/metrics`);
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections?.();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD", "Content-Type": "text/plain" }).end("method not allowed\n");
      return;
    }
    if (path === "/metrics" && wantsPrometheus(req.headers.accept)) {
      res.writeHead(200, { "Content-Type": PROMETHEUS_TYPE }).end(prometheusText(this.provider));
    } else if (path === "/metrics") {
      res.writeHead(200, { "Content-Type": "application/json;charset=utf-8" }).end(JSON.stringify(metricsJson(this.provider)));
    } else if (path === "/prometheus") {
      res.writeHead(200, { "Content-Type": PROMETHEUS_TYPE }).end(prometheusText(this.provider));
    } else if (path === "/health") {
      res.writeHead(200, { "Content-Type": "application/json;charset=utf-8" }).end(JSON.stringify({ status: "ok", agent: this.provider.name }) + "\n");
    } else if (path === "/ready") {
      const r = this.provider.readiness?.() ?? { ready: true, notStarted: [] };
      res.writeHead(r.ready ? 200 : 503, { "Content-Type": "application/json;charset=utf-8" }).end(JSON.stringify({ ready: r.ready, agent: this.provider.name, notStarted: r.notStarted }) + "\n");
    } else if (path === "/" || path === "") {
      res.writeHead(200, { "Content-Type": "text/html;charset=utf-8" }).end(INDEX);
    } else {
      res.writeHead(404, { "Content-Type": "text/plain" }).end("not found\n");
    }
  }
}
