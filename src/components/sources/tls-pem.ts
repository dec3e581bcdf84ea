import { readFileSync } from "node:fs";
import type { SecureVersion, TlsOptions } from "node:tls";
import type { ComponentConfig, PropSpec } from "../../config/schema.ts";
import { ConfigurationError } from "../../core/errors.ts";

/**
 * Server-side TLS for the network sources, with Flume 1.11's property names where Node can
 * honour them: ssl, keystore + keystore-password + keystore-type (PKCS12; a JKS keystore must
 * be converted), exclude-protocols, include-protocols. PEM files, which Node reads natively,
 * are given with ssl-certificate and ssl-key.
 */
export const TLS_PROPS: readonly PropSpec[] = [
  { key: "ssl", type: "boolean", default: false, doc: "Accept TLS connections only.", aliases: ["enableSSL"] },
  { key: "ssl-certificate", type: "path", doc: "PEM file with the server certificate (and its chain); use with ssl-key." },
  { key: "ssl-key", type: "path", doc: "PEM file with the server's private key; encrypted keys take keystore-password as passphrase." },
  { key: "keystore", type: "path", doc: "PKCS12 keystore with the server key and certificate (instead of ssl-certificate/ssl-key)." },
  { key: "keystore-password", type: "string", secret: true, doc: "Password of the keystore (or passphrase of ssl-key).", aliases: ["keystorePassword"] },
  { key: "keystore-type", type: "enum", values: ["JKS", "PKCS12"], default: "JKS", doc: "Keystore type; only PKCS12 can be read here (convert JKS with keytool -importkeystore)." },
  { key: "exclude-protocols", type: "list", default: ["SSLv3"], doc: "TLS protocol versions to refuse (SSLv3 always is).", aliases: ["excludeProtocols"] },
  { key: "include-protocols", type: "list", doc: "TLS protocol versions to allow (default: all supported)." },
];

const VERSIONS: readonly SecureVersion[] = ["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"];

function read(path: string, key: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigurationError(key, `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** Node TLS server options from the ssl properties, or null when ssl is off. */
export function tlsServerOptions(config: ComponentConfig): TlsOptions | null {
  if (!config.boolean("ssl")) return null;
  const options: TlsOptions = {};
  const password = config.optionalString("keystore-password");
  const cert = config.optionalString("ssl-certificate");
  const key = config.optionalString("ssl-key");
  const keystore = config.optionalString("keystore");
  if (cert || key) {
    if (!cert) throw new ConfigurationError("ssl-certificate", "is required with ssl-key: the PEM certificate file");
    if (!key) throw new ConfigurationError("ssl-key", "is required with ssl-certificate: the PEM private key file");
    options.cert = read(cert, "ssl-certificate");
    options.key = read(key, "ssl-key");
    if (password) options.passphrase = password;
  } else if (keystore) {
    if (config.string("keystore-type") !== "PKCS12")
      throw new ConfigurationError("keystore-type", "a JKS keystore cannot be read; convert it (keytool -importkeystore -deststoretype PKCS12) and set keystore-type = PKCS12, or give ssl-certificate and ssl-key PEM files");
    options.pfx = read(keystore, "keystore");
    if (password) options.passphrase = password;
  } else {
    throw new ConfigurationError("ssl", "ssl = true needs ssl-certificate and ssl-key (PEM files) or a PKCS12 keystore");
  }
  const exclude = new Set(["SSLv3", ...config.list("exclude-protocols")]);
  const include = config.list("include-protocols");
  const enabled = (include.length ? VERSIONS.filter((v) => include.includes(v)) : [...VERSIONS]).filter((v) => !exclude.has(v));
  if (enabled.length === 0) throw new ConfigurationError("include-protocols", "no TLS protocol version is left enabled");
  options.minVersion = enabled[0];
  options.maxVersion = enabled[enabled.length - 1];
  return options;
}

/** Config errors for the ssl properties (for validate()). */
export function tlsErrors(config: ComponentConfig): { key: string; message: string }[] {
  try {
    tlsServerOptions(config);
    return [];
  } catch (err) {
    if (err instanceof ConfigurationError) return [{ key: err.key, message: err.message.slice(err.key.length + 2) }];
    throw err;
  }
}
