/** TLS material for the tests: made with openssl (see needsOpenssl in requires.ts). */
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";

export interface KeyPair {
  cert: string;
  key: string;
}

/** Runs openssl with the arguments (an array, or one argument each); throws with its stderr when it fails. */
function openssl(...args: (string | string[])[]): void {
  const argv = args.flat();
  const r = spawnSync("openssl", argv, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`openssl ${argv.join(" ")} failed: ${r.stderr ?? r.error}`);
}

const SERVER_NAMES = "subjectAltName=IP:127.0.0.1,DNS:localhost";

/** A self-signed certificate and key for 127.0.0.1/localhost (or `names`, an openssl subjectAltName line), made with openssl in dir. */
export function selfSignedCert(dir: string, name = "server", names = SERVER_NAMES): KeyPair {
  const cert = path.join(dir, `${name}.crt.pem`);
  const key = path.join(dir, `${name}.key.pem`);
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost", "-addext", names);
  return { cert, key };
}

/** A CA certificate and key (the cert is what a truststore holds), made in dir; EC P-256 keys, quick to make. */
export function certificateAuthority(dir: string, name = "ca"): KeyPair {
  const cert = path.join(dir, `${name}.crt.pem`);
  const key = path.join(dir, `${name}.key.pem`);
  openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", `/CN=${name} test CA`, "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
  return { cert, key };
}

/** A certificate signed by ca for a client (extendedKeyUsage clientAuth) or a server on 127.0.0.1/localhost. */
export function signedCert(dir: string, ca: KeyPair, name: string, usage: "clientAuth" | "serverAuth" = "clientAuth"): KeyPair {
  const cert = path.join(dir, `${name}.crt.pem`);
  const key = path.join(dir, `${name}.key.pem`);
  const csr = path.join(dir, `${name}.csr`);
  const ext = path.join(dir, `${name}.ext`);
  openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr, "-subj", `/CN=${name}`);
  writeFileSync(ext, `extendedKeyUsage=${usage}\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n`);
  openssl("x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext);
  return { cert, key };
}

/** The pair as a PKCS12 key store protected by password (what keystore accepts besides PEM). */
export function pkcs12(dir: string, pair: KeyPair, name: string, password: string): string {
  const file = path.join(dir, `${name}.p12`);
  openssl("pkcs12", "-export", "-in", pair.cert, "-inkey", pair.key, "-out", file, "-passout", `pass:${password}`, "-name", name);
  return file;
}

export interface Identity {
  /** PEM certificate. */
  cert: string;
  /** PEM private key (unencrypted). */
  key: string;
}

/** A certificate authority made in dir: its certificate (a truststore) and key. */
export interface Pki {
  dir: string;
  ca: Identity;
  /** The server's certificate for 127.0.0.1/localhost, signed by ca. */
  server: Identity;
  /** A client certificate signed by ca. */
  client: Identity;
  /** A self-signed client certificate no truststore here vouches for. */
  rogue: Identity;
}

/** Signs a new key's certificate with the CA: CN name, the given extensions. */
function issue(dir: string, ca: Identity, name: string, extensions: string): Identity {
  const key = path.join(dir, `${name}.key.pem`);
  const csr = path.join(dir, `${name}.csr`);
  const cert = path.join(dir, `${name}.crt.pem`);
  const ext = path.join(dir, `${name}.ext`);
  writeFileSync(ext, `${extensions}\n`);
  openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", `/CN=${name}`]);
  openssl(["x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key, "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext]);
  return { cert, key };
}

/** A CA, a server certificate and a client certificate it signed, and a self-signed client certificate, in dir. */
export function makePki(dir: string): Pki {
  const ca = { cert: path.join(dir, "ca.crt.pem"), key: path.join(dir, "ca.key.pem") };
  openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca.key, "-out", ca.cert, "-days", "2", "-subj", "/CN=Flume TS test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
  const server = issue(dir, ca, "server", `${SERVER_NAMES}\nextendedKeyUsage=serverAuth`);
  const client = issue(dir, ca, "client", "extendedKeyUsage=clientAuth");
  const rogue = { cert: path.join(dir, "rogue.crt.pem"), key: path.join(dir, "rogue.key.pem") };
  openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", rogue.key, "-out", rogue.cert, "-days", "2", "-subj", "/CN=rogue", "-addext", "extendedKeyUsage=clientAuth"]);
  return { dir, ca, server, client, rogue };
}

/** The certificate and key in one PEM file (Flume TS reads the key from the keystore file then). */
export function combinedPem(id: Identity, file: string): string {
  openssl(["x509", "-in", id.cert, "-out", file]);
  const r = spawnSync("openssl", ["pkey", "-in", id.key], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`openssl pkey failed: ${r.stderr}`);
  writeFileSync(file, r.stdout, { flag: "a" });
  return file;
}

/** A PKCS12 keystore of the certificate and key, as `openssl pkcs12 -export` makes it; password "" for none. */
export function pkcs12Keystore(id: Identity, file: string, password: string): string {
  const pass = password === "" ? ["-passout", "pass:", "-nomaciter"] : ["-passout", `pass:${password}`];
  openssl(["pkcs12", "-export", "-in", id.cert, "-inkey", id.key, "-out", file, "-name", "flume", ...pass]);
  return file;
}

export interface SClientResult {
  /** Whether the handshake completed (openssl printed the negotiated protocol). */
  connected: boolean;
  /** The negotiated protocol ("TLSv1.2"), or "" when none. */
  protocol: string;
  /** stdout and stderr together. */
  output: string;
}

/**
 * Runs `openssl s_client -connect 127.0.0.1:port ...args` with the text as its input (it
 * sends it, then closes) and reports whether the handshake completed without an alert.
 */
export function sClient(port: number, args: string[], input = ""): Promise<SClientResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("openssl", ["s_client", "-connect", `127.0.0.1:${port}`, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    const timer = setTimeout(() => child.kill("SIGKILL"), 10000);
    child.on("close", () => {
      clearTimeout(timer);
      const m = /^\s*Protocol\s*:\s*(\S+)/m.exec(output);
      const cipher = /^\s*Cipher\s*:\s*(\S+)/m.exec(output);
      // s_client prints the session even when the server's alert (a refused client certificate) arrives right after it.
      const alert = /:error:[0-9A-F]+:SSL routines:/.test(output);
      const connected = !alert && m !== null && cipher !== null && cipher[1] !== "0000" && cipher[1] !== "(NONE)";
      resolve({ connected, protocol: connected && m ? m[1] : "", output });
    });
    child.stdin.end(input);
  });
}
