/** TLS material for the tests: made with openssl (see needsOpenssl in requires.ts). */
import { spawnSync } from "node:child_process";
import path from "node:path";

/** A self-signed certificate and key for 127.0.0.1/localhost, made with openssl in dir. */
export function selfSignedCert(dir: string, name = "server") {
  const cert = path.join(dir, `${name}.crt.pem`);
  const key = path.join(dir, `${name}.key.pem`);
  const r = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
    { encoding: "utf8" },
  );
  if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
  return { cert, key };
}
