import { createReadStream, readdirSync, readFileSync, renameSync, statSync } from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { parseProperties } from "../config/properties.ts";
import type { Event } from "../core/event.ts";
import { AvroRpcClient, type AvroRpcClientOptions } from "../rpc/client.ts";
import { clientTlsFromProperties } from "../net/tls.ts";
import { type ArgsSpec, FLUME_NG_ARGS, int, oneOf, type Parsed, port, UsageError } from "./args.ts";
import { command } from "./command.ts";

export interface AvroClientOptions {
  host: string;
  port: number;
  file?: string;
  dirname?: string;
  headerFile?: string;
  batchSize: number;
  compression: "none" | "deflate";
  compressionLevel: number;
  ssl: boolean;
  trustAllCerts: boolean;
  truststore?: string;
  connectTimeout: number;
  requestTimeout: number;
}

/** flume-ng avro-client's default batch (AvroCLIClient.BATCH_SIZE). */
const DEFAULT_BATCH = 5;

/**
 * flume-ng avro-client's spellings (-H/--host, -p/--port, -F/--filename, --dirname,
 * -R/--headerFile, -P/--rpcProps, -c ignored) plus --batch-size, --compression, --ssl,
 * --truststore and --trust-all-certs. No defaults here: flags given win over -P's file.
 */
const AVRO_CLIENT_ARGS = {
  host: { type: "string", alias: "H", description: "Host name of the avro source" },
  port: { type: "string", alias: "p", parse: port(1), description: "Port of the avro source" },
  filename: { type: "string", alias: "F", description: "File to send, one event per line (default: standard input)" },
  dirname: { type: "string", description: "Spooling directory: send every file, then rename it to NAME.COMPLETED" },
  headerFile: { type: "string", alias: "R", description: "Properties file of headers added to every event" },
  rpcProps: { type: "string", alias: "P", description: "RPC client properties file (hosts, hosts.h1 = host:port, batch-size, compression-type, ssl, ...)" },
  "batch-size": { type: "string", parse: int(1), description: `Events per appendBatch (default ${DEFAULT_BATCH}, as flume-ng avro-client)` },
  compression: { type: "string", alias: "compression-type", parse: oneOf("none", "deflate"), description: "deflate to compress (the avro source must use compression-type = deflate)" },
  "compression-level": { type: "string", parse: int(0, 9, "zlib level"), description: "zlib level for deflate (default 6)" },
  ssl: { type: "boolean", description: "Connect with TLS" },
  truststore: { type: "string", description: "PEM file of trusted CA certificates" },
  "trust-all-certs": { type: "boolean", description: "Accept any server certificate" },
  conf: FLUME_NG_ARGS.conf,
} as const satisfies ArgsSpec;

/** The options the flags give; -P's file fills what they leave out; the inputs must exist. */
function avroClientOptions(a: Parsed<typeof AVRO_CLIENT_ARGS>): AvroClientOptions {
  const o: Partial<AvroClientOptions> = {
    host: a.host,
    port: a.port,
    file: a.filename,
    dirname: a.dirname,
    headerFile: a.headerFile,
    batchSize: a["batch-size"],
    compression: a.compression,
    compressionLevel: a["compression-level"],
    ssl: a.ssl || undefined,
    trustAllCerts: a["trust-all-certs"] || undefined,
    truststore: a.truststore,
  };
  if (a.rpcProps) applyRpcProps(o, a.rpcProps);
  if (o.file && o.dirname) throw new UsageError("--filename and --dirname options cannot be used simultaneously");
  if (!o.host || o.port === undefined) throw new UsageError("Either --rpcProps or both --host and --port must be specified.");
  // Inputs are checked before connecting, so a typo in a path is not reported as a connection problem.
  if (o.headerFile) mustExist("header file", o.headerFile, "file");
  if (o.file) mustExist("input file", o.file, "file");
  if (o.dirname) mustExist("directory", o.dirname, "directory");
  return {
    host: o.host,
    port: o.port,
    file: o.file,
    dirname: o.dirname,
    headerFile: o.headerFile,
    batchSize: o.batchSize ?? DEFAULT_BATCH,
    compression: o.compression ?? "none",
    compressionLevel: o.compressionLevel ?? 6,
    ssl: o.ssl ?? false,
    trustAllCerts: o.trustAllCerts ?? false,
    truststore: o.truststore,
    connectTimeout: o.connectTimeout ?? 20000,
    requestTimeout: o.requestTimeout ?? 20000,
  };
}

function mustExist(what: string, p: string, kind: "file" | "directory"): void {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st) throw new UsageError(`${what} ${p}: no such ${kind}`);
  if (kind === "file" && st.isDirectory()) throw new UsageError(`${what} ${p}: is a directory, not a file`);
  if (kind === "directory" && !st.isDirectory()) throw new UsageError(`${what} ${p}: not a directory`);
}

/** Reads the RPC client properties file of -P (Flume's RpcClientFactory keys); flags given win. */
function applyRpcProps(o: Partial<AvroClientOptions>, file: string): void {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new UsageError(`RPC client properties file ${file}: ${(err as Error).message}`);
  }
  const props = new Map([...parseProperties(text, file).entries].map(([k, e]) => [k, e.value.trim()]));
  const first = (props.get("hosts") ?? "").split(/\s+/)[0];
  const hostPort = first ? props.get(`hosts.${first}`) : undefined;
  if (hostPort && (o.host === undefined || o.port === undefined)) {
    const m = /^(.*):(\d+)$/.exec(hostPort);
    if (!m) throw new UsageError(`${file}: hosts.${first} must be host:port, got "${hostPort}"`);
    o.host ??= m[1];
    o.port ??= port(1)(m[2], `${file}: hosts.${first}`);
  }
  const num = (k: string) => (props.has(k) && /^\d+$/.test(props.get(k) as string) ? Number(props.get(k)) : undefined);
  o.batchSize ??= num("batch-size");
  o.connectTimeout ??= num("connect-timeout");
  o.requestTimeout ??= num("request-timeout");
  o.compressionLevel ??= num("compression-level");
  if (props.get("compression-type")?.toLowerCase() === "deflate") o.compression ??= "deflate";
  if (props.get("ssl")?.toLowerCase() === "true") o.ssl ??= true;
  if (props.get("trust-all-certs")?.toLowerCase() === "true") o.trustAllCerts ??= true;
  o.truststore ??= props.get("truststore");
}

function readHeaders(file: string): Record<string, string> {
  const parsed = parseProperties(readFileSync(file, "utf8"), file);
  const headers: Record<string, string> = {};
  for (const [k, e] of parsed.entries) headers[k] = e.value;
  return headers;
}

/**
 * Streams lines as events (SimpleTextLineEventReader: \n, \r\n or \r ends a line; a last line
 * without one still counts), calling send for every `batchSize` events.
 */
export async function streamLines(input: Readable, batchSize: number, headers: Record<string, string>, send: (events: Event[]) => Promise<void>): Promise<number> {
  let batch: Event[] = [];
  let rest: Buffer | null = null;
  let sent = 0;
  let skipLf = false;
  const withHeaders = Object.keys(headers).length > 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const b = batch;
    batch = [];
    await send(b);
    sent += b.length;
  };
  for await (const piece of input) {
    let chunk = typeof piece === "string" ? Buffer.from(piece) : (piece as Buffer);
    if (skipLf && chunk.length > 0 && chunk[0] === 0x0a) chunk = chunk.subarray(1);
    skipLf = false;
    const data: Buffer = rest ? Buffer.concat([rest, chunk]) : chunk;
    rest = null;
    let start = 0;
    // Native indexOf for both terminators; the \r position is only searched again once passed.
    let cr = data.indexOf(0x0d, 0);
    for (;;) {
      const lf = data.indexOf(0x0a, start);
      if (cr !== -1 && cr < start) cr = data.indexOf(0x0d, start);
      const i = cr === -1 ? lf : lf === -1 ? cr : Math.min(lf, cr);
      if (i === -1) break;
      batch.push({ headers: withHeaders ? { ...headers } : {}, body: data.subarray(start, i) });
      let next = i + 1;
      if (i === cr) {
        if (next < data.length) {
          if (data[next] === 0x0a) next++;
        } else skipLf = true;
      }
      start = next;
      if (batch.length >= batchSize) await flush();
    }
    if (start < data.length) rest = Buffer.from(data.subarray(start));
  }
  if (rest && rest.length > 0) batch.push({ headers: withHeaders ? { ...headers } : {}, body: rest });
  await flush();
  return sent;
}

/** Files of a spooling directory in Flume's default order (oldest first), skipping finished and hidden ones. */
function spoolFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => !n.startsWith(".") && !n.endsWith(".COMPLETED"))
    .map((n) => path.join(dir, n))
    .filter((p) => statSync(p).isFile())
    .map((p) => ({ p, t: statSync(p).mtimeMs }))
    .sort((a, b) => a.t - b.t || a.p.localeCompare(b.p))
    .map((x) => x.p);
}

/** Sends the input and resolves with the number of events sent; throws on any delivery failure. */
export async function runAvroClient(o: AvroClientOptions, stdin: Readable = process.stdin): Promise<number> {
  const headers = o.headerFile ? readHeaders(o.headerFile) : {};
  const options: AvroRpcClientOptions = {
    host: o.host,
    port: o.port,
    compression: o.compression,
    compressionLevel: o.compressionLevel,
    connectTimeout: o.connectTimeout,
    requestTimeout: o.requestTimeout,
    tls: clientTlsFromProperties({ ssl: String(o.ssl), "trust-all-certs": String(o.trustAllCerts), ...(o.truststore ? { truststore: o.truststore } : {}) }) ?? undefined,
  };
  const client = await AvroRpcClient.connect(options);
  const send = (events: Event[]) => client.appendBatch(events);
  try {
    if (o.file) return await streamLines(createReadStream(o.file), o.batchSize, headers, send);
    if (o.dirname) {
      let total = 0;
      for (const file of spoolFiles(o.dirname)) {
        total += await streamLines(createReadStream(file), o.batchSize, headers, send);
        renameSync(file, `${file}.COMPLETED`);
      }
      return total;
    }
    return await streamLines(stdin, o.batchSize, headers, send);
  } finally {
    client.close();
  }
}

export const avroClient = command({
  name: "avro-client",
  description: "Send lines of a file, a directory or standard input to an avro source (flume-ng avro-client)",
  args: AVRO_CLIENT_ARGS,
  async run(a) {
    const options = avroClientOptions(a);
    try {
      const sent = await runAvroClient(options);
      console.error(`flume avro-client: sent ${sent} events to ${options.host}:${options.port}`);
      return 0;
    } catch (err) {
      console.error(`flume avro-client: ${(err as Error).message}`);
      return 1;
    }
  },
});
