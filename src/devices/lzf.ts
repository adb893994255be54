// LZF-compressed device payloads (`X-Compressed: LZF` over HTTP, the `lzf` event topic over MQTT).
//
// The stream is a sequence of chunks, each compressed on its own:
//   'Z' 'V' 0x00 <len:u16be> <len raw bytes>
//   'Z' 'V' 0x01 <compressed len:u16be> <uncompressed len:u16be> <compressed bytes>
// Compressed bytes are plain LZF: a control byte below 32 starts a literal run of control+1 bytes; any
// other control byte is a back reference of length (control >> 5) + 2 (a length field of 7 takes one more
// length byte) at distance ((control & 0x1f) << 8 | next byte) + 1 behind the output position.

export type LzfErrorCode = 'LZF_MALFORMED' | 'LZF_TOO_LARGE';

/** The input is not a well-formed chunked LZF stream, or it would decompress to more than allowed. */
export class LzfFormatError extends Error {
  override readonly name = 'LzfFormatError';
  readonly code: LzfErrorCode;

  constructor(message: string, code: LzfErrorCode = 'LZF_MALFORMED') {
    super(message);
    this.code = code;
  }
}

const RAW = 0;
const COMPRESSED = 1;
const Z = 0x5a;
const V = 0x56;

interface Chunk {
  type: number;
  dataStart: number;
  dataEnd: number;
  outputLength: number;
}

/**
 * Decompresses a chunked LZF stream. Throws `LzfFormatError` for anything malformed or truncated, and
 * (with code `LZF_TOO_LARGE`) when the output would exceed `maxOutput` bytes; the size is known from the
 * chunk headers, so nothing that large is ever allocated. An empty input is an empty stream.
 */
export function decompressLzf(input: Buffer, maxOutput: number): Buffer {
  if (!Number.isSafeInteger(maxOutput) || maxOutput < 0) {
    throw new RangeError(`maxOutput must be a non-negative integer, got ${maxOutput}`);
  }
  const chunks: Chunk[] = [];
  let total = 0;
  let pos = 0;
  while (pos < input.length) {
    if (input.length - pos < 3) throw new LzfFormatError(`truncated chunk header at byte ${pos}`);
    if (input[pos] !== Z || input[pos + 1] !== V) throw new LzfFormatError(`no chunk signature at byte ${pos}`);
    const type = input[pos + 2]!;
    let headerLength: number;
    let dataLength: number;
    let outputLength: number;
    if (type === RAW) {
      headerLength = 5;
      if (input.length - pos < headerLength) throw new LzfFormatError(`truncated chunk header at byte ${pos}`);
      dataLength = input.readUInt16BE(pos + 3);
      outputLength = dataLength;
    } else if (type === COMPRESSED) {
      headerLength = 7;
      if (input.length - pos < headerLength) throw new LzfFormatError(`truncated chunk header at byte ${pos}`);
      dataLength = input.readUInt16BE(pos + 3);
      outputLength = input.readUInt16BE(pos + 5);
    } else {
      throw new LzfFormatError(`unknown chunk type ${type} at byte ${pos}`);
    }
    const dataStart = pos + headerLength;
    const dataEnd = dataStart + dataLength;
    if (dataEnd > input.length) throw new LzfFormatError(`truncated chunk data at byte ${pos}`);
    total += outputLength;
    if (total > maxOutput) {
      throw new LzfFormatError(`decompressed size exceeds the limit of ${maxOutput} bytes`, 'LZF_TOO_LARGE');
    }
    chunks.push({ type, dataStart, dataEnd, outputLength });
    pos = dataEnd;
  }

  const output = Buffer.allocUnsafe(total);
  let outPos = 0;
  for (const chunk of chunks) {
    if (chunk.type === RAW) {
      input.copy(output, outPos, chunk.dataStart, chunk.dataEnd);
    } else {
      decodeBlock(input, chunk.dataStart, chunk.dataEnd, output, outPos, outPos + chunk.outputLength);
    }
    outPos += chunk.outputLength;
  }
  return output;
}

/** Decodes one compressed chunk into output[outStart, outEnd), which it must fill exactly. */
function decodeBlock(input: Buffer, start: number, end: number, output: Buffer, outStart: number, outEnd: number) {
  let ip = start;
  let op = outStart;
  while (ip < end) {
    const control = input[ip++]!;
    if (control < 32) {
      const length = control + 1;
      if (ip + length > end) throw new LzfFormatError('literal run runs past the end of its chunk');
      if (op + length > outEnd) throw new LzfFormatError('chunk decodes to more than its stated length');
      input.copy(output, op, ip, ip + length);
      ip += length;
      op += length;
      continue;
    }
    let length = control >> 5;
    if (length === 7) {
      if (ip >= end) throw new LzfFormatError('back reference runs past the end of its chunk');
      length += input[ip++]!;
    }
    if (ip >= end) throw new LzfFormatError('back reference runs past the end of its chunk');
    length += 2;
    const ref = op - ((control & 0x1f) << 8) - input[ip++]! - 1;
    // Chunks are compressed independently, so a reference never reaches into an earlier chunk.
    if (ref < outStart) throw new LzfFormatError('back reference before the start of its chunk');
    if (op + length > outEnd) throw new LzfFormatError('chunk decodes to more than its stated length');
    if (ref + length <= op) {
      output.copy(output, op, ref, ref + length);
      op += length;
    } else {
      // Overlapping copy: a short distance repeats the bytes being written.
      for (let k = 0; k < length; k++) output[op + k] = output[ref + k]!;
      op += length;
    }
  }
  if (op !== outEnd) throw new LzfFormatError('chunk decodes to less than its stated length');
}
