// A small LZF compressor producing the chunked `ZV` stream devices send, so tests can make inputs for
// decompressLzf. Greedy matching with a hash table of three-byte prefixes; correctness over ratio.

export interface LzfCompressOptions {
  /** Bytes of input per chunk, at most 65535 (devices use 3000 or 65535). */
  chunkSize?: number;
  /** Write every chunk uncompressed (type 0). */
  raw?: boolean;
}

const MAX_CHUNK = 0xffff;
const MAX_LITERAL = 32;
const MAX_DISTANCE = 8192;
const MAX_MATCH = 264; // 7 + 255 + 2
const HASH_BITS = 14;

export function compressLzf(input: Buffer, options: LzfCompressOptions = {}): Buffer {
  const chunkSize = options.chunkSize ?? MAX_CHUNK;
  if (!Number.isInteger(chunkSize) || chunkSize < 1 || chunkSize > MAX_CHUNK) {
    throw new RangeError(`chunkSize must be 1..${MAX_CHUNK}`);
  }
  const parts: Buffer[] = [];
  for (let start = 0; start < input.length; start += chunkSize) {
    const chunk = input.subarray(start, Math.min(start + chunkSize, input.length));
    const packed = options.raw ? undefined : compressBlock(chunk);
    if (packed !== undefined && packed.length < chunk.length) {
      const header = Buffer.from([0x5a, 0x56, 1, 0, 0, 0, 0]);
      header.writeUInt16BE(packed.length, 3);
      header.writeUInt16BE(chunk.length, 5);
      parts.push(header, packed);
    } else {
      const header = Buffer.from([0x5a, 0x56, 0, 0, 0]);
      header.writeUInt16BE(chunk.length, 3);
      parts.push(header, chunk);
    }
  }
  return Buffer.concat(parts);
}

/** Plain LZF for one chunk (no header). */
export function compressBlock(data: Buffer): Buffer {
  const out: number[] = [];
  // Small chunks get small tables, so compressing many tiny chunks stays cheap.
  const bits = Math.min(HASH_BITS, Math.max(4, Math.ceil(Math.log2(data.length + 1))));
  const table = new Int32Array(1 << bits).fill(-1);
  let literals: number[] = [];
  const flushLiterals = () => {
    if (literals.length === 0) return;
    out.push(literals.length - 1, ...literals);
    literals = [];
  };
  const hashAt = (i: number) =>
    Math.imul((data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!, 0x9e3779b1) >>> (32 - bits);

  let ip = 0;
  while (ip < data.length) {
    if (ip + 2 < data.length) {
      const h = hashAt(ip);
      const ref = table[h]!;
      table[h] = ip;
      const distance = ip - ref - 1;
      if (ref >= 0 && distance < MAX_DISTANCE && data[ref] === data[ip] && data[ref + 1] === data[ip + 1]) {
        let length = 0;
        const limit = Math.min(MAX_MATCH, data.length - ip);
        while (length < limit && data[ref + length] === data[ip + length]) length++;
        if (length >= 3) {
          flushLiterals();
          const field = length - 2;
          if (field < 7) {
            out.push((field << 5) | (distance >> 8), distance & 0xff);
          } else {
            out.push((7 << 5) | (distance >> 8), field - 7, distance & 0xff);
          }
          for (let k = 1; k < length && ip + k + 2 < data.length; k++) table[hashAt(ip + k)] = ip + k;
          ip += length;
          continue;
        }
      }
    }
    literals.push(data[ip]!);
    if (literals.length === MAX_LITERAL) flushLiterals();
    ip++;
  }
  flushLiterals();
  return Buffer.from(out);
}
