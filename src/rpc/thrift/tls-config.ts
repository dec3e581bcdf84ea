import type { ConnectionOptions, TlsOptions } from "node:tls";
import type { ComponentConfig, PropError, PropSpec } from "../../config/schema.ts";
import { clientTlsOptions, serverTlsOptions, type TlsSettings } from "../tls.ts";

/**
 * TLS for the thrift source and sink, in one place until Flume TS has one TLS module: Flume's
 * property names (ThriftSource via SslContextAwareAbstractSource, ThriftRpcClient via
 * SSLContextAwareAbstractRpcClient) mapped onto src/rpc/tls.ts, which reads PEM files.
 */

const FILTER_PROPS: readonly PropSpec[] = [
  { key: "exclude-protocols", type: "list", default: ["SSLv3"], doc: "TLS protocol versions to disable (SSLv3 TLSv1 TLSv1.1 TLSv1.2 TLSv1.3)" },
  { key: "include-protocols", type: "list", default: [], doc: "TLS protocol versions to allow (empty: every version not excluded, TLSv1.2 and newer)" },
  { key: "exclude-cipher-suites", type: "list", default: [], doc: "Cipher suites to disable (OpenSSL names)" },
  { key: "include-cipher-suites", type: "list", default: [], doc: "Cipher suites to allow (OpenSSL names; empty: OpenSSL's defaults)" },
];

export const SOURCE_TLS_PROPS: readonly PropSpec[] = [
  { key: "ssl", type: "boolean", default: false, doc: "Accept only TLS connections" },
  { key: "keystore", type: "path", doc: "PEM file with the server certificate chain (it may also hold the private key)" },
  { key: "keystore-key", type: "path", doc: "PEM file with the server's private key, when it is not in keystore (Flume TS only)" },
  { key: "keystore-password", type: "string", secret: true, doc: "Passphrase of an encrypted private key" },
  { key: "keystore-type", type: "string", default: "PEM", doc: "PEM; Java key stores (JKS, PKCS12) must be converted to PEM files (the error says how)" },
  ...FILTER_PROPS,
];

export const SINK_TLS_PROPS: readonly PropSpec[] = [
  { key: "ssl", type: "boolean", default: false, doc: "Connect with TLS" },
  { key: "truststore", type: "path", doc: "PEM file of trusted CA certificates (default: the system's)" },
  { key: "truststore-password", type: "string", secret: true, doc: "Accepted for compatibility; PEM truststores have no password" },
  { key: "truststore-type", type: "string", default: "PEM", doc: "PEM; Java key stores must be exported to PEM (the error says how)" },
  { key: "trust-all-certs", type: "boolean", default: false, doc: "Accept any server certificate (no verification; Flume 1.11's thrift client reads this key but ignores it)" },
  ...FILTER_PROPS,
];

const JAVA_STORES = new Set(["JKS", "PKCS12", "JCEKS"]);

function filterSettings(config: ComponentConfig): TlsSettings {
  return {
    excludeProtocols: config.list("exclude-protocols"),
    includeProtocols: config.list("include-protocols"),
    excludeCipherSuites: config.list("exclude-cipher-suites"),
    includeCipherSuites: config.list("include-cipher-suites"),
  };
}

/** Config errors a user can fix before the agent starts. */
export function sourceTlsErrors(config: ComponentConfig): PropError[] {
  if (!config.boolean("ssl")) return [];
  const errors: PropError[] = [];
  if (!config.optionalString("keystore")) errors.push({ key: "keystore", message: "is required when ssl is true: a PEM certificate file" });
  const type = config.string("keystore-type").toUpperCase();
  if (JAVA_STORES.has(type)) {
    errors.push({
      key: "keystore-type",
      message: `${type} key stores are not read by Flume TS; convert to PEM (keytool -importkeystore -destkeystore ks.p12 -deststoretype PKCS12, then openssl pkcs12 -in ks.p12 -nokeys -out cert.pem and -nocerts -nodes -out key.pem) and set keystore = cert.pem, keystore-key = key.pem, keystore-type = PEM`,
    });
  }
  return errors;
}

export function sinkTlsErrors(config: ComponentConfig): PropError[] {
  const type = config.string("truststore-type").toUpperCase();
  if (!config.boolean("ssl") || !JAVA_STORES.has(type)) return [];
  return [{ key: "truststore-type", message: `${type} trust stores are not read by Flume TS; export the CA certificates to PEM (keytool -exportcert -rfc -keystore <file> -alias <alias> -file ca.pem) and set truststore = ca.pem, truststore-type = PEM` }];
}

/** The source's TLS settings, or null when ssl is off; serverTlsOptions reads the files at start. */
export function sourceTlsSettings(config: ComponentConfig): TlsSettings | null {
  if (!config.boolean("ssl")) return null;
  return {
    keystore: config.optionalString("keystore"),
    keystoreKey: config.optionalString("keystore-key"),
    keystorePassword: config.optionalString("keystore-password"),
    keystoreType: config.string("keystore-type"),
    ...filterSettings(config),
  };
}

/** The sink's TLS settings, or null when ssl is off. As Flume's client, the host name is not checked. */
export function sinkTlsSettings(config: ComponentConfig): TlsSettings | null {
  if (!config.boolean("ssl")) return null;
  return {
    truststore: config.optionalString("truststore"),
    truststoreType: config.string("truststore-type"),
    trustAllCerts: config.boolean("trust-all-certs"),
    ...filterSettings(config),
  };
}

/** tls.createServer options (reads the PEM files; errors name the key). */
export function sourceTlsOptions(settings: TlsSettings): TlsOptions {
  return serverTlsOptions(settings);
}

/** tls.connect options. */
export function sinkTlsOptions(settings: TlsSettings): ConnectionOptions {
  return clientTlsOptions(settings);
}
