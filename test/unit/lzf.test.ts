import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decompressLzf, LzfFormatError } from '../../src/devices/lzf.ts';
import { compressLzf } from '../support/lzf-compress.ts';

const MiB = 1024 * 1024;

const isMalformed = (code: string) => (err: unknown) => {
  assert.ok(err instanceof LzfFormatError, `expected LzfFormatError, got ${String(err)}`);
  assert.equal(err.code, code);
  return true;
};

function bytes(...parts: Array<string | number[]>): Buffer {
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
}

// A bulk of 60 events as a C device builds it, and what that device's compressor made of it
// (3000-byte input chunks, two type 1 chunks).
const C_DEVICE_BULK = JSON.stringify({
  events: Array.from({ length: 60 }, (_, i) => ({
    timestamp: 1700000000000 + i * 1000,
    thing_key: '742923439d',
    data: { pressure: 1000 + i, temperature: 20 + (i % 7) },
  })),
});
const C_DEVICE_BULK_LZF = Buffer.from(
  'WlYBAgILuBp7ImV2ZW50cyI6W3sidGltZXN0YW1wIjoxNzDgAQAfLCJ0aGluZ19rZXkiOiI3NDI5MjM0MzlkIiwiZGF0YSIKOnsicHJlc3N1cmUgOSA3IDAGZW1wZXJhdGASBDIwfX0s4A1eoC3gJF4AMeAHXgAx4BBeADKAjOAkXgAy4AdeADLgEF4AM+AqXgAz4AdeADPgEF4ANOAqXgA04AdeADTgEF4ANeAqXgA14AdeADXgEF4ANuAqXgA24AdeADbgEF5CoCAt4STaADcgMOIemAA44Cq9ADjgB17iEZgAOeAqXgA54Ade4hCYQ1XhJxwAMUAw4QQc4hCYADFAXyCM4SN7ADHjCLXiEJgAMeMqtQAx4wi14hCYADHjKrUAMeMIteIQmAAx4yq1ADHjCLXlEDEAMeMqtQAx4wi14hCYADHjKrUAMeMIteIRmOMqtQAx4wi14hGY4yq1ADHjCLXiEZjjKrUAMeMIteIQmEL24ydWADJAMOMEteIQmAAy4yq1ADLjCLXiEJgAMkC+5CYUADLjCLXiEJgAMuMqtQAy4wi14hCYADLjKrUAMuMIteIQmAAy4yq1ADLjCLXiEJgAMuMqtQAy4wi14hGY4yq1ADLjCLXiEZjjKrUAMuMIteIRmOMqtQAy4wi14hCYQpfiJ/cAM0Aw4wS14hCYADPjC7UBMjlaVgEB2AqYHzIzNDM5ZCIsImRhdGEiOnsicHJlc3N1cmUiOjEwMzEsCCJ0ZW1wZXJhdGASDzIzfX0seyJ0aW1lc3RhbXAgJAE3MGAAATMyIAYgLQ9oaW5nX2tleSI6Ijc0Mjky4BReADIgMOAEXgA04BBeADPgKl4AM+AHXgA14BBeADTgKl4ANOAHXgA24BBeADXgKl4ANeAHXgAw4BBeADbgKl4ANuAHXgAx4BBeQeIgLeEk2gA3IDDhBNoAMuAQXgA44Cq9ADjgB17iEZgAOeAqXgA54Ade4hCYQjjhJxwANEAw4QQc4hCYATQx4Cpe4wi14hCYADTjKrUANOMIteIQmAA04yq1ADTjCLXiEJgANEF8IaniI5gANOMIteIQmAA04yq1ADTjCLXiEJgANOMqtQA04wi14hGY4yq1ADTjCLXiEZjjKrUANOMIteIRmOMqtQA04wi14hCYQdniJzkANUAw4wS14hCYADXjKrUANeMIteIQmAA14yq1ADXjCLXiEJgANeMqtQA14wi14hCYADXjKrUANeMIteIQmAA1QdvkJhQANeMIteIQmAA14yq1ADXjCLXiEZjjKrUANeMIteIRmOMqtQA14wi14hGY4yq1ADXjCLUimAFdfQ==',
  'base64',
);

describe('lzf', () => {
  it('when a raw chunk is decompressed then its bytes come back', () => {
    assert.equal(decompressLzf(bytes('ZV', [0, 0, 5], 'hello'), 100).toString(), 'hello');
  });

  it('when a compressed chunk holds an overlapping back reference then the run is repeated', () => {
    // literal "abc", then 6 bytes from distance 3
    const input = bytes('ZV', [1, 0, 6, 0, 9, 2], 'abc', [0x80, 2]);
    assert.equal(decompressLzf(input, 100).toString(), 'abcabcabc');
  });

  it('when a back reference uses the extra length byte then the long run is produced', () => {
    // literal "x", then 7 + 100 + 2 = 109 bytes from distance 1
    const input = bytes('ZV', [1, 0, 5, 0, 110, 0], 'x', [0xe0, 100, 0]);
    assert.equal(decompressLzf(input, 1000).toString(), 'x'.repeat(110));
  });

  it('when raw and compressed chunks follow each other then the outputs are concatenated', () => {
    const input = Buffer.concat([bytes('ZV', [0, 0, 3], 'abc'), bytes('ZV', [1, 0, 4, 0, 4, 0], 'd', [0x20, 0])]);
    assert.equal(decompressLzf(input, 100).toString(), 'abcdddd');
  });

  it('when the input is empty then the output is empty', () => {
    assert.equal(decompressLzf(Buffer.alloc(0), 0).length, 0);
  });

  it('when a stream made by a C device is decompressed then the JSON it compressed comes back', () => {
    assert.equal(decompressLzf(C_DEVICE_BULK_LZF, MiB).toString('utf8'), C_DEVICE_BULK);
  });

  it('when arbitrary bytes are compressed then they decompress to the same bytes', () => {
    const repetitive = fc
      .tuple(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 1000 }))
      .map(([unit, times]) => Buffer.concat(Array.from({ length: times }, () => Buffer.from(unit))));
    const mixed = fc
      .array(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          repetitive.map((b) => b.subarray(0, 5000)),
        ),
        {
          maxLength: 8,
        },
      )
      .map((parts) => Buffer.concat(parts.map((p) => Buffer.from(p))));
    const data = fc.oneof(
      fc.uint8Array({ maxLength: 2000 }).map((a) => Buffer.from(a)),
      repetitive,
      mixed,
    );
    fc.assert(
      fc.property(data, fc.constantFrom(7, 100, 3000, 65535), (input, chunkSize) => {
        const compressed = compressLzf(input, { chunkSize });
        assert.deepEqual(decompressLzf(compressed, input.length), input);
      }),
      { numRuns: 200 },
    );
  });

  it('when the input spans several 64 KiB chunks then every chunk is decoded', () => {
    const text = Buffer.from(
      Array.from({ length: 6000 }, (_, i) => `{"thing_key":"k${i % 13}","data":{"v":${i}}}`).join(','),
    );
    assert.ok(text.length > 3 * 65535);
    const compressed = compressLzf(text);
    assert.ok(compressed.length < text.length / 2);
    assert.deepEqual(decompressLzf(compressed, text.length), text);
    const raw = compressLzf(text, { raw: true });
    assert.equal(raw.length, text.length + 5 * Math.ceil(text.length / 65535));
    assert.deepEqual(decompressLzf(raw, text.length), text);
  });

  it('when the output would exceed maxOutput then it throws before decoding', () => {
    const text = Buffer.from('a'.repeat(70000));
    const compressed = compressLzf(text);
    assert.deepEqual(decompressLzf(compressed, 70000), text);
    assert.throws(() => decompressLzf(compressed, 69999), isMalformed('LZF_TOO_LARGE'));
    assert.throws(() => decompressLzf(bytes('ZV', [0, 0, 5], 'hello'), 4), isMalformed('LZF_TOO_LARGE'));
    // a header claiming 64 KiB is refused from the header alone
    assert.throws(() => decompressLzf(bytes('ZV', [1, 0, 1, 0xff, 0xff, 0]), 1000), isMalformed('LZF_TOO_LARGE'));
  });

  it('when maxOutput is not a non-negative integer then it is a programming error', () => {
    assert.throws(() => decompressLzf(Buffer.alloc(0), -1), RangeError);
    assert.throws(() => decompressLzf(Buffer.alloc(0), Number.NaN), RangeError);
  });

  it('when the stream is cut anywhere inside a chunk then it throws', () => {
    for (const stream of [C_DEVICE_BULK_LZF, compressLzf(Buffer.from('hello hello hello hello'), { raw: true })]) {
      const boundaries = chunkBoundaries(stream);
      for (let cut = 1; cut < stream.length; cut++) {
        if (boundaries.has(cut)) continue;
        assert.throws(() => decompressLzf(stream.subarray(0, cut), MiB), isMalformed('LZF_MALFORMED'), `cut at ${cut}`);
      }
    }
  });

  it('when headers or data are malformed then it throws', () => {
    const cases: Array<[string, Buffer]> = [
      ['bad signature', bytes('ZX', [0, 0, 1], 'a')],
      ['unknown chunk type', bytes('ZV', [2, 0, 1], 'a')],
      ['garbage after a chunk', Buffer.concat([bytes('ZV', [0, 0, 1], 'a'), bytes('junk')])],
      ['reference before the chunk start', bytes('ZV', [1, 0, 4, 0, 4, 0], 'a', [0x20, 5])],
      [
        'reference into the previous chunk',
        Buffer.concat([bytes('ZV', [0, 0, 3], 'abc'), bytes('ZV', [1, 0, 2, 0, 3, 0x20, 0])]),
      ],
      ['decodes short of its stated length', bytes('ZV', [1, 0, 2, 0, 5, 0], 'a')],
      ['decodes past its stated length', bytes('ZV', [1, 0, 4, 0, 2, 2], 'abc')],
      ['reference past its stated length', bytes('ZV', [1, 0, 4, 0, 3, 0], 'a', [0x20, 0])],
      ['literal run past the chunk end', bytes('ZV', [1, 0, 2, 0, 5, 4], 'a')],
      ['reference missing its distance byte', bytes('ZV', [1, 0, 3, 0, 4, 0], 'a', [0x20])],
      ['long reference missing its length byte', bytes('ZV', [1, 0, 3, 0, 20, 0], 'a', [0xe0])],
    ];
    for (const [name, input] of cases) {
      assert.throws(() => decompressLzf(input, MiB), isMalformed('LZF_MALFORMED'), name);
    }
  });

  it('when random or corrupted bytes are decompressed then it returns a bounded buffer or throws LzfFormatError', () => {
    const valid = compressLzf(Buffer.from(C_DEVICE_BULK), { chunkSize: 3000 });
    const corrupted = fc
      .array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 })
      .map((edits) => {
        const copy = Buffer.from(valid);
        for (const [at, value] of edits) copy[at] = value;
        return copy;
      });
    const random = fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.concat([Buffer.from('ZV'), Buffer.from(a)]));
    fc.assert(
      fc.property(fc.oneof(corrupted, random), (input) => {
        try {
          const out = decompressLzf(input, 8000);
          assert.ok(out.length <= 8000);
        } catch (err) {
          assert.ok(err instanceof LzfFormatError, String(err));
        }
      }),
      { numRuns: 500 },
    );
  });
});

function chunkBoundaries(stream: Buffer): Set<number> {
  const ends = new Set<number>();
  let pos = 0;
  while (pos < stream.length) {
    pos += stream[pos + 2] === 1 ? 7 + stream.readUInt16BE(pos + 3) : 5 + stream.readUInt16BE(pos + 3);
    ends.add(pos);
  }
  return ends;
}
