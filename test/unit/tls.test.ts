import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/core/config.ts';
import { readTlsFiles } from '../../src/core/tls.ts';
import { makeAuthority } from '../support/tls.ts';

const authority = makeAuthority();
const good = authority.issue('unit');
const other = authority.issue('other');

/** A file of the test's with this text, named after the certificate's files. */
const fileWith = (name: string, text: string) => {
  const file = join(good.certFile, '..', name);
  writeFileSync(file, text);
  return file;
};

describe('TLS settings and files', () => {
  it('when both files are set then TLS is on, with https addresses and MQTTS on 8883 unless MQTTS_PORT says otherwise', () => {
    const config = loadConfig({ TLS_CERT_FILE: 'c.pem', TLS_KEY_FILE: 'k.pem', PORT: '8443' });
    assert.deepEqual(config.tls, { certFile: 'c.pem', keyFile: 'k.pem' });
    assert.equal(config.publicBaseUrl, 'https://127.0.0.1:8443');
    assert.equal(config.mqttsPort, 8883);
    assert.equal(config.mqttsPortExplicit, false);
    const off = loadConfig({ MQTTS_PORT: '0' });
    assert.equal(off.mqttsPort, 0);
    assert.equal(off.mqttsPortExplicit, true);
    assert.equal(off.tls, undefined);
    assert.equal(off.publicBaseUrl, 'http://127.0.0.1:3000');
    assert.throws(() => loadConfig({ MQTTS_PORT: 'tls' }), /MQTTS_PORT must be a port number/);
  });

  it('when only one of the two files is set then the configuration names the one missing', () => {
    assert.throws(
      () => loadConfig({ TLS_CERT_FILE: 'c.pem' }),
      (error: Error) => error instanceof ConfigError && /TLS_CERT_FILE is set without TLS_KEY_FILE/.test(error.message),
    );
    assert.throws(() => loadConfig({ TLS_KEY_FILE: 'k.pem' }), /TLS_KEY_FILE is set without TLS_CERT_FILE/);
  });

  it('when the files hold a certificate and its key then they are read with its fingerprint and expiry', async () => {
    const read = await readTlsFiles(good);
    assert.equal(read.cert, readFileSync(good.certFile, 'utf8'));
    assert.equal(read.key, readFileSync(good.keyFile, 'utf8'));
    assert.equal(read.fingerprint, good.fingerprint);
    assert.ok(Date.parse(read.validTo) > Date.now(), read.validTo);
  });

  it('when a file cannot be read then the error names its variable and the file', async () => {
    await assert.rejects(
      readTlsFiles({ certFile: good.certFile, keyFile: '/nonexistent/key.pem' }),
      (error: Error) =>
        error instanceof ConfigError &&
        /^cannot read TLS_KEY_FILE \/nonexistent\/key\.pem \(ENOENT/.test(error.message),
    );
    const directory = join(good.certFile, '..');
    await assert.rejects(
      readTlsFiles({ certFile: directory, keyFile: good.keyFile }),
      /cannot read TLS_CERT_FILE .* \(EISDIR/,
    );
  });

  it('when a file holds no certificate or no key then the error names the variable', async () => {
    await assert.rejects(
      readTlsFiles({ certFile: good.keyFile, keyFile: good.keyFile }),
      /TLS_CERT_FILE .* holds no PEM certificate/,
      'a key where the certificate should be',
    );
    await assert.rejects(
      readTlsFiles({ certFile: good.certFile, keyFile: good.certFile }),
      /TLS_KEY_FILE .* holds no unencrypted PEM private key/,
      'a certificate where the key should be',
    );
    await assert.rejects(
      readTlsFiles({ certFile: good.certFile, keyFile: fileWith('empty.key', '') }),
      /TLS_KEY_FILE .* holds no unencrypted PEM private key/,
    );
  });

  it('when the key is encrypted then the error says it needs to be without a passphrase', async () => {
    const encrypted = fileWith('encrypted.key', '');
    execFileSync('openssl', ['pkey', '-in', good.keyFile, '-aes256', '-passout', 'pass:secret', '-out', encrypted]);
    chmodSync(encrypted, 0o600);
    await assert.rejects(
      readTlsFiles({ certFile: good.certFile, keyFile: encrypted }),
      /TLS_KEY_FILE .* holds no unencrypted PEM private key .*without a passphrase/,
    );
  });

  it("when the key is not the certificate's then the error names both files", async () => {
    await assert.rejects(
      readTlsFiles({ certFile: good.certFile, keyFile: other.keyFile }),
      new RegExp(
        `TLS_KEY_FILE ${other.keyFile} is not the private key of the certificate in TLS_CERT_FILE ${good.certFile}`,
      ),
    );
  });
});
