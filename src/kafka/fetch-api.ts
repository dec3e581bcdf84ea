/**
 * Puts our Fetch response reader (fetch-response.ts) under the library's Consumer, as
 * produce-api.ts does for Produce: the Consumer asks its client for the Fetch API (kGetApi)
 * before every fetch; the API handed back here writes the library's own request and reads the
 * response with ours, which leaves each partition's record batches as one view of the response
 * (record-batch-reader.ts reads them). The Consumer keeps everything else: metadata, leaders
 * and preferred replicas, fetch sessions, retries, errors (ours raises its ResponseError with
 * the same paths).
 *
 * Library exports used: kGetApi, the fetchV4..V17 namespaces' createRequest, ResponseError,
 * crc32c, compressionsAlgorithmsByBitmask, and Connection.send(apiKey, apiVersion,
 * createPayload, parser, requestTags, responseTags, cb).
 */
import { asLibraryApi, type Callback, type LibraryApi, replaceApi } from "./api-hook.ts";
import type { KafkaModule } from "./client.ts";
import { FIRST_FETCH_VERSION, LAST_FETCH_VERSION, parseFetchResponse } from "./fetch-response.ts";
import type { Crc32c, Inflate } from "./record-batch-reader.ts";
import { noteResponseBody } from "./response-release.ts";

interface ReaderLike {
  position: number;
  length: number;
  buffer: { slice(start: number, end: number): Buffer };
}

type ResponseParser = (correlationId: number, apiKey: number, apiVersion: number, reader: ReaderLike) => unknown;

interface ConnectionLike {
  send(apiKey: number, apiVersion: number, createPayload: () => unknown, parser: ResponseParser, requestTags: boolean, responseTags: boolean, callback: Callback): void;
}

type FetchApi = ((connection: ConnectionLike, ...args: unknown[]) => void) & LibraryApi;

type ResponseErrorClass = new (apiKey: number, apiVersion: number, errors: Record<string, [number, null]>, response: unknown) => Error;

/** The parser of `version`'s responses: ours, raising the library's ResponseError for the errors a response carries. */
export function fetchResponseParser(kafka: KafkaModule, version: number): ResponseParser {
  const ResponseError = kafka.ResponseError as unknown as ResponseErrorClass;
  return (_correlationId, apiKey, apiVersion, reader) => {
    // One contiguous buffer (a copy only when the response spans socket reads): plain reads, and views for the records.
    const body = reader.buffer.slice(reader.position, reader.length);
    noteResponseBody(body);
    const { response, errors } = parseFetchResponse(version, body);
    if (errors.length > 0) throw new ResponseError(apiKey, apiVersion, Object.fromEntries(errors.map(([path, code]) => [path, [code, null] as [number, null]])), response);
    return response;
  };
}

function ownFetchApi(kafka: KafkaModule, api: FetchApi): FetchApi {
  const version = api.version;
  const mod = (kafka as unknown as Record<string, { createRequest?: (...args: unknown[]) => unknown } | undefined>)[`fetchV${version}`];
  const createRequest = mod?.createRequest;
  const own = ((connection: ConnectionLike, ...args: unknown[]) => {
    const callback = args.pop() as Callback;
    if (version < FIRST_FETCH_VERSION || version > LAST_FETCH_VERSION || typeof createRequest !== "function") {
      callback(new Error(`Fetch version ${version} (agreed with the broker) is not one the Kafka source and channel read (${FIRST_FETCH_VERSION} to ${LAST_FETCH_VERSION})`));
      return;
    }
    const flexible = version >= 12;
    connection.send(api.key, version, () => createRequest(...args), fetchResponseParser(kafka, version), flexible, flexible, callback);
  }) as FetchApi;
  return asLibraryApi(own, api);
}

/** Makes `client` (a Consumer) read its Fetch responses with ours. */
export function useOwnFetchReader(kafka: KafkaModule, client: object): void {
  replaceApi<FetchApi>(kafka, client, "Fetch", (library) => ownFetchApi(kafka, library));
}

interface Pool {
  close(callback: (error?: unknown) => void): void;
}

/**
 * A connection pool of the Consumer's own for the fetches, as the library's message streams
 * have: a fetch waits up to fetch.max.wait.ms at the broker, and the group's requests
 * (heartbeats, offset commits) on the same connection would wait behind it. Null when the
 * client has no such method (then fetches share its connections).
 */
export function fetchConnectionPool(client: object): Pool | null {
  const proto = Object.getPrototypeOf(client) as object;
  const symbol = Object.getOwnPropertySymbols(proto).find((s) => s.description === "plt.kafka.base.createConnectionPool");
  const create = symbol ? (client as Record<symbol, unknown>)[symbol] : undefined;
  return typeof create === "function" ? (create.call(client) as Pool) : null;
}

/** The library's CRC32C (native where it loads, else WebAssembly). */
export function libraryCrc32c(kafka: KafkaModule): Crc32c {
  const crc = kafka.crc32c as unknown as (bytes: Buffer) => number;
  return (bytes, from, to) => crc(bytes.subarray(from, to));
}

/** Inflates a compressed batch's records with the library's codecs (gzip, snappy, lz4, zstd). */
export function libraryInflate(kafka: KafkaModule): Inflate {
  const codecs = kafka.compressionsAlgorithmsByBitmask as unknown as Record<number, { decompressSync(b: Buffer): Buffer } | undefined>;
  return (codec, compressed) => {
    const algorithm = codecs[codec];
    if (!algorithm) throw new Error(`unknown compression codec ${codec}`);
    return algorithm.decompressSync(compressed);
  };
}
