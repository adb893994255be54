/**
 * mqtt-packet's parser, as each connection gets it, made lighter and bounded: a lighter buffer
 * (`useLeanBuffer`), a longest packet (`limitPacketLength`) and a budget for the bytes all parsers
 * hold of packets not yet complete (`PartialPackets`; docs/devices.md, "Overload").
 *
 * The lighter buffer: mqtt-packet's parser keeps the
 * bytes of a packet not yet complete in a `BufferListStream` of the bl package: a duplex stream, with
 * its two stream states, their arrays and bound callbacks, of which the parser uses only the list's
 * own methods (append, consume, the readUInt* and slice). The package's plain `BufferList` has all of
 * them and none of the rest: about 0.9 KB less of heap for every connection held
 * (docs/benchmarks-history.md, "fleet, 2026-11-25 evening").
 *
 * Only the list the parser starts with is replaced: after a malformed packet the parser makes itself
 * a new stream, and the endpoint closes that connection anyway.
 */

interface BufferListLike {
  length: number;
  append(buf: Buffer): unknown;
}

/** mqtt-packet's parse: appends the bytes read and parses every packet they complete. */
type Parse = (buf: Buffer) => number;

/** mqtt-packet's Parser as far as this needs it: the list, whose constructor carries the plain class. */
export interface PacketParser {
  _list: BufferListLike & { constructor: { BufferList?: new () => BufferListLike } };
  /** The packet being read; its length (the remaining length of its header) once that is read, else -1. */
  packet: { length: number };
  /** Reads the remaining length of a packet's header; false while its bytes have not all arrived. */
  _parseLength(): boolean;
  /** Ends the parse with an error, which the endpoint answers by closing the connection. */
  _emitError(error: Error): void;
  parse: Parse;
}

/** Whether the parser holds bytes of a packet begun and not yet complete. */
export function holdsPartialPacket(parser: PacketParser): boolean {
  return parser._list.length > 0;
}

/** Gives a parser that holds no bytes yet a plain BufferList in place of its stream; answers whether it did. */
export function useLeanBuffer(parser: PacketParser): boolean {
  const list = parser._list;
  const Plain = list.constructor.BufferList;
  if (Plain === undefined || list.constructor === Plain || list.length !== 0) return false;
  parser._list = new Plain() as PacketParser['_list'];
  return true;
}

/**
 * Refuses packets longer than `limit()` bytes as soon as their header says how long they are: the
 * parser would otherwise keep every byte of a packet until the last arrives, up to the 256 MiB the
 * protocol allows, so one connection could fill the server's memory. The connection is closed,
 * as for any malformed packet, and `refused` is told the length and the limit it passed.
 */
export function limitPacketLength(
  parser: PacketParser,
  limit: () => number,
  refused: (length: number, limit: number) => void,
): void {
  const parseLength = parser._parseLength;
  parser._parseLength = function limited(this: PacketParser) {
    const read = parseLength.call(this);
    const max = limit();
    if (read && this.packet.length > max) {
      refused(this.packet.length, max);
      this._emitError(new Error(`packet of ${this.packet.length} bytes, over the limit of ${max}`));
    }
    return read;
  };
}

/**
 * The bytes all connections' parsers hold of packets not yet complete, within a budget. A packet's
 * bytes are kept until its last one arrives, so devices sending large packets slowly, or connections
 * that never finish one, would otherwise hold as much as the packet limit times the connections. A
 * connection whose bytes take the total past the budget, while other connections hold some too, is
 * refused (its connection closed); one alone may hold a packet of any length the packet limit allows.
 */
export class PartialPackets {
  /** Bytes held now. */
  held = 0;

  constructor(private readonly budget: number) {}

  /**
   * Counts what `parser` holds after each parse; `refused` is called when it takes the total past
   * the budget. Answers the function that stops counting it (its connection has closed).
   */
  watch(parser: PacketParser, refused: (held: number) => void): () => void {
    let counted = 0;
    const parse = parser.parse;
    parser.parse = (buf: Buffer) => {
      const result = parse.call(parser, buf);
      const now = parser._list.length;
      this.held += now - counted;
      counted = now;
      if (now > 0 && this.held > this.budget && this.held > now) {
        refused(this.held);
        parser._emitError(new Error(`unfinished packets of ${this.held} bytes, over the limit of ${this.budget}`));
      }
      return result;
    };
    return () => {
      this.held -= counted;
      counted = 0;
    };
  }
}
