/**
 * The TLS certificate and key of HTTPS and MQTTS (docs/configuration.md, "TLS"), read from the PEM
 * files TLS_CERT_FILE and TLS_KEY_FILE at start and again on SIGHUP. Whatever is wrong with them is
 * told as the variable to fix.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ConfigError } from './config.ts';

/** What a TLS server needs: the certificate (chain) and its private key, as PEM text. */
export interface TlsMaterial {
  cert: string;
  key: string;
}

/** A certificate and its key, read, parsed and checked to belong together. */
export interface TlsCertificate extends TlsMaterial {
  /** SHA-256 fingerprint of the (first) certificate, as `openssl x509 -fingerprint -sha256` prints it. */
  fingerprint: string;
  /** When the certificate expires (its notAfter), as X509Certificate tells it. */
  validTo: string;
}

async function readPem(variable: string, file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      `cannot read ${variable} ${file} (${(error as Error).message}): set ${variable} to a PEM file this process can read`,
    );
  }
}

/** Reads the two files and checks that they hold a certificate and the private key that goes with it. */
export async function readTlsFiles(files: { certFile: string; keyFile: string }): Promise<TlsCertificate> {
  const [cert, key] = await Promise.all([
    readPem('TLS_CERT_FILE', files.certFile),
    readPem('TLS_KEY_FILE', files.keyFile),
  ]);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch (error) {
    throw new ConfigError(
      `TLS_CERT_FILE ${files.certFile} holds no PEM certificate (${(error as Error).message}): set TLS_CERT_FILE to a file beginning with -----BEGIN CERTIFICATE-----`,
    );
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch (error) {
    throw new ConfigError(
      `TLS_KEY_FILE ${files.keyFile} holds no unencrypted PEM private key (${(error as Error).message}): set TLS_KEY_FILE to the certificate's key, without a passphrase`,
    );
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    throw new ConfigError(
      `TLS_KEY_FILE ${files.keyFile} is not the private key of the certificate in TLS_CERT_FILE ${files.certFile}: set the two to a certificate and its own key`,
    );
  }
  return { cert, key, fingerprint: certificate.fingerprint256, validTo: certificate.validTo };
}
