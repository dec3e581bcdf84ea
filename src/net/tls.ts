/**
 * TLS for every component that speaks it (avro, thrift, http and syslog sources; avro and
 * thrift sinks; avro-client), with Flume 1.11's property names: ssl, keystore,
 * keystore-password, keystore-type, truststore, truststore-password, truststore-type,
 * exclude-protocols, include-protocols, exclude-cipher-suites, include-cipher-suites.
 *
 * Key stores are read by their content, so keystore-type may keep Flume's default (JKS): a
 * PKCS12 file is used as is, a PEM file (certificate chain, and the key unless keystore-key
 * names it) too; a real JKS or JCEKS store is refused with the command that converts it.
 * TLS 1.2 is the minimum unless include-protocols asks for older versions. Sources can verify
 * client certificates against their truststore (client-auth, which Flume does not have).
 * Stores, keys and cipher names are checked by the TLS library when the properties are read,
 * so `flume validate` reports them under their key. Under Bun (BoringSSL) TLS 1.3's suites
 * cannot be narrowed one by one: listing some of them allows all of them.
 */
import { createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Socket } from "node:net";
import { type ConnectionOptions, createSecureContext, type SecureContext, type SecureContextOptions, type SecureVersion, Server, TLSSocket, type TlsOptions } from "node:tls";
import { type OptionsOf, parseOptions, type Props, schemaOf } from "../config/schema.ts";
import { ConfigurationError, configurationProblems } from "../core/errors.ts";
import { peerName } from "./peer.ts";

const PROTOCOL_PROPS = {
  "exclude-protocols": { type: "list", default: ["SSLv3"], aliases: ["excludeProtocols"], doc: "TLS protocol versions to disable (SSLv3 always is)" },
  "include-protocols": { type: "list", default: [], aliases: ["includeProtocols"], doc: "TLS protocol versions to allow; empty: TLSv1.2 and TLSv1.3 (list TLSv1 or TLSv1.1 here to allow them)" },
  "exclude-cipher-suites": { type: "list", default: [], aliases: ["excludeCipherSuites"], doc: "Cipher suites to disable (Java/IANA or OpenSSL names)" },
  "include-cipher-suites": { type: "list", default: [], aliases: ["includeCipherSuites"], doc: "Cipher suites to allow (Java/IANA or OpenSSL names; empty: OpenSSL's defaults)" },
} as const satisfies Props;

const KEYSTORE_PROPS = {
  "keystore-password": { type: "string", secret: true, aliases: ["keystorePassword"], doc: "Password of the keystore (PKCS12), or passphrase of an encrypted PEM key" },
  "keystore-type": { type: "string", default: "JKS", aliases: ["keystoreType"], doc: "JKS (Flume's default), PKCS12 or PEM: the file's content decides how it is read; a real JKS store must be converted (the error says how)" },
  "keystore-key": { type: "path", aliases: ["ssl-key"], doc: "PEM private key, when keystore is a PEM certificate file without it (Flume TS only)" },
} as const satisfies Props;

const TRUSTSTORE_PROPS = {
  "truststore-password": { type: "string", secret: true, aliases: ["truststorePassword"], doc: "Accepted for compatibility; PEM truststores have no password" },
  "truststore-type": { type: "string", default: "JKS", aliases: ["truststoreType"], doc: "JKS (Flume's default) or PEM: the file's content decides; Java stores must be exported to PEM (the error says how)" },
} as const satisfies Props;

/** TLS properties of a server (a source). */
export const SERVER_TLS_PROPS = {
  ssl: { type: "boolean", default: false, aliases: ["enableSSL"], doc: "Accept only TLS connections" },
  keystore: { type: "path", aliases: ["ssl-certificate"], doc: "The server's certificate and private key: a PKCS12 file, or a PEM certificate chain (with the key, or the key in keystore-key)" },
  ...KEYSTORE_PROPS,
  truststore: { type: "path", doc: "PEM file of the CA certificates that client certificates must chain to (for client-auth)" },
  ...TRUSTSTORE_PROPS,
  "client-auth": {
    type: "enum",
    values: ["none", "optional", "required"],
    default: "none",
    doc: "Client certificates: none (not asked for), optional (checked against the truststore when sent), required (refuse clients without a valid one); Flume TS only",
  },
  ...PROTOCOL_PROPS,
} as const satisfies Props;

/** TLS properties of a client (a sink, avro-client). */
export const CLIENT_TLS_PROPS = {
  ssl: { type: "boolean", default: false, doc: "Connect with TLS" },
  "trust-all-certs": { type: "boolean", default: false, doc: "Accept any server certificate (no verification)" },
  truststore: { type: "path", doc: "PEM file of trusted CA certificates (default: the system's)" },
  ...TRUSTSTORE_PROPS,
  keystore: { type: "path", doc: "A client certificate and key for servers that require one: PKCS12, or PEM (Flume TS only)" },
  ...KEYSTORE_PROPS,
  ...PROTOCOL_PROPS,
} as const satisfies Props;

interface ProtocolSettings {
  "exclude-protocols": readonly string[];
  "include-protocols": readonly string[];
  "exclude-cipher-suites": readonly string[];
  "include-cipher-suites": readonly string[];
}

interface KeySettings {
  keystore?: string;
  "keystore-key"?: string;
  "keystore-password"?: string;
  "keystore-type": string;
}

/** The parsed server TLS properties (what SERVER_TLS_PROPS gives a component's options). */
export interface ServerTlsSettings extends ProtocolSettings, KeySettings {
  ssl: boolean;
  truststore?: string;
  "truststore-type": string;
  "client-auth": "none" | "optional" | "required";
}

/** The parsed client TLS properties (what CLIENT_TLS_PROPS gives). */
export interface ClientTlsSettings extends ProtocolSettings, KeySettings {
  ssl: boolean;
  "trust-all-certs": boolean;
  truststore?: string;
  "truststore-type": string;
}

/** What a TLS server needs: Node's options plus how to treat client certificates. */
export interface ServerTls {
  options: TlsOptions;
  clientAuth: "none" | "optional" | "required";
}

const VERSIONS: readonly SecureVersion[] = ["TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"];

function fail(key: string, message: string): never {
  throw new ConfigurationError(key, message);
}

function readFile(file: string, key: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    return fail(key, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

type StoreFormat = "PEM" | "PKCS12" | "JKS" | "JCEKS";

/** A key store's format from its first bytes (the configured type may be Flume's default, JKS). */
function formatOf(bytes: Buffer): StoreFormat {
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0xfeedfeed) return "JKS";
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0xcececece) return "JCEKS";
  if (bytes.includes("-----BEGIN ")) return "PEM";
  return "PKCS12";
}

function keystoreConversion(file: string): string {
  return (
    `${file} is a Java key store, which Flume TS cannot read; convert it to PKCS12 ` +
    `(keytool -importkeystore -srckeystore ${file} -destkeystore keystore.p12 -deststoretype PKCS12) and point keystore at keystore.p12`
  );
}

function truststoreConversion(file: string): string {
  return (
    `${file} is not a PEM file; export the trusted certificates ` +
    `(keytool -exportcert -rfc -keystore ${file} -alias <alias> -file ca.pem, or openssl pkcs12 -in ${file} -nokeys -out ca.pem) and point truststore at ca.pem`
  );
}

/** The certificate and key of a keystore, as Node's cert/key/pfx options, checked by the TLS library. */
function keyMaterial(s: KeySettings, key = "keystore"): Pick<TlsOptions, "cert" | "key" | "pfx" | "passphrase"> {
  const file = s.keystore as string;
  const bytes = readFile(file, key);
  const format = formatOf(bytes);
  const passphrase = s["keystore-password"] || undefined;
  if (format === "JKS" || format === "JCEKS") fail(key, keystoreConversion(file));
  if (format === "PKCS12") {
    // DER starts with a SEQUENCE; anything else is not a key store at all.
    if (bytes[0] !== 0x30) fail(key, `${file} is neither PEM nor PKCS12 (nor a Java key store)`);
    const pfx = { pfx: bytes, passphrase };
    // Bun and Node report a wrong password and a damaged file alike (the MAC does not verify).
    usable(pfx, "keystore-password", (m) => `cannot open the PKCS12 keystore ${file}: wrong keystore-password, or a damaged file (${m})`);
    return pfx;
  }
  const keyFile = s["keystore-key"];
  const keyText = keyFile ? readFile(keyFile, "keystore-key").toString("latin1") : bytes.toString("latin1");
  if (!/-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/.test(keyText)) {
    fail(keyFile ? "keystore-key" : key, `no private key in ${keyFile ?? file}: add it to that PEM file or name the key file in keystore-key`);
  }
  const keyKey = keyFile ? "keystore-key" : key;
  decryptable(keyText, passphrase, keyKey, keyFile ?? file);
  const pem = { cert: bytes.toString("latin1"), key: keyText, passphrase };
  const where = keyFile ? `the key in ${keyFile} and the certificate in ${file}` : `the certificate and key in ${file}`;
  usable(pem, keyKey, (m) => (/KEY_VALUES_MISMATCH|key values mismatch/i.test(m) ? `${where} do not match: the key is not the certificate's` : `${where} cannot be used: ${m}`));
  return pem;
}

const ENCRYPTED_KEY = /-----BEGIN ENCRYPTED PRIVATE KEY-----[^]*?-----END ENCRYPTED PRIVATE KEY-----|-----BEGIN [A-Z]+ PRIVATE KEY-----\r?\nProc-Type: 4,ENCRYPTED[^]*?-----END [A-Z]+ PRIVATE KEY-----/;

/**
 * An encrypted PEM key that the password does not open is named as such. A wrong password nearly
 * always fails the cipher's padding check, but about one in 270 passes it and fails as a DER
 * decoding error instead: decrypting the key alone tells the two causes apart from a bad pair.
 */
function decryptable(keyText: string, passphrase: string | undefined, key: string, file: string): void {
  const encrypted = ENCRYPTED_KEY.exec(keyText)?.[0];
  if (encrypted === undefined) return;
  try {
    createPrivateKey({ key: encrypted, format: "pem", passphrase: passphrase ?? "" });
  } catch {
    fail(key, `cannot decrypt the private key in ${file}: wrong or missing keystore-password`);
  }
}

/** Fails with the key and message when the TLS library refuses the options (so validate catches it, not the first client). */
function usable(options: SecureContextOptions, key: string, message: (detail: string) => string): void {
  try {
    createSecureContext(options);
  } catch (err) {
    fail(key, message((err as Error).message));
  }
}

function trustedCas(file: string): string {
  const bytes = readFile(file, "truststore");
  if (formatOf(bytes) !== "PEM") fail("truststore", truststoreConversion(file));
  const ca = bytes.toString("latin1");
  usable({ ca }, "truststore", (m) => `no usable CA certificate in ${file}: ${m}`);
  return ca;
}

/** Flume's include/exclude protocol lists as Node's version range; TLSv1.2 at least unless asked. */
function versionRange(s: ProtocolSettings): Pick<TlsOptions, "minVersion" | "maxVersion"> {
  const include = s["include-protocols"];
  const exclude = new Set(["SSLv3", ...s["exclude-protocols"]]);
  for (const v of include) if (!VERSIONS.includes(v as SecureVersion) && v !== "SSLv3") fail("include-protocols", `unknown protocol "${v}" (known: ${VERSIONS.join(", ")})`);
  const allowed = VERSIONS.filter((v) => (include.length > 0 ? include.includes(v) : v >= "TLSv1.2") && !exclude.has(v));
  if (allowed.length === 0) fail("include-protocols", `include-protocols and exclude-protocols leave no TLS version enabled (known: ${VERSIONS.join(", ")})`);
  return { minVersion: allowed[0], maxVersion: allowed[allowed.length - 1] };
}

/** Java (IANA) names of common suites, as OpenSSL spells them; TLS 1.3 suites keep their names. */
const OPENSSL_NAMES: Readonly<Record<string, string>> = {
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: "ECDHE-ECDSA-AES128-GCM-SHA256",
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: "ECDHE-RSA-AES128-GCM-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: "ECDHE-ECDSA-AES256-GCM-SHA384",
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: "ECDHE-RSA-AES256-GCM-SHA384",
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-ECDSA-CHACHA20-POLY1305",
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: "ECDHE-RSA-CHACHA20-POLY1305",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: "ECDHE-ECDSA-AES128-SHA256",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: "ECDHE-RSA-AES128-SHA256",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384: "ECDHE-ECDSA-AES256-SHA384",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384: "ECDHE-RSA-AES256-SHA384",
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: "ECDHE-ECDSA-AES128-SHA",
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: "ECDHE-RSA-AES128-SHA",
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: "ECDHE-ECDSA-AES256-SHA",
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: "ECDHE-RSA-AES256-SHA",
  TLS_DHE_RSA_WITH_AES_128_GCM_SHA256: "DHE-RSA-AES128-GCM-SHA256",
  TLS_DHE_RSA_WITH_AES_256_GCM_SHA384: "DHE-RSA-AES256-GCM-SHA384",
  TLS_RSA_WITH_AES_128_GCM_SHA256: "AES128-GCM-SHA256",
  TLS_RSA_WITH_AES_256_GCM_SHA384: "AES256-GCM-SHA384",
  TLS_RSA_WITH_AES_128_CBC_SHA256: "AES128-SHA256",
  TLS_RSA_WITH_AES_256_CBC_SHA256: "AES256-SHA256",
  TLS_RSA_WITH_AES_128_CBC_SHA: "AES128-SHA",
  TLS_RSA_WITH_AES_256_CBC_SHA: "AES256-SHA",
};

/** TLS 1.3's suites: Node and Bun take them apart from the others, Bun (BoringSSL) cannot narrow them. */
const TLS13_SUITES: ReadonlySet<string> = new Set(["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"]);

/**
 * Flume's cipher lists as an OpenSSL cipher string, and the versions they leave: as in Java,
 * a list of TLS 1.2 suites only rules TLS 1.3 out (its suites are not in the list), and one
 * of TLS 1.3 suites only rules out TLS 1.2 and older.
 */
function cipherOption(s: ProtocolSettings, range: Pick<TlsOptions, "minVersion" | "maxVersion">): Pick<TlsOptions, "ciphers" | "minVersion" | "maxVersion"> {
  const include = s["include-cipher-suites"].map((c) => OPENSSL_NAMES[c] ?? c);
  const exclude = s["exclude-cipher-suites"].map((c) => OPENSSL_NAMES[c] ?? c);
  if (include.length === 0 && exclude.length === 0) return range;
  for (const c of include) {
    if (TLS13_SUITES.has(c)) continue;
    const unknown = `unknown cipher suite "${c}": use OpenSSL's name (openssl ciphers -stdname lists both), or a Java/IANA name such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`;
    // A Java name left unmapped: OpenSSL would read it as a TLS 1.3 suite and ignore it.
    if (c.startsWith("TLS_") || c.startsWith("SSL_")) fail("include-cipher-suites", unknown);
    usable({ ciphers: c }, "include-cipher-suites", () => unknown);
  }
  const excluded13 = exclude.filter((c) => TLS13_SUITES.has(c));
  if (excluded13.length > 0) {
    fail("exclude-cipher-suites", `TLS 1.3 suites (${excluded13.join(", ")}) cannot be disabled one by one; add TLSv1.3 to exclude-protocols, or list the suites to allow in include-cipher-suites`);
  }
  let { minVersion, maxVersion } = range;
  if (include.length > 0) {
    const has13 = include.some((c) => TLS13_SUITES.has(c));
    const hasOlder = include.some((c) => !TLS13_SUITES.has(c));
    if (!has13 && maxVersion === "TLSv1.3") maxVersion = "TLSv1.2";
    if (!hasOlder) minVersion = "TLSv1.3";
    if ((minVersion as string) > (maxVersion as string)) {
      fail("include-cipher-suites", `none of these suites works with the enabled protocols (${range.minVersion} to ${range.maxVersion}): TLS 1.3 has suites of its own (${[...TLS13_SUITES].join(", ")})`);
    }
  }
  // OpenSSL cipher-list syntax: the included names, minus the excluded ones.
  return { ciphers: [...(include.length > 0 ? include : ["DEFAULT"]), ...exclude.map((c) => `!${c}`)].join(":"), minVersion, maxVersion };
}

/** A server's TLS setup from its properties, or null when ssl is off; throws ConfigurationError naming the key. */
export function serverTls(s: ServerTlsSettings): ServerTls | null {
  if (!s.ssl) return null;
  if (!s.keystore) fail("keystore", "is required when ssl is true: the server's certificate and key (a PKCS12 file, or PEM)");
  const clientAuth = s["client-auth"];
  // Settings first, files after: a wrong setting is reported without touching the disk.
  if (clientAuth !== "none" && !s.truststore) fail("truststore", `is required when client-auth is ${clientAuth}: the PEM file of the CAs client certificates must chain to`);
  const protocols = cipherOption(s, versionRange(s));
  const options: TlsOptions = { ...keyMaterial(s), ...protocols };
  if (clientAuth !== "none") {
    options.ca = trustedCas(s.truststore as string);
    options.requestCert = true;
    options.rejectUnauthorized = clientAuth === "required";
  }
  return { options, clientAuth };
}

/**
 * Options for tls.connect from a client's properties, or null when ssl is off. As Flume's
 * client, the server's chain is checked against the truststore (or the system CAs) but not its
 * host name; trust-all-certs skips the check.
 */
export function clientTls(s: ClientTlsSettings): ConnectionOptions | null {
  if (!s.ssl) return null;
  const trustAll = s["trust-all-certs"];
  const protocols = cipherOption(s, versionRange(s));
  return {
    ...(s.truststore && !trustAll ? { ca: trustedCas(s.truststore) } : {}),
    ...(s.keystore ? keyMaterial(s) : {}),
    rejectUnauthorized: !trustAll,
    checkServerIdentity: () => undefined,
    ...protocols,
  };
}

/** Configuration errors of a server's or client's TLS properties, for validate(). */
export const tlsProblems = configurationProblems;

/**
 * Why a secured client connection must be refused, or null: with client-auth required, a
 * client without a certificate its truststore signed; with optional, a client that sent one
 * that is not trusted (sending none is fine).
 */
export function clientCertificateProblem(socket: TLSSocket, clientAuth: ServerTls["clientAuth"]): string | null {
  if (clientAuth === "none" || socket.authorized) return null;
  const cert = socket.getPeerCertificate();
  const sent = cert !== null && cert !== undefined && Object.keys(cert).length > 0;
  if (!sent) return clientAuth === "required" ? "no client certificate (client-auth is required)" : null;
  return `client certificate not trusted: ${String(socket.authorizationError ?? "unknown reason")}`;
}

/** Node's default for tls.createServer: a client that never finishes its handshake is dropped after it. */
const DEFAULT_HANDSHAKE_TIMEOUT = 120_000;

/**
 * A TLS listener for sources: secured(socket) for each client that passed the handshake and
 * client-auth, refused(socket, reason) for each that did not (its socket already destroyed).
 * The http source uses it too, not https.Server: Bun's https.Server reports no failed handshake
 * and no client certificate. Deno's TLSSocket does not verify client certificates when it
 * wraps a socket, so this, not TlsHandshakes, is the path for sources that can use it.
 */
export function createTlsServer(
  setup: ServerTls,
  secured: (socket: TLSSocket) => void,
  /** handshake: the handshake failed (else: the client certificate was refused after it). */
  refused: (peer: string, reason: string, handshake: boolean) => void,
  allowHalfOpen = false,
): Server {
  // The peer is named before the socket is destroyed: Bun forgets the address then.
  const refuse = (socket: TLSSocket, reason: string, handshake: boolean) => {
    const peer = peerName(socket);
    socket.destroy();
    refused(peer, reason, handshake);
  };
  const server = new SourceTlsServer({ handshakeTimeout: DEFAULT_HANDSHAKE_TIMEOUT, ...setup.options, allowHalfOpen }, (socket) => {
    const problem = clientCertificateProblem(socket, setup.clientAuth);
    if (problem === null) secured(socket);
    else refuse(socket, problem, false);
  });
  // Bun leaves the socket open after a handshake timeout; a silent client would hold it forever.
  server.on("tlsClientError", (err, socket) => refuse(socket, err.message, true));
  return server;
}

/** A tls.Server whose close() also drops the connections still in their handshake, rather than wait for their timeout. */
class SourceTlsServer extends Server {
  /** By the client's address and port: Node hands out the TCP socket first, the TLS socket later; Bun one socket. */
  private readonly handshaking = new Map<string, Socket>();

  constructor(options: TlsOptions, onSecure: (socket: TLSSocket) => void) {
    super(options, (socket) => {
      this.handshaking.delete(endpoint(socket));
      onSecure(socket);
    });
    this.on("connection", (socket: Socket) => {
      const key = endpoint(socket);
      this.handshaking.set(key, socket);
      socket.once("close", () => {
        if (this.handshaking.get(key) === socket) this.handshaking.delete(key);
      });
    });
  }

  override close(callback?: (err?: Error) => void): this {
    for (const socket of this.handshaking.values()) socket.destroy();
    this.handshaking.clear();
    return super.close(callback);
  }
}

const endpoint = (socket: Socket) => `${socket.remoteAddress}:${socket.remotePort}`;

/**
 * Server-side TLS on accepted TCP connections, one by one, for a server that must see each
 * connection before its handshake (the avro source's ipFilter runs first, as in Flume). Each
 * connection ends in secured(socket) or refused(reason), once; client certificates are
 * checked as client-auth says.
 */
export class TlsHandshakes {
  readonly clientAuth: ServerTls["clientAuth"];
  private readonly context: SecureContext;
  private readonly timeout: number;
  private readonly pending = new Set<Socket>();

  /** Builds the secure context once: a bad key or certificate fails here, not on the first client. */
  constructor(setup: ServerTls) {
    const { handshakeTimeout, ...contextOptions } = setup.options;
    this.context = createSecureContext(contextOptions);
    this.timeout = handshakeTimeout ?? DEFAULT_HANDSHAKE_TIMEOUT;
    this.clientAuth = setup.clientAuth;
  }

  /** Connections in their handshake now. */
  get size(): number {
    return this.pending.size;
  }

  secure(socket: Socket, secured: (socket: TLSSocket) => void, refused: (reason: string) => void): void {
    const tls = new TLSSocket(socket, { isServer: true, secureContext: this.context, requestCert: this.clientAuth !== "none", rejectUnauthorized: this.clientAuth === "required" });
    this.pending.add(tls);
    const finish = () => {
      clearTimeout(timer);
      this.pending.delete(tls);
      tls.off("error", onError);
      tls.off("close", onClose);
    };
    const fail = (reason: string) => {
      finish();
      tls.destroy();
      socket.destroy();
      refused(reason);
    };
    const onError = (err: Error) => fail(err.message);
    const onClose = () => fail("connection closed during the handshake");
    // A client that connects and never sends its ClientHello must not hold the socket forever.
    const timer = setTimeout(() => fail(`no handshake within ${this.timeout} ms`), this.timeout);
    timer.unref?.();
    tls.on("error", onError);
    tls.on("close", onClose);
    tls.once("secure", () => {
      const problem = clientCertificateProblem(tls, this.clientAuth);
      if (problem) return fail(problem);
      finish();
      secured(tls);
    });
    socket.resume();
  }

  /** Drops every connection still in its handshake (the server is stopping). */
  dropAll(): void {
    for (const s of this.pending) s.destroy();
    this.pending.clear();
  }
}

const serverSchema = schemaOf({ kind: "source", type: "tls", doc: "TLS server properties", props: SERVER_TLS_PROPS });
const clientSchema = schemaOf({ kind: "sink", type: "tls", doc: "TLS client properties", props: CLIENT_TLS_PROPS });

function parsed<P extends Props>(schema: ReturnType<typeof schemaOf>, raw: Readonly<Record<string, string>>): OptionsOf<P> {
  const { options, errors } = parseOptions(schema, raw);
  if (errors.length > 0) fail(errors[0].key, errors[0].message);
  return options as OptionsOf<P>;
}

/** A server's TLS setup from raw properties with Flume's names (tools and tests; components get theirs parsed). */
export function serverTlsFromProperties(raw: Readonly<Record<string, string>>): ServerTls | null {
  return serverTls(parsed<typeof SERVER_TLS_PROPS>(serverSchema, raw));
}

/** A client's tls.connect options from raw properties with Flume's names (avro-client, tests). */
export function clientTlsFromProperties(raw: Readonly<Record<string, string>>): ConnectionOptions | null {
  return clientTls(parsed<typeof CLIENT_TLS_PROPS>(clientSchema, raw));
}
