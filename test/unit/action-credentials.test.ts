/** actions/credentials.ts: what a role that may not update an action, and an audit trail, show of it. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactedAction } from '../../src/actions/credentials.ts';
import { presentAuditTrail } from '../../src/audit/presenter.ts';
import { timeFormatter } from '../../src/core/time.ts';
import type { NotificationAction } from '../../src/store/tables.ts';

const action = (fields: Partial<NotificationAction>) =>
  ({ type: 'CallHttpUrlAction', url: null, headers: null, query: null, ...fields }) as NotificationAction;

describe('action credentials', () => {
  it('when a URL carries a credential in its user name, path, query or fragment then each is redacted and the rest kept', () => {
    const cases: [string, string][] = [
      ['https://tok3n@example.com/in', 'https://[redacted]@example.com/in'],
      ['https://user:pw@example.com/in', 'https://[redacted]@example.com/in'],
      [
        'https://example.com/in?pwd=a&hash=b&hmac=c&site=north',
        'https://example.com/in?pwd=[redacted]&hash=[redacted]&hmac=[redacted]&site=north',
      ],
      ['https://example.com/in?ref=Abcdefgh12345678', 'https://example.com/in?ref=[redacted]'],
      ['https://example.com/in#access_token=a&x=1', 'https://example.com/in#access_token=[redacted]&x=1'],
      ['https://example.com/maintenance/$THING$?level=high', 'https://example.com/maintenance/$THING$?level=high'],
      ['https://example.com/a@b', 'https://example.com/a@b'],
    ];
    for (const [url, shown] of cases) assert.equal(redactedAction(action({ url })).url, shown, url);
  });

  it('when headers are given then only those that describe the request are shown', () => {
    const headers = JSON.stringify({
      'Content-Type': 'text/plain',
      accept: 'a',
      'X-Api-Pass': 'p',
      Bearer: 'b',
      'X-Site': 'n',
    });
    assert.deepEqual(JSON.parse(String(redactedAction(action({ headers })).headers)), {
      'Content-Type': 'text/plain',
      accept: 'a',
      'X-Api-Pass': '[redacted]',
      Bearer: '[redacted]',
      'X-Site': '[redacted]',
    });
  });

  it('when an audit trail holds a snapshot recorded with credentials shown then it shows them redacted', () => {
    const snapshot = JSON.stringify({
      type: 'CallHttpUrlAction',
      url: 'https://tok3n@example.com/in?pwd=p&site=north',
      headers: { 'X-Webhook-Hmac': 'h', 'Content-Type': 'text/plain' },
      query: { hmac: 'q', region: 'north' },
      body: 'the message',
    });
    const row = {
      audit_trail_key: 'a',
      organisation_key: 'o',
      action_taken: 'update',
      entity_type: 'NotificationAction',
      entity_key: 'k',
      entity_name: null,
      new_entity_contents: snapshot,
      old_entity_contents: '{}',
      timestamp: 1,
      user_name: 'u',
      role_name: 'r',
    };
    const shown = presentAuditTrail(row, timeFormatter('int', 'UTC')).new_entity_contents;
    assert.deepEqual(shown, {
      type: 'CallHttpUrlAction',
      url: 'https://[redacted]@example.com/in?pwd=[redacted]&site=north',
      headers: { 'X-Webhook-Hmac': '[redacted]', 'Content-Type': 'text/plain' },
      query: { hmac: '[redacted]', region: 'north' },
      body: 'the message',
    });
    // Another entity's contents are its own.
    assert.deepEqual(
      presentAuditTrail({ ...row, entity_type: 'Thing' }, timeFormatter('int', 'UTC')).new_entity_contents,
      JSON.parse(snapshot),
    );
  });
});
