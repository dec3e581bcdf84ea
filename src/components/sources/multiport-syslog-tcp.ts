import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { ConfigurationError, configurationProblems } from "../../core/errors.ts";
import { CLIENT_HOSTNAME_HEADER, CLIENT_IP_HEADER, EVENT_SIZE, KEEP_FIELDS, effectiveEventSize, SYSLOG_FEED, syslogPlain } from "./syslog/options.ts";
import { parseKeepFields, type SyslogCharset, syslogCharset } from "./syslog/parse.ts";
import { SyslogTcpSource } from "./syslog/tcp-source.ts";
import { SERVER_TLS_PROPS, serverTls, tlsProblems } from "../../net/tls.ts";

function ports(list: readonly string[]): number[] {
  if (list.length === 0) throw new ConfigurationError("ports", "must list at least one port (space-separated)");
  return list.map((p) => {
    if (!/^\d+$/.test(p) || Number(p) > 65535) throw new ConfigurationError("ports", `"${p}" is not a port number`);
    return Number(p);
  });
}

/** The charset names syslogCharset reads (case-insensitive). */
const CHARSETS = { type: "enum", values: ["UTF-8", "UTF8", "ISO-8859-1", "latin1", "US-ASCII", "ASCII"] } as const;

function charset(name: string): SyslogCharset {
  return syslogCharset(name) ?? "utf-8";
}

/** The charset.port.<port> settings, by port. */
function portCharsets(group: Readonly<Record<string, string>>): Record<string, SyslogCharset> {
  return Object.fromEntries(Object.entries(group).map(([port, name]) => [port, charset(name)]));
}

export const definition = defineComponent({
  ...builtIn.multiportSyslogtcpSource,
  doc: "Receives syslog over TCP on several ports at once; like syslogtcp, with per-port headers and batching.",
  props: {
    host: { type: "string", default: "0.0.0.0", doc: "Host name or IP address to bind to." },
    ports: { type: "list", required: true, doc: "Space-separated list of ports to listen on." },
    ...EVENT_SIZE,
    ...KEEP_FIELDS,
    portHeader: { type: "string", doc: "Header to store the local port the message arrived on." },
    ...CLIENT_IP_HEADER,
    ...CLIENT_HOSTNAME_HEADER,
    batchSize: { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Most events handed to the channel in one transaction." },
    "charset.default": { ...CHARSETS, default: "UTF-8", doc: "Character set of the messages: UTF-8 or ISO-8859-1." },
    readBufferSize: { type: "int", default: 1024, min: 1, doc: "Accepted for compatibility; reads use the socket's buffer.", aliases: ["readBufferBytes"] },
    numProcessors: { type: "int", min: 1, doc: "Accepted for compatibility; one event loop serves all ports." },
    ...SERVER_TLS_PROPS,
  },
  groups: { charsetPort: { prefix: "charset.port.", doc: "charset.port.<port>: character set for one port (UTF-8 or ISO-8859-1)", value: CHARSETS } },
  create(config, ctx) {
    return new SyslogTcpSource(ctx, {
      type: "multiport_syslogtcp",
      host: config.host,
      ports: ports(config.ports),
      eventSize: effectiveEventSize(config.eventSize),
      batchSize: config.batchSize,
      parse: { dialect: "multiport", keepFields: parseKeepFields(config.keepFields), rfc3164Zone: "utc", charset: charset(config["charset.default"]) },
      portCharsets: portCharsets(config.charsetPort),
      portHeader: config.portHeader,
      clientIPHeader: config.clientIPHeader,
      clientHostnameHeader: config.clientHostnameHeader,
      tls: serverTls(config),
    });
  },
  validate(config) {
    const errors = [...tlsProblems(() => serverTls(config)), ...configurationProblems(() => ports(config.ports))];
    for (const port of Object.keys(config.charsetPort)) if (!/^\d+$/.test(port)) errors.push({ key: `charset.port.${port}`, message: `"${port}" is not a port number` });
    return errors;
  },
  streamFeed: { ...SYSLOG_FEED, address: (o) => ({ host: o.host, port: ports(o.ports)[0] }), plain: syslogPlain },
});
