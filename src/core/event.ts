/** A Flume event: string headers and an opaque byte body. */
export interface Event {
  headers: Record<string, string>;
  body: Uint8Array;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Builds an event; a string body is encoded as UTF-8. */
export function createEvent(body: Uint8Array | string, headers: Record<string, string> = {}): Event {
  return { headers, body: typeof body === "string" ? encoder.encode(body) : body };
}

export function bodyText(event: Event): string {
  return decoder.decode(event.body);
}
