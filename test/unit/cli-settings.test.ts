import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/core/config.ts';
import { explainListenError, redactUrl } from '../../src/startup.ts';

/** Every environment variable the server or its commands read, found in the sources. */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  for (const file of readdirSync('src', { recursive: true })) {
    if (!String(file).endsWith('.ts')) continue;
    const text = readFileSync(join('src', String(file)), 'utf8');
    const pattern =
      file === join('core', 'config.ts') ? /\benv\.([A-Z][A-Z0-9_]*)/g : /process\.env\.([A-Z][A-Z0-9_]*)/g;
    for (const match of text.matchAll(pattern)) names.add(match[1] as string);
  }
  return names;
}

describe('settings', () => {
  it('when the server reads an environment variable then docs/configuration.md lists it in its table', () => {
    const docs = readFileSync('docs/configuration.md', 'utf8');
    const listed = new Set([...docs.matchAll(/^\| `([A-Z][A-Z0-9_]*)` +\|/gm)].map((m) => m[1] as string));
    const read = variablesRead();
    assert.ok(read.has('THINGBASE_SECRET_KEY') && read.has('TRUST_PROXY'), [...read].join(' '));
    const missing = [...read].filter((name) => !listed.has(name));
    assert.deepEqual(missing, [], 'settings read but not documented');
    const stale = [...listed].filter((name) => !read.has(name));
    assert.deepEqual(stale, [], 'settings documented but never read');
  });

  it('when TRUST_PROXY is given then it is read as a boolean with the other settings', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
    assert.throws(() => loadConfig({ TRUST_PROXY: 'sometimes' }), /TRUST_PROXY must be true or false/);
  });

  it('when a database address is printed then its password is not', () => {
    assert.equal(redactUrl('postgres://app:s3cret@db:5432/thingbase'), 'postgres://app:***@db:5432/thingbase');
    assert.equal(redactUrl('postgres://app@db/thingbase'), 'postgres://app@db/thingbase');
    assert.equal(redactUrl('sqlite:./data/thingbase.db'), 'sqlite:./data/thingbase.db');
  });

  it('when the HTTP port cannot be opened then the error names PORT or HOST', () => {
    const at = { port: 3000, host: '10.9.9.9' };
    const failure = (code: string) => explainListenError(Object.assign(new Error(code), { code }), at) as Error;
    assert.ok(failure('EADDRINUSE') instanceof ConfigError);
    assert.equal(failure('EADDRINUSE').message, 'PORT 3000 is taken: set PORT to a free port');
    assert.match(failure('EACCES').message, /^PORT 3000 may not be opened by this user.*set PORT/);
    assert.match(failure('EADDRNOTAVAIL').message, /^HOST 10\.9\.9\.9 is not an address of this machine: set HOST/);
    const other = new Error('something else');
    assert.equal(explainListenError(other, at), other);
  });
});
