import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromAddress, parseObject } from '../../src/deliveries/senders.ts';

describe('delivery senders', () => {
  it('when an action body is read then only a JSON object counts; anything else is empty', () => {
    assert.deepEqual(parseObject('{"user_defined_properties":{"a":"1"}}'), { user_defined_properties: { a: '1' } });
    for (const text of [null, '', 'not json', '[1,2]', '"text"', 'null', '7']) {
      assert.deepEqual(parseObject(text), {}, String(text));
    }
  });

  it('when SMTP_FROM is not set then mail comes from the SMTP user if it is an address, else thingbase@localhost', () => {
    assert.equal(fromAddress('smtp://alerts%40example.com:pw@mail.example.com:587'), 'alerts@example.com');
    assert.equal(fromAddress('smtp://relay:pw@mail.example.com'), 'thingbase@localhost');
    assert.equal(fromAddress('not a url'), 'thingbase@localhost');
    assert.equal(fromAddress('smtp://%E0%A4%A@mail.example.com'), 'thingbase@localhost', 'a user that does not decode');
  });
});
