import type { ComponentConfig } from "../../config/schema.ts";
import type { ComponentDefinition } from "../component.ts";
import { ConfigurationError } from "../../core/errors.ts";
import { CLIENT_HOSTNAME_HEADER, CLIENT_IP_HEADER, EVENT_SIZE, KEEP_FIELDS, effectiveEventSize } from "./syslog/options.ts";
import { parseKeepFields, type SyslogCharset, syslogCharset } from "./syslog/parse.ts";
import { SyslogTcpSource } from "./syslog/tcp-source.ts";
import { TLS_PROPS, tlsErrors, tlsServerOptions } from "./tls-pem.ts";

function ports(list: string[]): number[] {
  if (list.length === 0) throw new ConfigurationError("ports", "must list at least one port (space-separated)");
  return list.map((p) => {
    if (!/^\d+$/.test(p) || Number(p) > 65535) throw new ConfigurationError("ports", `"${p}" is not a port number`);
    return Number(p);
  });
}

/** The charset.port.<port> settings, checked. */
function portCharsets(config: ComponentConfig): Record<string, SyslogCharset> {
  const out: Record<string, SyslogCharset> = {};
  for (const [port, name] of Object.entries(config.group("charset.port."))) {
    if (!/^\d+$/.test(port)) throw new ConfigurationError(`charset.port.${port}`, `"${port}" is not a port number`);
    out[port] = charset(name, `charset.port.${port}`);
  }
  return out;
}

function charset(name: string, key: string): SyslogCharset {
  const cs = syslogCharset(name);
  if (!cs) throw new ConfigurationError(key, `unsupported charset "${name}"; use UTF-8 or ISO-8859-1`);
  return cs;
}

function charsetErrors(config: ComponentConfig): { key: string; message: string }[] {
  try {
    charset(config.string("charset.default"), "charset.default");
    portCharsets(config);
    return [];
  } catch (err) {
    if (err instanceof ConfigurationError) return [{ key: err.key, message: err.message.slice(err.key.length + 2) }];
    throw err;
  }
}

export const definition: ComponentDefinition<SyslogTcpSource> = {
  schema: {
    kind: "source",
    type: "multiport_syslogtcp",
    aliases: ["org.apache.flume.source.MultiportSyslogTCPSource"],
    doc: "Receives syslog over TCP on several ports at once; like syslogtcp, with per-port headers and batching.",
    props: [
      { key: "host", type: "string", default: "0.0.0.0", doc: "Host name or IP address to bind to." },
      { key: "ports", type: "list", required: true, doc: "Space-separated list of ports to listen on." },
      EVENT_SIZE,
      KEEP_FIELDS,
      { key: "portHeader", type: "string", doc: "Header to store the local port the message arrived on." },
      CLIENT_IP_HEADER,
      CLIENT_HOSTNAME_HEADER,
      { key: "batchSize", type: "int", default: 100, min: 1, doc: "Most events handed to the channel in one transaction." },
      { key: "charset.default", type: "string", default: "UTF-8", doc: "Character set of the messages: UTF-8 or ISO-8859-1." },
      { key: "readBufferSize", type: "int", default: 1024, min: 1, doc: "Accepted for compatibility; reads use the socket's buffer.", aliases: ["readBufferBytes"] },
      { key: "numProcessors", type: "int", min: 1, doc: "Accepted for compatibility; one event loop serves all ports." },
      ...TLS_PROPS,
    ],
    prefixes: [{ prefix: "charset.port.", doc: "charset.port.<port>: character set for one port (UTF-8 or ISO-8859-1)" }],
  },
  create(config, ctx) {
    return new SyslogTcpSource(ctx, {
      type: "multiport_syslogtcp",
      host: config.string("host"),
      ports: ports(config.list("ports")),
      eventSize: effectiveEventSize(config.int("eventSize")),
      batchSize: config.int("batchSize"),
      parse: { dialect: "multiport", keepFields: parseKeepFields(config.string("keepFields")), rfc3164Zone: "utc", charset: charset(config.string("charset.default"), "charset.default") },
      portCharsets: portCharsets(config),
      portHeader: config.optionalString("portHeader"),
      clientIPHeader: config.optionalString("clientIPHeader"),
      clientHostnameHeader: config.optionalString("clientHostnameHeader"),
      tls: tlsServerOptions(config),
    });
  },
  validate(config) {
    const errors = [...tlsErrors(config), ...charsetErrors(config)];
    try {
      ports(config.list("ports"));
    } catch (err) {
      if (err instanceof ConfigurationError) errors.push({ key: "ports", message: err.message.slice("ports: ".length) });
    }
    return errors;
  },
};
