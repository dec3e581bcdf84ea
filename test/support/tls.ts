/** TLS material for the tests: made with openssl (see needsOpenssl in requires.ts). */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";

export interface KeyPair {
  cert: string;
  key: string;
}

function openssl(...args: string[]): void {
  const r = spawnSync("openssl", args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr ?? r.error}`);
}

/** A self-signed certificate and key for 127.0.0.1/localhost, made with openssl in dir. */
export function selfSignedCert(dir: string, name = "server"): KeyPair {
  const cert = path.join(dir, `${name}.crt.pem`);
  const key = path.join(dir, `${name}.key.pem`);
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost");
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
