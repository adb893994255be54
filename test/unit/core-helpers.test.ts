import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChangeFeed } from '../../src/core/change-feed.ts';
import { parseDuration } from '../../src/core/config.ts';
import { SecretBox } from '../../src/core/secret-box.ts';
import { redactUrl } from '../../src/core/urls.ts';

describe('core helpers', () => {
  it('when a secret is sealed then only a box with the same key opens it; text that is not sealed is refused', () => {
    const raw = new SecretBox(Buffer.alloc(32, 7));
    const texts = new SecretBox('a passphrase');
    for (const box of [raw, texts]) assert.equal(box.open(box.seal('device secret')), 'device secret');
    assert.throws(() => raw.open(texts.seal('device secret')));
    for (const junk of ['', 'v1', 'v2:a:b:c', 'v1:a:b'])
      assert.throws(() => raw.open(junk), /not a sealed secret/, junk);
  });

  it('when an address is printed then its password is hidden, parsable or not', () => {
    assert.equal(redactUrl('postgres://u:pw@db:5432/x'), 'postgres://u:***@db:5432/x');
    assert.equal(redactUrl('postgres://db:5432/x'), 'postgres://db:5432/x');
    assert.equal(redactUrl('mqtt://user:p%zz@broker host'), 'mqtt://user:***@broker host');
  });

  it('when a duration is read then plain seconds and s, m, h, d units count', () => {
    assert.equal(parseDuration('X', '90'), 90);
    assert.equal(parseDuration('X', '90m'), 5400);
    assert.equal(parseDuration('X', ' 7d '), 604_800);
    assert.throws(() => parseDuration('X', '7 weeks'), /X must be a duration/);
  });

  it('when a follower throws something that is not an Error then it is reported too', async () => {
    const feed = new ChangeFeed();
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    feed.follow(['Thing'], () => {
      throw 'a bare string';
    });
    feed.tell([{ entityType: 'Thing', organisationKey: 'o', entityKey: 't', action: 'create', remote: false }]);
    await new Promise((resolve) => setImmediate(resolve));
    process.off('warning', onWarning);
    assert.ok(warnings.some((w) => w.includes('a bare string')));
  });
});
