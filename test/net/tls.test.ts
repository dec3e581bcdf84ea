import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPrivateKey } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import tls, { type ConnectionOptions, type TlsOptions } from "node:tls";
import { definition as httpSource } from "../../src/components/sources/http.ts";
import { ConfigurationError } from "../../src/core/errors.ts";
import { clientTlsFromProperties, type ServerTls, serverTlsFromProperties, tlsProblems } from "../../src/net/tls.ts";
import { tempDir } from "../support/helpers.ts";
import { needsOpenssl } from "../support/requires.ts";
import { combinedPem, makePki, type Pki, pkcs12Keystore, sClient } from "../support/tls.ts";

const tmp = tempDir("flume-tls-");
afterAll(tmp.cleanup);
let made: Pki | undefined;
/** Made on first use, so that without openssl only the tests that need it are skipped. */
const pki = () => (made ??= makePki(tmp.dir));
// Made before the tests where openssl is there: four RSA keys take a second or more.
beforeAll(() => void (needsOpenssl.holds && pki()), 30000);
const file = (name: string) => path.join(tmp.dir, name);

/** A source's TLS setup from Flume properties (ssl = true added). */
function server(raw: Record<string, string>): ServerTls {
  const s = serverTlsFromProperties({ ssl: "true", ...raw });
  if (!s) throw new Error("ssl is on");
  return s;
}

/** The server's certificate and key as keystore + keystore-key. */
const pemKeystore = () => ({ keystore: pki().server.cert, "keystore-key": pki().server.key });

/** The ConfigurationError the build throws (fails the test if none). */
function configError(build: () => unknown): ConfigurationError {
  try {
    build();
  } catch (err) {
    if (err instanceof ConfigurationError) return err;
    throw err;
  }
  throw new Error("expected a ConfigurationError");
}

/** How wrong passwords fail to open an encrypted key, until one fails otherwise than the most do (at most 20,000). */
function passwordsFailing(key: string): { password: string; code: string | undefined }[] {
  const seen: { password: string; code: string | undefined }[] = [];
  for (let i = 0; i < 20000 && !seen.some((s) => s.code !== "ERR_OSSL_BAD_DECRYPT"); i++) {
    const password = `wrong-${i}`;
    try {
      createPrivateKey({ key, passphrase: password });
    } catch (err) {
      seen.push({ password, code: (err as NodeJS.ErrnoException).code });
    }
  }
  return seen;
}

interface Outcome {
  /** The server answered over TLS. */
  served: boolean;
  protocol?: string;
  cipher?: string;
  /** CN of the server's certificate as the client saw it. */
  serverName?: string;
  error?: string;
}

/**
 * A real TLS server with the options (it writes "hello" to each client) and a real client on
 * 127.0.0.1; served only when the client read the answer, since with TLS 1.3 a client learns
 * that the server refused its certificate only after its own handshake finished.
 */
async function connect(serverOptions: TlsOptions, clientOptions: ConnectionOptions): Promise<Outcome> {
  const srv = tls.createServer(serverOptions, (s) => {
    s.on("error", () => {});
    s.end("hello");
  });
  srv.on("tlsClientError", (_err, s) => s.destroy());
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", () => resolve()));
  try {
    return await new Promise<Outcome>((resolve) => {
      const c = tls.connect({ host: "127.0.0.1", port: (srv.address() as AddressInfo).port, checkServerIdentity: () => undefined, ...clientOptions });
      let outcome: Outcome = { served: false };
      c.on("secureConnect", () => {
        outcome = { ...outcome, protocol: c.getProtocol() ?? undefined, cipher: c.getCipher()?.name, serverName: String(c.getPeerCertificate()?.subject?.CN ?? "") };
      });
      c.on("data", (d) => {
        if (String(d) === "hello") outcome = { ...outcome, served: true };
      });
      c.on("error", (err) => (outcome = { ...outcome, error: err.message }));
      c.on("close", () => resolve(outcome));
      setTimeout(() => c.destroy(), 3000);
    });
  } finally {
    srv.close();
  }
}

/** A client that checks the server's chain against the test CA. */
const trusting = (extra: ConnectionOptions = {}): ConnectionOptions => ({ ca: readFileSync(pki().ca.cert, "latin1"), ...extra });

/** A listening TLS server from the options for s_client; closed by the returned function. */
async function listening(options: TlsOptions): Promise<{ port: number; close: () => void }> {
  const srv = tls.createServer(options, (s) => {
    s.on("error", () => {});
    s.end("hello\n");
  });
  srv.on("tlsClientError", (_err, s) => s.destroy());
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", () => resolve()));
  return { port: (srv.address() as AddressInfo).port, close: () => srv.close() };
}

describe("key stores: read by their content", () => {
  needsOpenssl.test("PEM certificate in keystore and key in keystore-key: served, the chain verifies against the CA", async () => {
    const s = server(pemKeystore());
    expect(s.clientAuth).toBe("none");
    const r = await connect(s.options, trusting());
    expect(r).toMatchObject({ served: true, serverName: "server" });
  });

  needsOpenssl.test("one PEM file holding the certificate and the key (keystore-type left at Flume's JKS default)", async () => {
    const combined = combinedPem(pki().server, file("server-combined.pem"));
    const s = server({ keystore: combined, "keystore-type": "JKS" });
    expect(await connect(s.options, trusting())).toMatchObject({ served: true, serverName: "server" });
  });

  needsOpenssl.test("PKCS12 from `openssl pkcs12 -export` with a password", async () => {
    const p12 = pkcs12Keystore(pki().server, file("server-pass.p12"), "s3cret");
    const s = server({ keystore: p12, "keystore-password": "s3cret", "keystore-type": "PKCS12" });
    expect(await connect(s.options, trusting())).toMatchObject({ served: true, serverName: "server" });
  });

  needsOpenssl.test("PKCS12 from `openssl pkcs12 -export` without a password (keystore-password unset)", async () => {
    const p12 = pkcs12Keystore(pki().server, file("server-nopass.p12"), "");
    const s = server({ keystore: p12 });
    expect(await connect(s.options, trusting())).toMatchObject({ served: true, serverName: "server" });
  });

  needsOpenssl.test("a PKCS12 keystore with the wrong keystore-password is a configuration error naming keystore-password", () => {
    const p12 = pkcs12Keystore(pki().server, file("server-wrong.p12"), "right");
    const err = configError(() => server({ keystore: p12, "keystore-password": "not-the-password" }));
    expect(err.key).toBe("keystore-password");
    expect(err.detail).toContain(`cannot open the PKCS12 keystore ${p12}: wrong keystore-password`);
    expect(err.detail).not.toContain("not-the-password");
  });

  needsOpenssl.test("a certificate whose key is not the one in keystore-key is a configuration error naming the files", () => {
    const err = configError(() => server({ keystore: pki().server.cert, "keystore-key": pki().client.key }));
    expect(err.key).toBe("keystore-key");
    expect(err.detail).toContain(pki().server.cert);
    expect(err.detail).toContain(pki().client.key);
  });

  needsOpenssl.test("an encrypted PEM key is opened with keystore-password; a wrong or missing one is named, also the rare wrong one that decrypts to bytes that are no key", async () => {
    const enc = file("server-encrypted.key.pem");
    const r = Bun.spawnSync(["openssl", "pkey", "-in", pki().server.key, "-aes256", "-passout", "pass:kpw", "-out", enc]);
    expect(r.exitCode).toBe(0);
    const s = server({ keystore: pki().server.cert, "keystore-key": enc, "keystore-password": "kpw" });
    expect(await connect(s.options, trusting())).toMatchObject({ served: true });
    const wrong = `cannot decrypt the private key in ${enc}: wrong or missing keystore-password`;
    const err = configError(() => server({ keystore: pki().server.cert, "keystore-key": enc, "keystore-password": "nope" }));
    expect(err).toMatchObject({ key: "keystore-key", detail: wrong });
    expect(configError(() => server({ keystore: pki().server.cert, "keystore-key": enc }))).toMatchObject({ key: "keystore-key", detail: wrong });
    // About one wrong password in 270 passes the cipher's padding check and fails as a DER
    // decoding error instead; such a password is named the same way.
    const decodeFails = passwordsFailing(readFileSync(enc, "latin1")).find((f) => f.code !== "ERR_OSSL_BAD_DECRYPT");
    expect(decodeFails).toBeDefined();
    const rare = configError(() => server({ keystore: pki().server.cert, "keystore-key": enc, "keystore-password": decodeFails?.password ?? "" }));
    expect(rare).toMatchObject({ key: "keystore-key", detail: wrong });
  });

  test("a file that is neither PEM, PKCS12 nor a Java key store is named as such", () => {
    const f = file("notes.txt");
    writeFileSync(f, "not a key store\n");
    expect(configError(() => server({ keystore: f }))).toMatchObject({ key: "keystore", detail: `${f} is neither PEM nor PKCS12 (nor a Java key store)` });
  });

  needsOpenssl.test("a PEM certificate without its key and no keystore-key: the error says where to put it", () => {
    const err = configError(() => server({ keystore: pki().server.cert }));
    expect(err.key).toBe("keystore");
    expect(err.detail).toContain(`no private key in ${pki().server.cert}`);
    expect(err.detail).toContain("keystore-key");
  });

  needsOpenssl.test("the same stores on the client side: a PKCS12 client certificate is presented to a server that requires one", async () => {
    const p12 = pkcs12Keystore(pki().client, file("client.p12"), "c");
    const required = server({ ...pemKeystore(), "client-auth": "required", truststore: pki().ca.cert });
    const withCert = clientTlsFromProperties({ ssl: "true", truststore: pki().ca.cert, keystore: p12, "keystore-password": "c" });
    const without = clientTlsFromProperties({ ssl: "true", truststore: pki().ca.cert });
    expect(await connect(required.options, withCert ?? {})).toMatchObject({ served: true });
    expect((await connect(required.options, without ?? {})).served).toBe(false);
  });
});

describe("key stores Flume TS cannot read, and missing files", () => {
  const jks = () => {
    // A Java KeyStore begins with the magic 0xFEEDFEED and its version (2).
    const f = file("keystore.jks");
    writeFileSync(f, Buffer.concat([Buffer.from([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 0, 0, 0, 1]), Buffer.alloc(64, 7)]));
    return f;
  };

  needsOpenssl.test("a JKS keystore is refused with the keytool command that converts it to PKCS12", () => {
    const f = jks();
    const err = configError(() => server({ keystore: f, "keystore-password": "changeit" }));
    expect(err.key).toBe("keystore");
    expect(err.detail).toContain(`keytool -importkeystore -srckeystore ${f} -destkeystore keystore.p12 -deststoretype PKCS12`);
    // validate() reports the same, so `flume validate` catches it before the agent starts.
    expect(tlsProblems(() => server({ keystore: f }))).toEqual([{ key: "keystore", message: err.detail }]);
  });

  needsOpenssl.test("a JKS truststore is refused with the keytool command that exports its certificates to PEM", () => {
    const f = jks();
    const err = configError(() => server({ ...pemKeystore(), "client-auth": "required", truststore: f }));
    expect(err.key).toBe("truststore");
    expect(err.detail).toContain(`keytool -exportcert -rfc -keystore ${f}`);
    const client = configError(() => clientTlsFromProperties({ ssl: "true", truststore: f }));
    expect(client.key).toBe("truststore");
  });

  test("a keystore that does not exist is named, with the reason", () => {
    const missing = file("no-such-keystore.p12");
    const err = configError(() => server({ keystore: missing }));
    expect(err.key).toBe("keystore");
    expect(err.detail).toBe(`cannot read ${missing}: ENOENT`);
  });

  needsOpenssl.test("a missing keystore-key or truststore is named by its key and path", () => {
    const noKey = file("no-such-key.pem");
    expect(configError(() => server({ keystore: pki().server.cert, "keystore-key": noKey }))).toMatchObject({ key: "keystore-key", detail: `cannot read ${noKey}: ENOENT` });
    const noCa = file("no-such-ca.pem");
    expect(configError(() => server({ ...pemKeystore(), "client-auth": "optional", truststore: noCa }))).toMatchObject({ key: "truststore", detail: `cannot read ${noCa}: ENOENT` });
  });

  test("ssl without a keystore is a configuration error naming keystore", () => {
    expect(configError(() => server({})).key).toBe("keystore");
  });
});

describe("protocol versions", () => {
  needsOpenssl.test("TLS 1.2 is the minimum by default: a TLS 1.1 client is refused, a TLS 1.2 one served", async () => {
    const s = server(pemKeystore());
    expect(s.options.minVersion).toBe("TLSv1.2");
    const old = await connect(s.options, trusting({ minVersion: "TLSv1.1", maxVersion: "TLSv1.1" }));
    expect(old.served).toBe(false);
    expect(old.error).toMatch(/protocol.version/i);
    expect(await connect(s.options, trusting({ maxVersion: "TLSv1.2" }))).toMatchObject({ served: true, protocol: "TLSv1.2" });
    expect(await connect(s.options, trusting())).toMatchObject({ served: true, protocol: "TLSv1.3" });
  });

  needsOpenssl.test("openssl s_client -tls1 and -tls1_1 get a protocol version alert by default; -tls1_2 connects", async () => {
    const srv = await listening(server(pemKeystore()).options);
    try {
      for (const flag of ["-tls1", "-tls1_1"]) {
        const r = await sClient(srv.port, [flag]);
        expect(r.connected).toBe(false);
        expect(r.output).toContain("alert protocol version");
      }
      expect(await sClient(srv.port, ["-tls1_2"])).toMatchObject({ connected: true, protocol: "TLSv1.2" });
    } finally {
      srv.close();
    }
  });

  needsOpenssl.test("include-protocols = TLSv1.1 TLSv1.2 lowers the minimum to TLS 1.1 (TLS 1.0 still refused)", async () => {
    const s = server({ ...pemKeystore(), "include-protocols": "TLSv1.1 TLSv1.2" });
    expect(s.options).toMatchObject({ minVersion: "TLSv1.1", maxVersion: "TLSv1.2" });
    expect(await connect(s.options, trusting({ minVersion: "TLSv1.1", maxVersion: "TLSv1.1" }))).toMatchObject({ served: true, protocol: "TLSv1.1" });
    expect((await connect(s.options, trusting({ minVersion: "TLSv1", maxVersion: "TLSv1" }))).served).toBe(false);
  });

  needsOpenssl.test("include-protocols = TLSv1 lets openssl s_client -tls1 connect", async () => {
    const s = server({ ...pemKeystore(), "include-protocols": "TLSv1 TLSv1.1 TLSv1.2 TLSv1.3" });
    expect(s.options).toMatchObject({ minVersion: "TLSv1", maxVersion: "TLSv1.3" });
    const srv = await listening(s.options);
    try {
      // Debian's openssl refuses TLS 1.0's SHA-1 signatures at its default security level.
      expect(await sClient(srv.port, ["-tls1", "-cipher", "DEFAULT@SECLEVEL=0"])).toMatchObject({ connected: true, protocol: "TLSv1" });
    } finally {
      srv.close();
    }
  });

  needsOpenssl.test("exclude-protocols = TLSv1.3 caps at TLS 1.2; exclude-protocols = TLSv1.2 leaves only TLS 1.3", async () => {
    const no13 = server({ ...pemKeystore(), "exclude-protocols": "SSLv3 TLSv1.3" });
    expect(await connect(no13.options, trusting())).toMatchObject({ served: true, protocol: "TLSv1.2" });
    const only13 = server({ ...pemKeystore(), "exclude-protocols": "TLSv1.2" });
    expect(only13.options).toMatchObject({ minVersion: "TLSv1.3", maxVersion: "TLSv1.3" });
    expect((await connect(only13.options, trusting({ maxVersion: "TLSv1.2" }))).served).toBe(false);
  });

  test("protocol lists that enable nothing, or name an unknown protocol, are configuration errors naming include-protocols", () => {
    const none = configError(() => serverTlsFromProperties({ ssl: "true", keystore: "/unused", "exclude-protocols": "TLSv1.2 TLSv1.3" }));
    expect(none.key).toBe("include-protocols");
    expect(none.detail).toContain("no TLS version enabled");
    const unknown = configError(() => serverTlsFromProperties({ ssl: "true", keystore: "/unused", "include-protocols": "TLSv1.4" }));
    expect(unknown).toMatchObject({ key: "include-protocols" });
    expect(unknown.detail).toContain('unknown protocol "TLSv1.4"');
  });
});

describe("cipher suites: Java/IANA names mapped to OpenSSL's", () => {
  const SUITE = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256";
  const OPENSSL_SUITE = "ECDHE-RSA-AES128-GCM-SHA256";

  needsOpenssl.test(`include-cipher-suites = ${SUITE}: a client restricted to that suite is served, one restricted to another is refused`, async () => {
    const s = server({ ...pemKeystore(), "include-cipher-suites": SUITE });
    expect(s.options.ciphers).toBe(OPENSSL_SUITE);
    expect(await connect(s.options, trusting({ maxVersion: "TLSv1.2", ciphers: OPENSSL_SUITE }))).toMatchObject({ served: true, cipher: OPENSSL_SUITE });
    expect((await connect(s.options, trusting({ maxVersion: "TLSv1.2", ciphers: "ECDHE-RSA-AES256-GCM-SHA384" }))).served).toBe(false);
  });

  needsOpenssl.test("include-cipher-suites of TLS 1.2 suites only: a default client gets that suite, not TLS 1.3 and its own suites", async () => {
    const s = server({ ...pemKeystore(), "include-cipher-suites": SUITE });
    expect(await connect(s.options, trusting())).toMatchObject({ served: true, protocol: "TLSv1.2", cipher: OPENSSL_SUITE });
    const srv = await listening(s.options);
    try {
      const r = await sClient(srv.port, ["-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384"]);
      expect(r.connected).toBe(false);
      expect(await sClient(srv.port, ["-tls1_2", "-cipher", OPENSSL_SUITE])).toMatchObject({ connected: true, protocol: "TLSv1.2" });
    } finally {
      srv.close();
    }
  });

  needsOpenssl.test(`exclude-cipher-suites = ${SUITE}: a client restricted to it is refused, others are served`, async () => {
    const s = server({ ...pemKeystore(), "exclude-cipher-suites": SUITE });
    expect((await connect(s.options, trusting({ maxVersion: "TLSv1.2", ciphers: OPENSSL_SUITE }))).served).toBe(false);
    expect(await connect(s.options, trusting({ maxVersion: "TLSv1.2", ciphers: "ECDHE-RSA-AES256-GCM-SHA384" }))).toMatchObject({ served: true, cipher: "ECDHE-RSA-AES256-GCM-SHA384" });
  });

  needsOpenssl.test("include-cipher-suites of TLS 1.3 suites only rules out TLS 1.2; excluding a TLS 1.3 suite is refused with what to do", async () => {
    const s = server({ ...pemKeystore(), "include-cipher-suites": "TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384" });
    expect(s.options).toMatchObject({ minVersion: "TLSv1.3", maxVersion: "TLSv1.3" });
    expect((await connect(s.options, trusting({ maxVersion: "TLSv1.2" }))).served).toBe(false);
    expect(await connect(s.options, trusting())).toMatchObject({ served: true, protocol: "TLSv1.3" });
    const err = configError(() => server({ ...pemKeystore(), "exclude-cipher-suites": "TLS_AES_128_GCM_SHA256" }));
    expect(err.key).toBe("exclude-cipher-suites");
    expect(err.detail).toContain("exclude-protocols");
    const clash = configError(() => server({ ...pemKeystore(), "include-protocols": "TLSv1.3", "include-cipher-suites": SUITE }));
    expect(clash.key).toBe("include-cipher-suites");
  });

  needsOpenssl.test("OpenSSL names are accepted as they are", async () => {
    const s = server({ ...pemKeystore(), "include-cipher-suites": "ECDHE-RSA-AES256-GCM-SHA384" });
    expect(await connect(s.options, trusting({ maxVersion: "TLSv1.2" }))).toMatchObject({ served: true, cipher: "ECDHE-RSA-AES256-GCM-SHA384" });
  });

  needsOpenssl.test("include-cipher-suites naming no suite the TLS library knows is a configuration error naming the key", () => {
    for (const name of ["TLS_NO_SUCH_SUITE", "NO-SUCH-SUITE"]) {
      const err = configError(() => server({ ...pemKeystore(), "include-cipher-suites": name }));
      expect(err.key).toBe("include-cipher-suites");
      expect(err.detail).toContain(`unknown cipher suite "${name}"`);
    }
  });
});

describe("client-auth", () => {
  for (const mode of ["required", "optional"]) {
    test(`client-auth = ${mode} without a truststore is a configuration error naming truststore`, () => {
      const err = configError(() => serverTlsFromProperties({ ssl: "true", keystore: "/unused", "client-auth": mode }));
      expect(err.key).toBe("truststore");
      expect(err.detail).toContain(`client-auth is ${mode}`);
    });
  }

  test("a source's validate() reports it under truststore (what flume validate prints)", () => {
    const { options, errors } = httpSource.parse({ port: "0", ssl: "true", keystore: "/unused", "client-auth": "required" });
    expect(errors).toEqual([]);
    const problems = httpSource.validate?.(options) ?? [];
    expect(problems.map((p) => p.key)).toEqual(["truststore"]);
  });

  test("an unknown client-auth value is refused with the allowed ones", () => {
    const err = configError(() => serverTlsFromProperties({ ssl: "true", keystore: "/unused", "client-auth": "want" }));
    expect(err.key).toBe("client-auth");
    expect(err.detail).toMatch(/none.*optional.*required/);
  });

  needsOpenssl.test("client-auth = none asks for no certificate; ssl = false gives no TLS at all", () => {
    expect(server(pemKeystore()).options.requestCert).toBeFalsy();
    expect(serverTlsFromProperties({ ssl: "false", keystore: "/not/read" })).toBeNull();
  });
});

describe("client side (sinks, avro-client)", () => {
  needsOpenssl.test("truststore verifies the server's chain; without it the system CAs do not know the test CA; trust-all-certs accepts", async () => {
    const s = server(pemKeystore());
    const trustingClient = clientTlsFromProperties({ ssl: "true", truststore: pki().ca.cert });
    expect(await connect(s.options, trustingClient ?? {})).toMatchObject({ served: true });
    const systemCas = await connect(s.options, clientTlsFromProperties({ ssl: "true" }) ?? {});
    expect(systemCas.served).toBe(false);
    expect(systemCas.error).toMatch(/certificate/i);
    expect(await connect(s.options, clientTlsFromProperties({ ssl: "true", "trust-all-certs": "true" }) ?? {})).toMatchObject({ served: true });
  });

  needsOpenssl.test("the client's protocol floor is TLS 1.2 too: a server limited to TLS 1.1 is refused", async () => {
    const old = server({ ...pemKeystore(), "include-protocols": "TLSv1.1" });
    const r = await connect(old.options, clientTlsFromProperties({ ssl: "true", truststore: pki().ca.cert }) ?? {});
    expect(r.served).toBe(false);
  });
});
