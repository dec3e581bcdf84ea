import type { PropSpec } from "../../../config/schema.ts";
import { DEFAULT_EVENT_SIZE, MIN_EVENT_SIZE } from "./parse.ts";

/** Properties every syslog source reads, with Flume's names and defaults. */
export const KEEP_FIELDS: PropSpec = {
  key: "keepFields",
  type: "string",
  default: "none",
  doc: "Header fields kept in the body: none, all, or a list of priority, version, timestamp, hostname (true/false are the old spellings of all/none).",
};
export const EVENT_SIZE: PropSpec = { key: "eventSize", type: "int", default: DEFAULT_EVENT_SIZE, min: 1, doc: "Longest message in bytes; longer ones become an Incomplete event and Invalid pieces." };
export const CLIENT_IP_HEADER: PropSpec = { key: "clientIPHeader", type: "string", doc: "Header to store the client's IP address in." };
export const CLIENT_HOSTNAME_HEADER: PropSpec = { key: "clientHostnameHeader", type: "string", doc: "Header to store the client's host name in (reverse lookup once per connection)." };

/** Flume raises an eventSize below 10 to 10. */
export function effectiveEventSize(n: number): number {
  return Math.max(n, MIN_EVENT_SIZE);
}
