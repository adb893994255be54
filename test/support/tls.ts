/**
 * Certificates for TLS tests, made with the openssl command line: a certificate authority of the test's
 * own, and server certificates it signs for localhost and 127.0.0.1, which clients trust through it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServerCertificate {
  certFile: string;
  keyFile: string;
  /** SHA-256 fingerprint, as a TLS peer's certificate tells it (`fingerprint256`). */
  fingerprint: string;
}

export interface TestAuthority {
  /** The authority's certificate (PEM), for clients to trust. */
  ca: string;
  /** A new server certificate signed by the authority, with its own new key. */
  issue(name: string): ServerCertificate;
  /** Copies a certificate and its key to files of their own, for a server to read and a test to overwrite. */
  install(certificate: ServerCertificate): { certFile: string; keyFile: string };
  /** Makes `target`'s files hold `certificate` (as a renewal would). */
  replace(target: { certFile: string; keyFile: string }, certificate: ServerCertificate): void;
}

const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });

const newKey = (file: string) =>
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file]);

export function makeAuthority(): TestAuthority {
  const dir = mkdtempSync(join(tmpdir(), 'thingbase-tls-'));
  const caKey = join(dir, 'ca.key');
  const caCert = join(dir, 'ca.pem');
  newKey(caKey);
  openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    caKey,
    '-subj',
    '/CN=Thingbase test CA',
    '-days',
    '2',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
    '-out',
    caCert,
  ]);
  let installed = 0;
  return {
    ca: readFileSync(caCert, 'utf8'),
    issue: (name) => {
      const keyFile = join(dir, `${name}.key`);
      const csr = join(dir, `${name}.csr`);
      const certFile = join(dir, `${name}.pem`);
      newKey(keyFile);
      openssl([
        'req',
        '-new',
        '-key',
        keyFile,
        '-subj',
        `/CN=localhost/O=${name}`,
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-out',
        csr,
      ]);
      openssl([
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        caCert,
        '-CAkey',
        caKey,
        '-set_serial',
        `0x${randomBytes(8).toString('hex')}`,
        '-days',
        '2',
        '-copy_extensions',
        'copyall',
        '-out',
        certFile,
      ]);
      return { certFile, keyFile, fingerprint: new X509Certificate(readFileSync(certFile)).fingerprint256 };
    },
    install: (certificate) => {
      installed += 1;
      const files = { certFile: join(dir, `served-${installed}.pem`), keyFile: join(dir, `served-${installed}.key`) };
      copyFileSync(certificate.certFile, files.certFile);
      copyFileSync(certificate.keyFile, files.keyFile);
      return files;
    },
    replace: (target, certificate) => {
      copyFileSync(certificate.certFile, target.certFile);
      copyFileSync(certificate.keyFile, target.keyFile);
    },
  };
}
