import { FlumeError } from "../../../core/errors.ts";
import type { Event } from "../../../core/event.ts";
import type { ComponentDefinition } from "../../component.ts";

/** The parts of an HTTP request a handler reads. */
export interface HttpRequestData {
  method: string;
  url: URL;
  /** Header names in lower case. */
  headers: Record<string, string | string[] | undefined>;
  body: Uint8Array;
}

/**
 * Turns one request into the events of one transaction (Flume's HTTPSourceHandler). A handler
 * type is a component of kind "httphandler" in the registry (the built-in JSON and BLOB, and
 * custom modules), named by the http source's `handler`, its settings under `handler.`.
 */
export interface HttpSourceHandler {
  getEvents(request: HttpRequestData): Event[];
  /** The largest request body it takes, when it sets one (BLOB's maxBlobLength): the source's maxBodySize is then ignored. */
  readonly maxBodySize?: number;
}

/** A handler type (see HttpSourceHandler). */
export type HttpHandlerDefinition = ComponentDefinition<HttpSourceHandler>;

/** The request is malformed; the source answers 400 with this message (Flume's HTTPBadRequestException). */
export class HttpBadRequestError extends FlumeError {}

/** The charset parameter of a Content-Type header, lower case, or undefined. */
export function contentTypeCharset(contentType: string | string[] | undefined): string | undefined {
  const value = Array.isArray(contentType) ? contentType[0] : contentType;
  if (!value) return undefined;
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(value);
  return m ? m[1].toLowerCase() : undefined;
}
