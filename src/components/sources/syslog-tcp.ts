import type { ComponentDefinition } from "../component.ts";
import { CLIENT_HOSTNAME_HEADER, CLIENT_IP_HEADER, customFormat, customFormatErrors, EVENT_SIZE, effectiveEventSize, FORMAT_PREFIX, KEEP_FIELDS } from "./syslog/options.ts";
import { parseKeepFields } from "./syslog/parse.ts";
import { SyslogTcpSource } from "./syslog/tcp-source.ts";
import { TLS_PROPS, tlsErrors, tlsServerOptions } from "./tls-pem.ts";

export { SyslogTcpSource };

export const definition: ComponentDefinition<SyslogTcpSource> = {
  schema: {
    kind: "source",
    type: "syslogtcp",
    aliases: ["org.apache.flume.source.SyslogTcpSource"],
    doc: "Receives syslog (RFC 3164 and RFC 5424) over TCP, newline or octet-count framed (RFC 6587); each message becomes an event with Facility, Severity, timestamp and host headers.",
    props: [
      { key: "host", type: "string", doc: "Host name or IP address to bind to (default: all addresses)." },
      { key: "port", type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on." },
      EVENT_SIZE,
      KEEP_FIELDS,
      CLIENT_IP_HEADER,
      CLIENT_HOSTNAME_HEADER,
      { key: "batchSize", type: "int", default: 100, min: 1, doc: "Most events handed to the channel in one transaction (Flume's syslogtcp commits each event alone)." },
      ...TLS_PROPS,
    ],
    prefixes: [FORMAT_PREFIX],
  },
  create(config, ctx) {
    return new SyslogTcpSource(ctx, {
      type: "syslogtcp",
      host: config.string("host"),
      ports: [config.int("port")],
      eventSize: effectiveEventSize(config.int("eventSize")),
      batchSize: config.int("batchSize"),
      parse: { dialect: "syslog", keepFields: parseKeepFields(config.string("keepFields")), rfc3164Zone: "local", custom: customFormat(config) },
      clientIPHeader: config.optionalString("clientIPHeader"),
      clientHostnameHeader: config.optionalString("clientHostnameHeader"),
      tls: tlsServerOptions(config),
    });
  },
  validate: (config) => [...tlsErrors(config), ...customFormatErrors(config)],
};
