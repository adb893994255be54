import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  hashAtEnd,
  hmacHex,
  signedTextOfMembers,
  signedTextOfMqttPayload,
  signedTextWithEnvelopeLast,
  verifySignature,
} from '../../src/devices/signature.ts';

/** Top-level members the SDKs add after signing, and values and spacings to surround them with. */
const envelope = ['hash', 'access_key', 'aliot_protocol_version'];
const spacing = fc.constantFrom(['', ''], [' ', ' '], ['\n  ', ' '], ['', '\t']);
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.stringMatching(/^[0-9a-f]{64}$/),
  fc.dictionary(fc.constantFrom(...envelope, 'x'), fc.jsonValue({ maxDepth: 1 })),
);

const AK = 'a'.repeat(40);
const SK = 'b'.repeat(40);

// Payloads captured from the Python edge SDK publishing over MQTT with the key pair above: each is the
// compact JSON it signed, followed by the members it adds before publishing.
const PYTHON_MQTT = [
  {
    what: 'register',
    signed:
      '{"thing_key":"614a5ed34c","name":"Compressor","type":"","description":"Thing for compressor","data":{},"additional_attributes":{},"user_defined_properties":{},"traits":{},"tags":"","bi_directional":false,"timestamp":1700000000123}',
    hash: 'b6024296e99fc43113f7a3bf1dec4740ac67eb95850fff8edd6b64df007053f4',
  },
  {
    what: 'event',
    signed: '{"data":{"pressure":42,"temperature":17.5},"thing_key":"614a5ed34c","timestamp":1700000000123}',
    hash: 'f640a2487c8e7e78af9e2eb512d6413d8eda23a44d09637b04a6b55c24fbe09b',
  },
  {
    // The first event had been sent on its own before, so it still carries that send's members.
    what: 'bulk event',
    signed:
      '{"events":[{"data":{"pressure":42,"temperature":17.5},"thing_key":"614a5ed34c","timestamp":1700000000123,"hash":"f640a2487c8e7e78af9e2eb512d6413d8eda23a44d09637b04a6b55c24fbe09b","access_key":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","aliot_protocol_version":2.0},{"data":{"name":"caf\\u00e9 \\"q\\""},"waypoint":[18.5,73.25],"thing_key":"614a5ed34c","timestamp":1700000000123}]}',
    hash: '9d25ff1adaced4d74872ecc72d2a886cfd57caba36be6675ff4f153636aab813',
  },
  {
    what: 'heartbeat',
    signed: '{"thing_key":"614a5ed34c","timestamp":1700000000123}',
    hash: 'a6424da60889fb29fa153206cd41667655e93253ca9d29abd0a1e67ada23b749',
  },
  {
    what: 'alert',
    signed:
      '{"alert":{"message":"This is an example INFO alert","thing_key":"614a5ed34c","alert_type":0,"data":{"foo":"bar"},"timestamp":1700000000123}}',
    hash: '77b549a551bca474a6e0cce969d325d5a7f9a620ebaff334fadefe8e0411083d',
  },
  {
    what: 'instruction ack',
    signed:
      '{"alert":{"message":"done","alert_key":"5b0c1d2e3f4a5b6c7d8e9f00","alert_type":1,"data":{"execution_status":"success"},"timestamp":1700000000123}}',
    hash: 'cf47c96b3d9e9555f80ee445aac073b8553c5941742bbcfee52916285fabc176',
  },
];

function pythonPublished(signed: string, hash: string): string {
  return `${signed.slice(0, -1)},"hash":"${hash}","access_key":"${AK}","aliot_protocol_version":2.0}`;
}

const stripped = (raw: string) => signedTextOfMqttPayload(raw).signed;

describe('signature', () => {
  it('when the documented test vector is signed then the documented digest comes out', () => {
    const digest = 'ab06a3c89db83e9e14eae39d28d96b447d07946efbfb478463afec5d367d2812';
    assert.equal(hmacHex('12345', 'This is a test'), digest);
    assert.equal(hmacHex('12345', Buffer.from('This is a test')), digest);
  });

  it('when a signature matches then verify is true for strings, buffers and upper-case hex', () => {
    const sig = hmacHex(SK, '{"a":1}');
    assert.ok(verifySignature(SK, '{"a":1}', sig));
    assert.ok(verifySignature(SK, Buffer.from('{"a":1}'), sig));
    assert.ok(verifySignature(SK, '{"a":1}', sig.toUpperCase()));
    assert.ok(verifySignature('12345', 'This is a test', hmacHex('12345', 'This is a test')));
  });

  it('when a signature does not match or is not a digest then verify is false', () => {
    const sig = hmacHex(SK, '{"a":1}');
    const flipped = (sig[0] === '0' ? '1' : '0') + sig.slice(1);
    assert.equal(verifySignature(SK, '{"a":1}', flipped), false);
    assert.equal(verifySignature(SK, '{"a":2}', sig), false);
    assert.equal(verifySignature('c'.repeat(40), '{"a":1}', sig), false);
    for (const bad of ['', sig.slice(0, 63), `${sig}0`, sig.slice(0, 62), `z${sig.slice(1)}`, ` ${sig.slice(1)}`]) {
      assert.equal(verifySignature(SK, '{"a":1}', bad), false, JSON.stringify(bad));
    }
  });

  it('when a payload the Python SDK published is stripped then the text it signed comes back', () => {
    for (const { what, signed, hash } of PYTHON_MQTT) {
      const result = signedTextOfMqttPayload(pythonPublished(signed, hash));
      assert.equal(result.signed, signed, what);
      assert.equal(result.hash, hash, what);
      assert.equal(result.accessKey, AK, what);
      assert.ok(verifySignature(SK, result.signed, hash), what);
    }
  });

  it('when the Go and C SDK shapes are stripped then the signed text comes back', () => {
    // Go: keys sorted, no protocol version, empty device_key; C: version printed as 2.
    const go = '{"data":{"pressure":42},"device_key":"","thing_key":"614a5ed34c","timestamp":1700000000123}';
    const c = '{"timestamp":1700000000123,"thing_key":"742923439d","data":{"pressure":1,"temperature":2}}';
    const goRaw = `${go.slice(0, -1)},"hash":"${hmacHex(SK, go)}","access_key":"${AK}"}`;
    const cRaw = `${c.slice(0, -1)},"hash":"${hmacHex(SK, c)}","access_key":"${AK}","aliot_protocol_version":2}`;
    assert.equal(stripped(goRaw), go);
    assert.equal(stripped(cRaw), c);
    assert.ok(verifySignature(SK, stripped(cRaw), signedTextOfMqttPayload(cRaw).hash!));
  });

  it('when the members are scattered as the Java SDK leaves them then each goes with one comma', () => {
    const raw =
      '{"access_key":"AK","data":{"pressure":42},"aliot_protocol_version":2.0,"thing_key":"614a5ed34c","hash":"H","timestamp":1700000000123}';
    const result = signedTextOfMqttPayload(raw);
    assert.equal(result.signed, '{"data":{"pressure":42},"thing_key":"614a5ed34c","timestamp":1700000000123}');
    assert.equal(result.hash, 'H');
    assert.equal(result.accessKey, 'AK');
  });

  it('when a member is first, in the middle or last then the text around it is kept', () => {
    assert.equal(stripped('{"hash":"h","a":1,"b":2}'), '{"a":1,"b":2}');
    assert.equal(stripped('{"a":1,"hash":"h","b":2}'), '{"a":1,"b":2}');
    assert.equal(stripped('{"a":1,"b":2,"hash":"h"}'), '{"a":1,"b":2}');
    assert.equal(stripped('{"a":1,"b":2}'), '{"a":1,"b":2}');
    assert.equal(stripped('{"hash":"h","access_key":"k","aliot_protocol_version":2.0}'), '{}');
    assert.equal(stripped(' \n{"hash":"h"}\n'), ' \n{}\n');
  });

  it('when separators carry whitespace then it is kept as the serialiser wrote it', () => {
    // Python's default separators
    assert.equal(stripped('{"hash": "h", "a": 1, "b": [1, 2]}'), '{"a": 1, "b": [1, 2]}');
    assert.equal(stripped('{"a": 1, "hash": "h", "b": [1, 2]}'), '{"a": 1, "b": [1, 2]}');
    assert.equal(stripped('{"a": 1, "b": [1, 2], "hash": "h"}'), '{"a": 1, "b": [1, 2]}');
    // indented
    assert.equal(stripped('{\n  "a": 1,\n  "hash": "h",\n  "b": 2\n}'), '{\n  "a": 1,\n  "b": 2\n}');
    assert.equal(stripped('{\n  "a": 1,\n  "b": 2,\n  "hash": "h"\n}'), '{\n  "a": 1,\n  "b": 2\n}');
    assert.equal(stripped('{ "hash" : "h" , "a" : 1 }'), '{ "a" : 1 }');
    assert.equal(stripped('{\t"a":1 ,\t"hash":"h" }'), '{\t"a":1 }');
  });

  it('when a nested object has a key named hash then it is not touched', () => {
    const nested = '{"data":{"hash":"inner","access_key":"x","aliot_protocol_version":1},"events":[{"hash":"e"}]';
    const result = signedTextOfMqttPayload(`${nested},"hash":"outer"}`);
    assert.equal(result.signed, `${nested}}`);
    assert.equal(result.hash, 'outer');
    assert.equal(result.accessKey, undefined);
  });

  it('when a string contains "hash": or escaped quotes then it is not touched', () => {
    const cases = [
      '{"msg":"\\"hash\\":\\"x\\", \\"access_key\\":\\"y\\""',
      '{"path":"C:\\\\","note":"hash"',
      '{"q":"}{][,:","hash\\"":"not the member"',
      '{"u":"caf\\u00e9 café ✓ 😀"',
    ];
    for (const prefix of cases) {
      assert.equal(stripped(`${prefix},"hash":"h","access_key":"k"}`), `${prefix}}`, prefix);
      assert.equal(stripped(`{"hash":"h",${prefix.slice(1)}}`), `${prefix}}`, prefix);
    }
  });

  it('when a member name is written with escapes then it counts as that member', () => {
    const result = signedTextOfMqttPayload('{"a":1,"h\\u0061sh":"h","access\\u005fkey":"k"}');
    assert.deepEqual(result, { signed: '{"a":1}', hash: 'h', accessKey: 'k', unreadable: false });
  });

  it('when hash or access_key is not a string then it is removed, not reported, and marked unreadable', () => {
    assert.deepEqual(signedTextOfMqttPayload('{"a":1,"hash":123,"access_key":null}'), {
      signed: '{"a":1}',
      hash: undefined,
      accessKey: undefined,
      unreadable: true,
    });
    assert.equal(signedTextOfMqttPayload('{"a":1,"hash":"h","access_key":7}').unreadable, true);
    assert.equal(signedTextOfMqttPayload('{"a":1,"hash":"h","access_key":"k"}').unreadable, false);
    assert.equal(signedTextOfMqttPayload('{"a":1}').unreadable, false);
  });

  it('when a member appears twice at top level then both go and the message cannot be verified', () => {
    assert.deepEqual(signedTextOfMqttPayload('{"hash":"h1","a":1,"hash":"h2","access_key":"k"}'), {
      signed: '{"a":1}',
      hash: undefined,
      accessKey: undefined,
      unreadable: true,
    });
    assert.equal(
      signedTextOfMqttPayload('{"a":1,"aliot_protocol_version":"1","aliot_protocol_version":"2"}').unreadable,
      true,
    );
  });

  it('when the text is not one JSON object then it comes back unchanged without a hash', () => {
    for (const raw of [
      '',
      '   ',
      'not json',
      '[{"hash":"h"}]',
      '"hash"',
      '{"a":1',
      '{"a":1,}',
      '{"a":1} {"hash":"h"}',
      '{"hash":"h" "a":1}',
      '{"a":1,"hash":"h}',
      '{"a":tru,"hash":"h"}',
      '{"a":[1,2},"hash":"h"}',
      '{"a":"line\nbreak","hash":"h"}',
      '{a:1,"hash":"h"}',
      '{"a":["x',
      '{"a":{"b":[1,2',
      '{"\\q":1,"hash":"h"}',
      '{"abc',
      '{"a" 1,"hash":"h"}',
    ]) {
      assert.deepEqual(
        signedTextOfMqttPayload(raw),
        { signed: raw, hash: undefined, accessKey: undefined, unreadable: false },
        raw,
      );
    }
  });

  it('when members are inserted anywhere into any serialisation then stripping gives the text without them', () => {
    const envelope = new Set(['hash', 'access_key', 'aliot_protocol_version']);
    const style = fc.record({
      item: fc.constantFrom(',', ', ', ' , ', ',\n  ', '\n,\t'),
      key: fc.constantFrom(':', ': ', ' :', ' : ', ':\t'),
      lead: fc.constantFrom('', ' ', '\n  '),
      trail: fc.constantFrom('', ' ', '\n'),
      outer: fc.constantFrom('', ' ', '\n'),
    });
    type Style = { item: string; key: string; lead: string; trail: string; outer: string };
    const serialise = (v: unknown, s: Style): string => {
      if (Array.isArray(v)) return `[${v.map((x) => serialise(x, s)).join(s.item)}]`;
      if (v !== null && typeof v === 'object') {
        const body = Object.entries(v).map(([k, x]) => JSON.stringify(k) + s.key + serialise(x, s));
        return `{${body.join(s.item)}}`;
      }
      return JSON.stringify(v);
    };
    const top = (entries: Array<[string, string]>, s: Style) =>
      `${s.outer}{${s.lead}${entries.map(([k, raw]) => JSON.stringify(k) + s.key + raw).join(s.item)}${s.trail}}${s.outer}`;

    const value = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.dictionary(
        fc.constantFrom('hash', 'access_key', 'aliot_protocol_version', 'x'),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      fc.constantFrom('"hash":"x"', '\\', '{"hash":', 'caf\u00e9 \u2028 😀'),
    );
    const entries = fc.uniqueArray(
      fc.tuple(
        fc.string({ maxLength: 12 }).filter((k) => !envelope.has(k)),
        value,
      ),
      { selector: (e) => e[0], minLength: 1, maxLength: 8 },
    );
    const members = fc.tuple(
      fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex')),
      fc.stringMatching(/^[a-z0-9]{40}$/),
      fc.constantFrom('2.0', '2', '"2.0"'),
      fc.tuple(fc.nat(), fc.nat(), fc.nat()),
    );

    fc.assert(
      fc.property(entries, members, style, (plain, [hash, accessKey, version, at], s) => {
        const kept: Array<[string, string]> = plain.map(([k, v]) => [k, serialise(v, s)]);
        const all = [...kept];
        const added: Array<[string, string]> = [
          ['hash', JSON.stringify(hash)],
          ['access_key', JSON.stringify(accessKey)],
          ['aliot_protocol_version', version],
        ];
        added.forEach((member, i) => {
          all.splice(at[i]! % (all.length + 1), 0, member);
        });
        const result = signedTextOfMqttPayload(top(all, s));
        assert.equal(result.signed, top(kept, s));
        assert.equal(result.hash, hash);
        assert.equal(result.accessKey, accessKey);
      }),
      { numRuns: 500 },
    );
  });
  it('when the SDKs put their members last then the hash is found from the end, as the full read finds it', () => {
    for (const { what, signed, hash } of PYTHON_MQTT) {
      // The bulk's first event carries the members of its earlier send: the payload must be read.
      const expected = what === 'bulk event' ? undefined : { hash };
      assert.deepEqual(hashAtEnd(Buffer.from(pythonPublished(signed, hash))), expected, what);
    }
    const go = '{"data":{"pressure":42},"device_key":"","thing_key":"614a5ed34c","timestamp":1700000000123}';
    assert.deepEqual(hashAtEnd(Buffer.from(`${go.slice(0, -1)}, "access_key" : "${AK}",\n"hash": "h" }\n`)), {
      hash: 'h',
    });
    assert.deepEqual(hashAtEnd(Buffer.from('{"hash":"h","access_key":"k","aliot_protocol_version":2.0}')), {
      hash: 'h',
    });
    assert.deepEqual(hashAtEnd(Buffer.from('{"a":1,"hash":123}')), { hash: undefined });
    assert.deepEqual(hashAtEnd(Buffer.from('{"a":1,"hash":{"access_key":"k"}}')), { hash: undefined });
    assert.deepEqual(hashAtEnd(Buffer.from('{"a":1}')), { hash: undefined });
  });

  it('when the members are not last, are nested, repeated or escaped then the end does not answer', () => {
    for (const raw of [
      '{"hash":"h","a":1}',
      '{"access_key":"k","a":1,"hash":"h"}',
      '{"a":{"b":1,"hash":"h"}}',
      '{"a":[1,{"hash":"h"}]}',
      '{"data":{"hash":"inner"},"hash":"outer"}',
      '{"hash":"h1","a":1,"hash":"h2"}',
      '{"a":1,"hash":{"access_key":"k"},"hash":"h"}',
      '{"a":1,"h\\u0061sh":"x","hash":"h"}',
      '{"a":"caf\\u00e9","hash":"h"}',
      '{"a":"x\\"hash":"h"}',
      '{"a":1,"hash":"h"} ,',
      '{"a":1,"hash":"h","b":2}',
    ]) {
      assert.equal(hashAtEnd(Buffer.from(raw)), undefined, raw);
    }
  });

  it('when members are inserted anywhere into any JSON object then the hash from the end, if any, is the full read one', () => {
    // Members of any name, then (as the SDKs send) some envelope members, in any order.
    const name = fc.oneof({ arbitrary: fc.string({ maxLength: 8 }), weight: 6 }, fc.constantFrom(...envelope));
    const body = fc.array(fc.tuple(name, value), { maxLength: 8 });
    const hex = fc.stringMatching(/^[0-9a-f]{64}$/);
    const envelopeValue = fc.oneof({ arbitrary: hex, weight: 4 }, value);
    const last = fc.uniqueArray(fc.tuple(fc.constantFrom(...envelope), envelopeValue), { selector: (m) => m[0] });
    let found = 0;
    fc.assert(
      fc.property(body, last, spacing, (members, envelopeMembers, [item, key]) => {
        const all = [...members, ...envelopeMembers];
        const text = `{${all.map(([k, v]) => `${JSON.stringify(k)}${key}:${key}${JSON.stringify(v)}`).join(`,${item}`)}}`;
        const fromEnd = hashAtEnd(Buffer.from(text));
        if (fromEnd === undefined) return;
        if (fromEnd.hash !== undefined) found++;
        assert.equal(fromEnd.hash, signedTextOfMqttPayload(text).hash, text);
      }),
      { numRuns: 2000 },
    );
    assert.ok(found > 200, `the end found ${found} hashes in 2000 payloads`);
  });
  it('when a payload is any bytes or text, envelope names mixed in, then looking for the hash at its end never fails', () => {
    const fragment = fc.constantFrom(
      '"hash"',
      '"access_key"',
      '"aliot_protocol_version"',
      ':',
      ',',
      '{',
      '}',
      '"',
      '\\u',
      ' ',
    );
    const text = fc.array(fc.oneof(fragment, fc.string({ unit: 'binary', maxLength: 6 })), { maxLength: 20 });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }),
          text.map((parts) => Buffer.from(parts.join(''))),
        ),
        (bytes) => {
          const found = hashAtEnd(Buffer.from(bytes));
          assert.ok(found === undefined || found.hash === undefined || typeof found.hash === 'string');
        },
      ),
      { numRuns: 2000 },
    );
  });
  it("when any text is read as the envelope last then the answer, if any, is the full read one, and the SDKs' payloads are answered", () => {
    // Names of any kind (escaped spellings of the envelope's among them), envelope members anywhere,
    // twice, of any value; texts cut short, with junk around them, or no object at all.
    const name = fc.oneof(
      { arbitrary: fc.string({ maxLength: 8 }), weight: 5 },
      fc.constantFrom(...envelope, 'h\\u0061sh', 'access\\u005fkey', 'x\\q'),
    );
    const member = fc.tuple(name, value);
    const text = fc.oneof(
      { arbitrary: fc.tuple(fc.array(member, { maxLength: 8 }), spacing), weight: 8 },
      fc.tuple(fc.constant([] as [string, unknown][]), spacing),
    );
    const damage = fc.oneof(
      { arbitrary: fc.constant((t: string) => t), weight: 6 },
      fc.nat().map((n) => (t: string) => t.slice(0, n % (t.length + 1))),
      fc.constantFrom(
        (t: string) => ` ${t}\n`,
        (t: string) => `${t},`,
        (t: string) => `[${t}]`,
        (t: string) => t.replace(':', ''),
      ),
    );
    let answered = 0;
    fc.assert(
      fc.property(text, damage, ([members, [item, key]], hurt) => {
        const written = `{${members
          .map(([k, v]) => `${k.includes('\\') ? `"${k}"` : JSON.stringify(k)}${key}:${key}${JSON.stringify(v)}`)
          .join(`,${item}`)}}`;
        const raw = hurt(written);
        const tail = signedTextWithEnvelopeLast(raw);
        if (tail === undefined) return;
        answered++;
        assert.deepEqual(tail, signedTextOfMembers(raw), raw);
      }),
      { numRuns: 3000 },
    );
    assert.ok(answered > 1000, `the tail answered ${answered} of 3000 texts`);
    for (const { what, signed, hash } of PYTHON_MQTT) {
      const raw = pythonPublished(signed, hash);
      // The bulk's first event carries the members of its earlier send: the full read takes it.
      if (what !== 'bulk event') assert.deepEqual(signedTextWithEnvelopeLast(raw), signedTextOfMembers(raw), what);
    }
  });
});
