/**
 * Puts our record-batch encoder (record-batch.ts) under the library's Producer: the Producer
 * asks its client for the Produce API (kGetApi) before every request; the API handed back here
 * writes the request body with encodeProduceRequest and sends it on the same connection with
 * the library's own response parser. Everything else stays the Producer's: metadata, the
 * partitioner, the idempotent producer's id, epoch and sequences (it passes them in the
 * options it gives the API), retries, leader changes. Compressed or transactional sends, and
 * versions we do not write, go to the library's API unchanged.
 *
 * Library exports used (in its 1.x and 2.x alike): kGetApi (a public method of its clients),
 * Writer.create/append, the produceV3..V11 namespaces' parseResponse, and
 * Connection.send(apiKey, apiVersion, createPayload, parser, requestTags, responseTags, cb) and
 * Connection.socket (whose writes sent-requests.ts watches during our sends).
 */
import { asLibraryApi, type Callback, type LibraryApi, replaceApi } from "./api-hook.ts";
import type { KafkaModule } from "./client.ts";
import { type BatchProducer, encodeProduceRequest, type ProduceMessage } from "./record-batch.ts";
import { freeIfWhole } from "./response-release.ts";
import { sendNoted, type SocketLike } from "./sent-requests.ts";

interface WriterLike {
  context: Record<string, unknown>;
  append(buffer: Buffer): WriterLike;
}

interface ConnectionLike {
  /** The connection's socket (a public getter of the library's Connection). */
  readonly socket?: SocketLike;
  send(apiKey: number, apiVersion: number, createPayload: () => WriterLike, parser: ResponseParser, requestTags: boolean, responseTags: boolean, callback: Callback): void;
}

type ResponseParser = (correlationId: number, apiKey: number, apiVersion: number, reader: never) => unknown;

interface ProduceOptions extends BatchProducer {
  compression?: string;
  transactionalId?: string | null;
}

type ProduceApi = ((connection: ConnectionLike, acks: number, timeout: number, messages: ProduceMessage[], options: ProduceOptions, callback: Callback) => void) & LibraryApi;

const FIRST = 3;
const LAST = 11;

/**
 * The messages with every value a Buffer, as the library's own writer needs (a sink hands the
 * events' bodies over as they are, any Uint8Array; ours writes from the bytes). FlumeEvents
 * reach this path already encoded (producer.ts libraryMessages: the library's Producer.send
 * keeps no other field of a record).
 */
function withBufferValues(messages: ProduceMessage[]): ProduceMessage[] {
  const ready = (m: ProduceMessage) => m.value == null || Buffer.isBuffer(m.value);
  if (messages.every(ready)) return messages;
  return messages.map((m) => {
    if (ready(m)) return m;
    const v = m.value!;
    return { ...m, value: Buffer.from(v.buffer, v.byteOffset, v.byteLength) };
  });
}

/** Ours in place of the library's Produce API of the same version; the library's when we do not write that version. */
function ownProduceApi(kafka: KafkaModule, api: ProduceApi): ProduceApi {
  const version = api.version;
  const mod = (kafka as unknown as Record<string, { parseResponse?: ResponseParser } | undefined>)[`produceV${version}`];
  if (version < FIRST || version > LAST || typeof mod?.parseResponse !== "function") return api;
  const parse = mod.parseResponse;
  const flexible = version >= 9;
  const own = ((connection, acks, timeout, messages, options, callback) => {
    if ((options.compression && options.compression !== "none") || options.transactionalId) {
      api(connection, acks, timeout, withBufferValues(messages), options, callback);
      return;
    }
    let parts: Buffer[] = [];
    const payload = () => {
      const writer = kafka.Writer.create() as unknown as WriterLike;
      parts = encodeProduceRequest(version, acks, timeout, messages, options);
      for (const part of parts) writer.append(part);
      if (acks === 0) writer.context.noResponse = true;
      return writer;
    };
    // The connection copies the parts into the request it writes; once it is answered (or failed), the record batches are freed at once, not at the next collection,
    // and so is its copy once the broker answered (sent-requests.ts).
    let sent: (() => void) | null = null;
    const done: Callback = (error, payload) => {
      for (const part of parts) freeIfWhole(part);
      if (error === null && acks !== 0) sent?.();
      callback(error, payload);
    };
    sent = sendNoted(connection.socket, () => parts, () => connection.send(api.key, version, payload, parse, flexible, flexible, done));
  }) as ProduceApi;
  return asLibraryApi(own, api);
}

/** Makes `client` (a Producer) write its Produce requests with our encoder. */
export function useOwnRecordBatches(kafka: KafkaModule, client: object): void {
  replaceApi<ProduceApi>(kafka, client, "Produce", (library) => ownProduceApi(kafka, library));
}
