/**
 * `flume top [--url http://HOST:PORT]`: a live view of a running agent, read from its
 * monitoring server (/metrics as Flume's JSON, /ready, /components): per configured component
 * (one without Flume counters, as the logger sink, too), events in and out per
 * second, totals, the channels' fill with a bar, failures, and components not started;
 * refreshed every second. On a terminal it redraws in place and q or Ctrl-C quits; otherwise
 * it prints one plain block per refresh.
 */
import type { ComponentInfo } from "../monitoring/http-server.ts";
import { int, UsageError } from "./args.ts";
import { command } from "./command.ts";

type Metrics = Record<string, Record<string, string>>;

interface Sample {
  at: number;
  metrics: Metrics;
  notStarted: { kind: string; name: string; state?: string; error?: string }[];
  /** Started sinks whose deliveries fail, sources and channels whose reads fail (from /ready; empty from an agent without the list). */
  failing: { kind: string; name: string; error: string; since: string }[];
  /** Every configured component (from /components; empty from an agent without it). */
  components: ComponentInfo[];
}

export interface TopRow {
  kind: "source" | "channel" | "sink";
  name: string;
  inRate?: number;
  outRate?: number;
  inTotal?: number;
  outTotal?: number;
  /** Channels: events held and capacity. */
  size?: number;
  capacity?: number;
  /** Undefined for a component without Flume counters (a logger sink). */
  failures?: number;
  /** The component's type, shown for one without counters. */
  type?: string;
}

const num = (g: Record<string, string> | undefined, k: string) => Number(g?.[k] ?? 0) || 0;

/** What each kind counts as in, out and failed (Flume's counter names). */
const COUNTS = {
  SOURCE: { in: "EventReceivedCount", out: "EventAcceptedCount", fail: ["ChannelWriteFail", "EventReadFail", "GenericProcessingFail"] },
  CHANNEL: { in: "EventPutSuccessCount", out: "EventTakeSuccessCount", fail: ["EventPutErrorCount", "EventTakeErrorCount", "CheckpointWriteErrorCount"] },
  SINK: { in: "EventDrainAttemptCount", out: "EventDrainSuccessCount", fail: ["EventWriteFail", "ChannelReadFail", "ConnectionFailedCount"] },
} as const;

/** The rows of one refresh: rates from the difference of two samples. */
export function topRows(prev: Sample | null, cur: Sample): TopRow[] {
  const rows: TopRow[] = [];
  const seconds = prev ? Math.max(0.001, (cur.at - prev.at) / 1000) : 0;
  for (const [key, group] of Object.entries(cur.metrics)) {
    const dot = key.indexOf(".");
    const type = key.slice(0, dot) as keyof typeof COUNTS;
    const counts = COUNTS[type];
    if (!counts) continue;
    const before = prev?.metrics[key];
    // A counter that went down was restarted (a reload): its rate starts over.
    const rate = (k: string) => (before && seconds > 0 ? Math.max(0, num(group, k) - num(before, k)) / seconds : undefined);
    const row: TopRow = {
      kind: type.toLowerCase() as TopRow["kind"],
      name: key.slice(dot + 1),
      inRate: rate(counts.in),
      outRate: rate(counts.out),
      inTotal: num(group, counts.in),
      outTotal: num(group, counts.out),
      failures: counts.fail.reduce((n, k) => n + num(group, k), 0),
    };
    if (type === "CHANNEL") {
      row.size = num(group, "ChannelSize");
      row.capacity = num(group, "ChannelCapacity");
    }
    rows.push(row);
  }
  // Components without counters (Flume's logger sink has none) still get their row.
  const shown = new Set(rows.map((r) => `${r.kind} ${r.name}`));
  for (const c of cur.components) if (!shown.has(`${c.kind} ${c.name}`)) rows.push({ kind: c.kind, name: c.name, type: c.type });
  const order = { source: 0, channel: 1, sink: 2 };
  return rows.sort((a, b) => order[a.kind] - order[b.kind] || a.name.localeCompare(b.name));
}

function rateText(r: number | undefined): string {
  if (r === undefined) return "-";
  if (r >= 1e6) return `${(r / 1e6).toFixed(1)}M/s`;
  if (r >= 1e3) return `${(r / 1e3).toFixed(1)}k/s`;
  return `${r.toFixed(1)}/s`;
}

function totalText(n: number | undefined): string {
  return n === undefined ? "-" : n.toLocaleString("en-US");
}

function bar(size: number, capacity: number, width = 20): string {
  const ratio = capacity > 0 ? Math.min(1, size / capacity) : 0;
  const filled = Math.round(ratio * width);
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}] ${(ratio * 100).toFixed(1)}%`;
}

/** The text of one refresh (no escape codes). */
export function renderTop(url: string, rows: TopRow[], sample: Sample, error: string | null): string {
  const lines: string[] = [];
  lines.push(`flume top  ${url}  ${new Date(sample.at).toISOString()}${error ? `  (${error})` : ""}`);
  lines.push("");
  const table = [["KIND", "NAME", "IN", "OUT", "IN TOTAL", "OUT TOTAL", "FAIL", "FILL"]];
  for (const r of rows) {
    const last = r.failures === undefined ? `(${r.type}: no counters)` : r.kind === "channel" ? `${bar(r.size ?? 0, r.capacity ?? 0)} ${totalText(r.size)}/${totalText(r.capacity)}` : "";
    table.push([r.kind, r.name, rateText(r.inRate), rateText(r.outRate), totalText(r.inTotal), totalText(r.outTotal), r.failures === undefined ? "-" : String(r.failures), last]);
  }
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) lines.push(row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]))).join("  ").trimEnd());
  if (sample.notStarted.length > 0) {
    lines.push("");
    lines.push("not started:");
    // A first start still under way has no error yet: its state (STARTING) says so.
    for (const c of sample.notStarted) lines.push(`  ${c.kind} ${c.name}${c.error ? `: ${c.error}` : c.state ? ` (${c.state})` : ""}`);
  }
  if (sample.failing.length > 0) {
    lines.push("");
    lines.push("failing:");
    for (const c of sample.failing) lines.push(`  ${c.kind} ${c.name} since ${c.since}: ${c.error}`);
  }
  return `${lines.join("\n")}\n`;
}

/** The agent could not be reached or did not answer as one: the message says why in our words. */
export class AgentUnreachableError extends Error {
  override name = "AgentUnreachableError";
}

/** Why a request failed, in our words (the runtimes' own texts speak of fetch() options and urls). */
export function unreachableReason(err: unknown, url: string, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  const where = url.replace(/^https?:\/\//, "");
  if (e.name === "TimeoutError" || e.name === "AbortError") return `no answer from ${where} within ${timeoutMs / 1000} s`;
  if (code === "ECONNREFUSED" || code === "ConnectionRefused") return `nothing listens on ${where}`;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `host ${where.replace(/:\d+$/, "")} not found`;
  return `no connection to ${where}${code ? ` (${code})` : ""}`;
}

const START_HINT = "start the agent with --metrics-port PORT (flume run), or -Dflume.monitoring.type=http -Dflume.monitoring.port=PORT, and point --url at that port";

async function fetchSample(url: string, timeoutMs: number): Promise<Sample> {
  const get = async (path: string) => {
    let res: Response;
    try {
      res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(timeoutMs), headers: { Accept: "application/json" } });
    } catch (err) {
      throw new AgentUnreachableError(unreachableReason(err, url, timeoutMs));
    }
    const text = await res.text();
    try {
      return { status: res.status, body: JSON.parse(text) as unknown };
    } catch {
      throw new AgentUnreachableError(`GET ${url}${path} answered ${res.status} with something other than JSON: is it a Flume agent's monitoring port?`);
    }
  };
  const metrics = await get("/metrics");
  if (metrics.status !== 200) throw new AgentUnreachableError(`GET ${url}/metrics answered ${metrics.status}`);
  let notStarted: Sample["notStarted"] = [];
  let failing: Sample["failing"] = [];
  let components: ComponentInfo[] = [];
  try {
    const ready = await get("/ready");
    notStarted = (ready.body as { notStarted?: Sample["notStarted"] }).notStarted ?? [];
    failing = (ready.body as { failing?: Sample["failing"] }).failing ?? [];
    const listed = await get("/components");
    if (listed.status === 200) components = (listed.body as { components?: ComponentInfo[] }).components ?? [];
  } catch {
    // An older agent without /ready or /components: the counters are still worth showing.
  }
  return { at: Date.now(), metrics: metrics.body as Metrics, notStarted, failing, components };
}

export interface TopOptions {
  url: string;
  intervalMs: number;
  /** Stop after this many refreshes (0: until q or Ctrl-C). */
  iterations: number;
}

/** Runs the view; resolves with the exit code (1 when the agent could not be reached at all). */
export async function runTop(o: TopOptions, out: NodeJS.WriteStream = process.stdout, input: NodeJS.ReadStream = process.stdin): Promise<number> {
  const tty = out.isTTY === true;
  let prev: Sample | null = null;
  let reached = false;
  let stop = false;
  let wake: (() => void) | null = null;
  const quit = () => {
    stop = true;
    wake?.();
  };
  const onKey = (data: Buffer) => {
    const k = data.toString("utf8");
    if (k === "q" || k === "Q" || k === "\u0003") quit();
  };
  const onSignal = () => quit();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  if (tty) {
    out.write("\x1b[?1049h\x1b[?25l"); // alternate screen, hide cursor
    if (input.isTTY) {
      input.setRawMode(true);
      input.resume();
      input.on("data", onKey);
    }
  }
  try {
    for (let i = 0; !stop && (o.iterations === 0 || i < o.iterations); i++) {
      let text: string;
      try {
        const cur = await fetchSample(o.url, Math.max(500, o.intervalMs));
        reached = true;
        text = renderTop(o.url, topRows(prev, cur), cur, null);
        prev = cur;
      } catch (err) {
        if (!(err instanceof AgentUnreachableError)) throw err;
        text = `flume top  ${o.url}  ${new Date().toISOString()}\ncannot reach the agent: ${err.message}; retrying\n${reached ? "" : `(${START_HINT})\n`}`;
      }
      out.write(tty ? `\x1b[H\x1b[2J${text}` : `${text}\n`);
      if (stop || (o.iterations !== 0 && i + 1 >= o.iterations)) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, o.intervalMs);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      wake = null;
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    if (tty) {
      out.write("\x1b[?25h\x1b[?1049l");
      if (input.isTTY) {
        input.off("data", onKey);
        input.setRawMode(false);
        input.pause();
      }
    }
  }
  return reached ? 0 : 1;
}

export const top = command({
  name: "top",
  description: "A live view of a running agent: rates, totals, channel fill, failures",
  args: {
    url: { type: "string", default: "http://127.0.0.1:41414", description: "The agent's monitoring server (Flume's usual flume.monitoring.port)" },
    interval: { type: "string", parse: positiveSeconds, default: "1", description: "Seconds between refreshes" },
    iterations: { type: "string", parse: int(0), default: "0", description: "Stop after this many refreshes (0: until q or Ctrl-C)" },
  },
  run(a) {
    const url = a.url.replace(/\/+$/, "");
    if (!/^https?:\/\/[^/]+$/.test(url)) throw new UsageError(`--url must be http://HOST:PORT, got "${a.url}"`);
    return runTop({ url, intervalMs: a.interval * 1000, iterations: a.iterations });
  },
});

function positiveSeconds(text: string, flag: string): number {
  const n = Number(text);
  if (!(n > 0 && n <= 3600)) throw new UsageError(`${flag} needs a number of seconds above 0, got "${text}"`);
  return n;
}
