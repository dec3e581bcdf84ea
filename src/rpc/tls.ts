import { readFileSync } from "node:fs";
import type { ConnectionOptions, SecureVersion, TlsOptions } from "node:tls";
import { RpcTlsConfigError } from "./errors.ts";

/** Flume's TLS settings, with key material as PEM files instead of Java key stores. */
export interface TlsSettings {
  /** Server: PEM certificate chain (may also hold the private key). Client: unused. */
  keystore?: string;
  /** Server: PEM private key, when it is not in the keystore file. */
  keystoreKey?: string;
  /** Passphrase of an encrypted private key. */
  keystorePassword?: string;
  keystoreType?: string;
  /** Client: PEM file of trusted CA certificates (defaults to the system's CAs). */
  truststore?: string;
  truststoreType?: string;
  trustAllCerts?: boolean;
  excludeProtocols?: string[];
  includeProtocols?: string[];
  excludeCipherSuites?: string[];
  includeCipherSuites?: string[];
}

const JAVA_STORE_TYPES = new Set(["JKS", "PKCS12", "JCEKS", "P12", "PFX"]);

function conversionHelp(file: string, what: "keystore" | "truststore"): string {
  if (what === "keystore") {
    return (
      `Flume TS reads PEM files. Convert the key store with:\n` +
      `  keytool -importkeystore -srckeystore ${file} -destkeystore keystore.p12 -deststoretype PKCS12\n` +
      `  openssl pkcs12 -in keystore.p12 -nokeys -out cert.pem\n` +
      `  openssl pkcs12 -in keystore.p12 -nocerts -nodes -out key.pem\n` +
      `then set keystore = cert.pem, keystore-key = key.pem and keystore-type = PEM`
    );
  }
  return (
    `Flume TS reads PEM files. Export the trusted certificates with:\n` +
    `  keytool -exportcert -rfc -keystore ${file} -alias <alias> -file ca.pem\n` +
    `then set truststore = ca.pem and truststore-type = PEM`
  );
}

function readPem(file: string, key: string, what: "keystore" | "truststore", type: string | undefined): string {
  if (type && JAVA_STORE_TYPES.has(type.toUpperCase())) {
    throw new RpcTlsConfigError(`${key}-type is ${type}, a Java key store. ${conversionHelp(file, what)}`);
  }
  let text: string;
  try {
    text = readFileSync(file, "latin1");
  } catch (err) {
    throw new RpcTlsConfigError(`${key}: cannot read ${file}: ${(err as Error).message}`);
  }
  if (!text.includes("-----BEGIN ")) {
    throw new RpcTlsConfigError(`${key}: ${file} is not a PEM file (a JKS or PKCS12 key store?). ${conversionHelp(file, what)}`);
  }
  return text;
}

const VERSIONS: SecureVersion[] = ["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"];

/** Maps Flume's include/exclude protocol lists onto Node's minimum and maximum TLS version. */
function versionRange(s: TlsSettings): Pick<TlsOptions, "minVersion" | "maxVersion"> {
  const include = s.includeProtocols ?? [];
  const exclude = new Set(s.excludeProtocols ?? ["SSLv3"]);
  const allowed = VERSIONS.filter((v) => (include.length === 0 || include.includes(v)) && !exclude.has(v));
  if (allowed.length === 0) throw new RpcTlsConfigError(`include-protocols/exclude-protocols leave no TLS version enabled (known: ${VERSIONS.join(", ")})`);
  // Default floor TLSv1.2 unless the user asked for older versions explicitly.
  const floor = include.length > 0 ? allowed[0] : allowed.find((v) => v >= "TLSv1.2") ?? allowed[0];
  return { minVersion: floor, maxVersion: allowed[allowed.length - 1] };
}

function cipherOption(s: TlsSettings): Pick<TlsOptions, "ciphers"> {
  const include = s.includeCipherSuites ?? [];
  const exclude = s.excludeCipherSuites ?? [];
  if (include.length === 0 && exclude.length === 0) return {};
  // OpenSSL cipher-list syntax: the included names, minus the excluded ones.
  const parts = [...(include.length > 0 ? include : ["DEFAULT"]), ...exclude.map((c) => `!${c}`)];
  return { ciphers: parts.join(":") };
}

/** Options for tls.createServer from the source's settings. */
export function serverTlsOptions(s: TlsSettings): TlsOptions {
  if (!s.keystore) throw new RpcTlsConfigError("ssl is true but keystore is not set: give a PEM certificate file (and keystore-key for its private key)");
  const certText = readPem(s.keystore, "keystore", "keystore", s.keystoreType);
  const keyText = s.keystoreKey ? readPem(s.keystoreKey, "keystore-key", "keystore", s.keystoreType) : certText;
  if (!/-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/.test(keyText)) {
    throw new RpcTlsConfigError(`no private key found in ${s.keystoreKey ?? s.keystore}: set keystore-key to the PEM file with the private key`);
  }
  return {
    cert: certText,
    key: keyText,
    passphrase: s.keystorePassword,
    ...versionRange(s),
    ...cipherOption(s),
  };
}

/**
 * Options for tls.connect from the sink's settings. As Flume's client, the certificate chain
 * is checked against the truststore (or the system CAs) but the host name is not, and
 * trust-all-certs skips the check entirely.
 */
export function clientTlsOptions(s: TlsSettings): ConnectionOptions {
  const ca = s.truststore && !s.trustAllCerts ? readPem(s.truststore, "truststore", "truststore", s.truststoreType) : undefined;
  return {
    ...(ca ? { ca } : {}),
    rejectUnauthorized: !s.trustAllCerts,
    checkServerIdentity: () => undefined,
    ...versionRange(s),
    ...cipherOption(s),
  };
}
