import type { ThriftProtocolName } from "./types.ts";

/**
 * How Flume 1.11 reads the thrift source's and sink's `protocol` property: binary or compact
 * (the default), nothing else (no TJSONProtocol). Both check the value case-insensitively but
 * select binary only for the lowercase word, so "BINARY" speaks compact in Flume; Flume TS does
 * the same, for wire compatibility with the agents such a config talks to, and says so.
 */
export const PROTOCOL_DOC = "binary or compact (Flume's default); must match the other end. TJSONProtocol is not supported, as in Flume";

/** The source refuses any other value (Flume's ThriftSource fails its configuration). */
export function protocolError(value: string): string | null {
  const lower = value.trim().toLowerCase();
  if (lower === "binary" || lower === "compact") return null;
  return `must be binary or compact (the only Thrift protocols Flume's thrift source and sink speak), got "${value}"`;
}

/** The protocol a value selects; warn gets a line for values that do not mean what they say. */
export function resolveProtocol(value: string, warn: (message: string) => void): ThriftProtocolName {
  const v = value.trim();
  if (v === "binary") return "binary";
  const lower = v.toLowerCase();
  if (lower === "binary") warn(`protocol = ${v} selects the compact protocol, as in Flume 1.11 (only the lowercase "binary" selects binary); write protocol = binary for the binary protocol`);
  // Only the sink gets here with other values: Flume's ThriftRpcClient warns and uses compact.
  else if (lower !== "compact") warn(`protocol = ${v} is not binary or compact; using compact, as Flume 1.11 does`);
  return "compact";
}

export const KERBEROS_UNSUPPORTED =
  "= true (Kerberos SASL/GSSAPI authentication) is not supported by Flume TS; remove it (and the principal and keytab keys) and use ssl = true for an encrypted hop, or keep this hop on Apache Flume";
