/**
 * A lighter buffer for the packet parser aedes gives each connection. mqtt-packet's parser keeps the
 * bytes of a packet not yet complete in a `BufferListStream` of the bl package: a duplex stream, with
 * its two stream states, their arrays and bound callbacks, of which the parser uses only the list's
 * own methods (append, consume, the readUInt* and slice). The package's plain `BufferList` has all of
 * them and none of the rest: about 0.9 KB less on the broker thread's heap for every connection held
 * (docs/benchmarks-history.md, "fleet, 2026-11-25 evening").
 *
 * Only the list the parser starts with is replaced: after a malformed packet the parser makes itself
 * a new stream, and aedes closes that connection anyway.
 */

interface BufferListLike {
  length: number;
  append(buf: Buffer): unknown;
}

/** mqtt-packet's Parser as far as this needs it: the list, whose constructor carries the plain class. */
export interface PacketParser {
  _list: BufferListLike & { constructor: { BufferList?: new () => BufferListLike } };
  /** The packet being read; its length (the remaining length of its header) once that is read, else -1. */
  packet: { length: number };
  /** Reads the remaining length of a packet's header; false while its bytes have not all arrived. */
  _parseLength(): boolean;
  /** Ends the parse with an error, which aedes answers by closing the connection. */
  _emitError(error: Error): void;
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
 * protocol allows, so one connection could fill the broker thread's memory. The connection is closed,
 * as for any malformed packet, and `refused` is told the length.
 */
export function limitPacketLength(parser: PacketParser, limit: () => number, refused: (length: number) => void): void {
  const parseLength = parser._parseLength;
  parser._parseLength = function limited(this: PacketParser) {
    const read = parseLength.call(this);
    if (read && this.packet.length > limit()) {
      refused(this.packet.length);
      this._emitError(new Error(`packet of ${this.packet.length} bytes, over the limit of ${limit()}`));
    }
    return read;
  };
}
