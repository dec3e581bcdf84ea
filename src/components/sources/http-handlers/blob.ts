import type { Event } from "../../../core/event.ts";
import { defineComponent } from "../../component.ts";
import { builtIn } from "../../registry.ts";
import { HttpBadRequestError, type HttpRequestData, type HttpSourceHandler } from "./handler.ts";

/**
 * Flume's BLOBHandler: the whole request body is one event; the query parameters (first value
 * of each) become its headers. Parameters named in mandatoryParameters must be present.
 */
export class BlobHandler implements HttpSourceHandler {
  constructor(
    private readonly mandatory: readonly string[] = [],
    readonly maxBodySize?: number,
  ) {}

  getEvents(request: HttpRequestData): Event[] {
    const headers: Record<string, string> = {};
    for (const [k, v] of request.url.searchParams) if (!(k in headers)) headers[k] = v;
    const form = request.headers["content-type"];
    if (typeof form === "string" && form.toLowerCase().startsWith("application/x-www-form-urlencoded") && request.method === "POST") {
      // Servlet parameters include the form fields of such a body; the body is still kept whole.
      for (const [k, v] of new URLSearchParams(new TextDecoder().decode(request.body))) if (!(k in headers)) headers[k] = v;
    }
    for (const name of this.mandatory) {
      if (!(name in headers)) throw new HttpBadRequestError(`Please specify ${name} parameter in the request.`);
    }
    return [{ headers, body: request.body }];
  }
}

export const definition = defineComponent({
  ...builtIn.blobHttpHandler,
  doc: "The whole request body is one event; the query parameters are its headers.",
  props: {
    mandatoryParameters: { type: "string", default: "", doc: "Comma-separated parameters every request must have (400 without)" },
    maxBlobLength: { type: "int", min: 1, doc: "Largest body in bytes (413 over it); replaces the source's maxBodySize" },
  },
  create: (config): HttpSourceHandler =>
    new BlobHandler(
      config.mandatoryParameters
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== ""),
      config.maxBlobLength,
    ),
});
