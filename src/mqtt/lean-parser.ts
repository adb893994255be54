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
}

/** Gives a parser that holds no bytes yet a plain BufferList in place of its stream; answers whether it did. */
export function useLeanBuffer(parser: PacketParser): boolean {
  const list = parser._list;
  const Plain = list.constructor.BufferList;
  if (Plain === undefined || list.constructor === Plain || list.length !== 0) return false;
  parser._list = new Plain() as PacketParser['_list'];
  return true;
}
