/**
 * How our Produce encoder (produce-api.ts) and Fetch reader (fetch-api.ts) get under the
 * library's clients: a client asks itself for a protocol API (its public kGetApi) before every
 * request; the lookup is wrapped so that one API name answers with ours, made once per
 * library API (one per version agreed with a broker), everything else unchanged.
 */
import type { KafkaModule } from "./client.ts";

export type Callback = (error: Error | null, payload?: unknown) => void;

/** What the library's API functions carry besides being callable. */
export interface LibraryApi {
  key: number;
  version: number;
  async?: unknown;
}

type GetApi = (name: string, callback: (error: Error | null, api?: unknown) => void) => void;

/** `own` marked as the API `library` stands for (its key, version and async form). */
export function asLibraryApi<F extends (...args: never[]) => void>(own: F, library: LibraryApi): F & LibraryApi {
  return Object.assign(own, { key: library.key, version: library.version, async: library.async });
}

/** Makes `client` answer its requests for the API `name` with `make(library's API)`. */
export function replaceApi<A extends LibraryApi>(kafka: KafkaModule, client: object, name: string, make: (library: A) => A): void {
  const slot = client as Record<symbol, GetApi>;
  const getApi = slot[kafka.kGetApi].bind(client);
  const made = new WeakMap<A, A>();
  slot[kafka.kGetApi] = (asked, callback) =>
    getApi(asked, (error, api) => {
      if (error || asked !== name || typeof api !== "function") {
        callback(error, api);
        return;
      }
      const library = api as unknown as A;
      let own = made.get(library);
      if (!own) made.set(library, (own = make(library)));
      callback(null, own);
    });
}
