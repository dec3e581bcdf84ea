import { defineComponent } from "../component.ts";
import { builtIn } from "../registry.ts";
import { CLIENT_HOSTNAME_HEADER, CLIENT_IP_HEADER, customFormat, customFormatErrors, EVENT_SIZE, effectiveEventSize, FORMAT_PROPS, KEEP_FIELDS, SYSLOG_FEED, syslogPlain } from "./syslog/options.ts";
import { parseKeepFields } from "./syslog/parse.ts";
import { SyslogTcpSource } from "./syslog/tcp-source.ts";
import { SERVER_TLS_PROPS, serverTls, tlsProblems } from "../../net/tls.ts";

export { SyslogTcpSource };

export const definition = defineComponent({
  ...builtIn.syslogtcpSource,
  doc: "Receives syslog (RFC 3164 and RFC 5424) over TCP, newline or octet-count framed (RFC 6587); each message becomes an event with Facility, Severity, timestamp and host headers.",
  props: {
    host: { type: "string", doc: "Host name or IP address to bind to (default: all addresses)." },
    port: { type: "int", required: true, min: 0, max: 65535, doc: "Port to listen on." },
    ...EVENT_SIZE,
    ...KEEP_FIELDS,
    ...CLIENT_IP_HEADER,
    ...CLIENT_HOSTNAME_HEADER,
    batchSize: { type: "int", roles: ["batchSize"], default: 100, min: 1, doc: "Most events handed to the channel in one transaction (Flume's syslogtcp commits each event alone)." },
    ...FORMAT_PROPS,
    ...SERVER_TLS_PROPS,
  },
  create(config, ctx) {
    return new SyslogTcpSource(ctx, {
      type: "syslogtcp",
      host: config.host,
      ports: [config.port],
      eventSize: effectiveEventSize(config.eventSize),
      batchSize: config.batchSize,
      parse: { dialect: "syslog", keepFields: parseKeepFields(config.keepFields), rfc3164Zone: "local", custom: customFormat(config) },
      clientIPHeader: config.clientIPHeader,
      clientHostnameHeader: config.clientHostnameHeader,
      tls: serverTls(config),
    });
  },
  validate: (config) => [...tlsProblems(() => serverTls(config)), ...customFormatErrors(config)],
  streamFeed: { ...SYSLOG_FEED, address: (o) => ({ host: o.host ?? "", port: o.port }), plain: syslogPlain },
});
