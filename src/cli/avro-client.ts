import { createReadStream, readdirSync, readFileSync, renameSync, statSync } from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { type ArgsDef, defineCommand } from "citty";
import { parseProperties } from "../config/properties.ts";
import type { Event } from "../core/event.ts";
import { AvroRpcClient, type AvroRpcClientOptions } from "../rpc/client.ts";
import { clientTlsFromProperties } from "../net/tls.ts";
import { ArgReader, UsageError } from "./args.ts";

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

export class AvroClientUsageError extends UsageError {}

/** flume-ng avro-client's default batch (AvroCLIClient.BATCH_SIZE). */
const DEFAULT_BATCH = 5;

/**
 * Parses avro-client arguments with flume-ng's spellings (-H/--host, -p/--port,
 * -F/--filename, --dirname, -R/--headerFile, -P/--rpcProps) plus --batch-size,
 * --compression, --ssl, --truststore and --trust-all-certs.
 */
export function parseAvroClientArgs(argv: string[]): AvroClientOptions {
  const o: Partial<AvroClientOptions> & { rpcProps?: string } = {};
  const r = new ArgReader(argv, AvroClientUsageError);
  for (let arg = r.next(); arg !== undefined; arg = r.next()) {
    switch (arg) {
      case "-H":
      case "--host":
        o.host = r.value(arg);
        break;
      case "-p":
      case "--port":
        o.port = portNumber(r, arg);
        break;
      case "-F":
      case "--filename":
        o.file = r.value(arg);
        break;
      case "--dirname":
        o.dirname = r.value(arg);
        break;
      case "-R":
      case "--headerFile":
        o.headerFile = r.value(arg);
        break;
      case "-P":
      case "--rpcProps":
        o.rpcProps = r.value(arg);
        break;
      case "--batch-size":
        o.batchSize = r.int(arg, 1);
        break;
      case "--compression":
      case "--compression-type": {
        const v = r.value(arg).toLowerCase();
        if (v !== "deflate" && v !== "none") throw new AvroClientUsageError(`${arg} is deflate or none, got "${v}"`);
        o.compression = v;
        break;
      }
      case "--compression-level":
        o.compressionLevel = r.int(arg, 0);
        break;
      case "--ssl":
        o.ssl = true;
        break;
      case "--trust-all-certs":
        o.trustAllCerts = true;
        break;
      case "--truststore":
        o.truststore = r.value(arg);
        break;
      case "-c":
      case "--conf":
        r.value(arg); // flume-ng's conf directory: nothing to read
        break;
      default:
        throw new AvroClientUsageError(`unknown option "${r.raw}"`);
    }
  }
  if (o.rpcProps) applyRpcProps(o, o.rpcProps);
  if (o.file && o.dirname) throw new AvroClientUsageError("--filename and --dirname options cannot be used simultaneously");
  if (!o.host || o.port === undefined) throw new AvroClientUsageError("Either --rpcProps or both --host and --port must be specified.");
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

/** A TCP port: a whole number from 1 to 65535. */
function portNumber(r: ArgReader, flag: string, text: string = r.value(flag)): number {
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > 65535) {
    throw new AvroClientUsageError(`${flag} needs a port number from 1 to 65535, got "${text}"`);
  }
  return Number(text);
}

function mustExist(what: string, p: string, kind: "file" | "directory"): void {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st) throw new AvroClientUsageError(`${what} ${p}: no such ${kind}`);
  if (kind === "file" && st.isDirectory()) throw new AvroClientUsageError(`${what} ${p}: is a directory, not a file`);
  if (kind === "directory" && !st.isDirectory()) throw new AvroClientUsageError(`${what} ${p}: not a directory`);
}

/** Reads the RPC client properties file of -P (Flume's RpcClientFactory keys); flags given win. */
function applyRpcProps(o: Partial<AvroClientOptions>, file: string): void {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new AvroClientUsageError(`RPC client properties file ${file}: ${(err as Error).message}`);
  }
  const props = new Map([...parseProperties(text, file).entries].map(([k, e]) => [k, e.value.trim()]));
  const first = (props.get("hosts") ?? "").split(/\s+/)[0];
  const hostPort = first ? props.get(`hosts.${first}`) : undefined;
  if (hostPort && (o.host === undefined || o.port === undefined)) {
    const m = /^(.*):(\d+)$/.exec(hostPort);
    if (!m) throw new AvroClientUsageError(`${file}: hosts.${first} must be host:port, got "${hostPort}"`);
    o.host ??= m[1];
    if (Number(m[2]) < 1 || Number(m[2]) > 65535) throw new AvroClientUsageError(`${file}: hosts.${first} needs a port number from 1 to 65535, got "${m[2]}"`);
    o.port ??= Number(m[2]);
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

const HELP_ARGS = {
  host: { type: "string", alias: "H", description: "Host name of the avro source" },
  port: { type: "string", alias: "p", description: "Port of the avro source" },
  filename: { type: "string", alias: "F", description: "File to send, one event per line (default: standard input)" },
  dirname: { type: "string", description: "Spooling directory: send every file, then rename it to NAME.COMPLETED" },
  headerFile: { type: "string", alias: "R", description: "Properties file of headers added to every event" },
  rpcProps: { type: "string", alias: "P", description: "RPC client properties file (hosts, hosts.h1 = host:port, batch-size, compression-type, ssl, ...)" },
  "batch-size": { type: "string", description: "Events per appendBatch (default 5, as flume-ng avro-client)" },
  compression: { type: "string", description: "deflate to compress (the avro source must use compression-type = deflate)" },
  "compression-level": { type: "string", description: "zlib level for deflate (default 6)" },
  ssl: { type: "boolean", description: "Connect with TLS" },
  truststore: { type: "string", description: "PEM file of trusted CA certificates" },
  "trust-all-certs": { type: "boolean", description: "Accept any server certificate" },
} satisfies ArgsDef;

export const avroClient = defineCommand({
  meta: { name: "avro-client", description: "Send lines of a file, a directory or standard input to an avro source (flume-ng avro-client)" },
  args: HELP_ARGS,
  async run({ rawArgs }) {
    let options: AvroClientOptions;
    try {
      options = parseAvroClientArgs(rawArgs);
    } catch (err) {
      console.error(`flume avro-client: ${(err as Error).message}`);
      process.exit(2);
    }
    try {
      const sent = await runAvroClient(options);
      console.error(`flume avro-client: sent ${sent} events to ${options.host}:${options.port}`);
      process.exit(0);
    } catch (err) {
      console.error(`flume avro-client: ${(err as Error).message}`);
      process.exit(1);
    }
  },
});
