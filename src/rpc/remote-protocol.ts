import { createHash } from "node:crypto";
import type { Event } from "../core/event.ts";
import type { AvroReader } from "./binary.ts";
import { RpcProtocolError } from "./errors.ts";
import { readEvent, readEventArray } from "./messages.ts";
import { MESSAGE_APPEND, MESSAGE_APPEND_BATCH, PROTOCOL_HASH_HEX, PROTOCOL_TEXT } from "./protocol.ts";

/**
 * How to read a peer's requests, given the protocol it announced in the handshake. Flume's
 * own protocol (and any text with the same request schemas) takes the hand-written fast path;
 * a different but compatible protocol is read through an avsc resolver.
 */
export interface RemoteProtocol {
  readonly hashHex: string;
  readonly sameAsLocal: boolean;
  has(message: string): boolean;
  readAppendBatch(r: AvroReader): Event[];
  readAppend(r: AvroReader): Event;
}

const LOCAL: RemoteProtocol = {
  hashHex: PROTOCOL_HASH_HEX,
  sameAsLocal: true,
  has: (m) => m === MESSAGE_APPEND || m === MESSAGE_APPEND_BATCH,
  readAppendBatch: readEventArray,
  readAppend: readEvent,
};

export function localProtocol(): RemoteProtocol {
  return LOCAL;
}

export function md5Hex(text: string): string {
  return createHash("md5").update(text, "utf8").digest("hex");
}

interface AvscType {
  equals(other: AvscType): boolean;
  createResolver(other: AvscType): unknown;
  decode(buf: Buffer, pos: number, resolver?: unknown): { value: unknown; offset: number };
}
interface AvscMessage {
  requestType: AvscType;
}
interface AvscService {
  message(name: string): AvscMessage | undefined;
}
interface AvscModule {
  Service: { forProtocol(p: unknown): AvscService };
}

let avscPromise: Promise<AvscModule> | null = null;
/** avsc is loaded only when a peer announces a protocol text, so the CLI starts fast. */
function loadAvsc(): Promise<AvscModule> {
  avscPromise ??= import("avsc").then((m) => ((m as { default?: AvscModule }).default ?? m) as unknown as AvscModule);
  return avscPromise;
}

let localService: AvscService | null = null;

/** Builds the reader for a protocol text a client sent with its handshake. */
export async function parseRemoteProtocol(text: string): Promise<RemoteProtocol> {
  const hashHex = md5Hex(text);
  if (hashHex === PROTOCOL_HASH_HEX) return LOCAL;
  const avsc = await loadAvsc();
  let remote: AvscService;
  try {
    remote = avsc.Service.forProtocol(JSON.parse(text));
  } catch (err) {
    throw new RpcProtocolError(`the client's protocol text is not a valid Avro protocol: ${(err as Error).message}`);
  }
  localService ??= avsc.Service.forProtocol(JSON.parse(PROTOCOL_TEXT));
  const readers = new Map<string, (r: AvroReader) => unknown>();
  let same = true;
  for (const name of [MESSAGE_APPEND, MESSAGE_APPEND_BATCH]) {
    const theirs = remote.message(name);
    const ours = localService.message(name);
    if (!theirs || !ours) continue;
    if (ours.requestType.equals(theirs.requestType)) {
      readers.set(name, name === MESSAGE_APPEND ? readEvent : readEventArray);
      continue;
    }
    same = false;
    let resolver: unknown;
    try {
      resolver = ours.requestType.createResolver(theirs.requestType);
    } catch (err) {
      throw new RpcProtocolError(`the client's ${name} message cannot be read as Flume's: ${(err as Error).message}`);
    }
    const field = name === MESSAGE_APPEND ? "event" : "events";
    readers.set(name, (r: AvroReader) => {
      const { value, offset } = ours.requestType.decode(r.buf, r.pos, resolver);
      if (offset < 0) throw new RpcProtocolError(`truncated ${name} request`);
      r.pos = offset;
      return (value as Record<string, unknown>)[field];
    });
  }
  const get = (name: string) => {
    const reader = readers.get(name);
    if (!reader) throw new RpcProtocolError(`the client's protocol has no message ${name}`);
    return reader;
  };
  return {
    hashHex,
    sameAsLocal: same,
    has: (m) => readers.has(m),
    readAppendBatch: (r) => get(MESSAGE_APPEND_BATCH)(r) as Event[],
    readAppend: (r) => get(MESSAGE_APPEND)(r) as Event,
  };
}
