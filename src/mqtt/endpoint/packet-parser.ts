/**
 * mqtt-packet's parser, as each connection has it (`DeviceParser`): lighter, and bounded by a longest
 * packet and a budget for the bytes all parsers hold of packets not yet complete (`PartialPackets`;
 * docs/devices.md, "Overload").
 *
 * A connection holds its parser as long as it is open, so what a parser keeps is kept once for every
 * device connected (docs/benchmarks-history.md, "fleet, 2026-11-25 evening" and "Memory of an idle
 * connection"):
 * - mqtt-packet keeps the bytes of a packet not yet complete in a `BufferListStream` of the bl
 *   package: a duplex stream, with its two stream states, their arrays and bound callbacks, of which
 *   the parser uses only the list's own methods (append, consume, the readUInt* and slice). The
 *   package's plain `BufferList` has all of them and none of the rest. Only the list the parser starts
 *   with is replaced: after a malformed packet the parser makes itself a new stream, and the endpoint
 *   closes that connection anyway.
 * - mqtt-packet keeps the whole CONNECT packet (client id, user name, password, will) as its settings,
 *   of which it reads only the protocol version afterwards; `opened` keeps only that. It also makes
 *   each parser its own array of its steps, and an EventEmitter's table of listeners, which none
 *   are added to here.
 * - The bounds and the packets' way to the connection are methods of the class, with the endpoint's
 *   limits in one object all parsers share, rather than functions made for each parser.
 */
import { createRequire } from 'node:module';
import type { Packet } from 'mqtt-packet';

interface BufferListLike {
  length: number;
  append(buf: Buffer): unknown;
}

/** mqtt-packet's Parser as far as this needs it. */
interface MqttParser {
  /** The bytes of the packet being read that are not consumed yet. */
  _list: BufferListLike & { constructor: { BufferList?: new () => BufferListLike } };
  /**
   * Which of its steps (`_states`) comes next: 0 at the start of a packet. Past its fixed header it
   * has consumed those bytes, so its list may be empty in the middle of a packet.
   */
  _stateCounter: number;
  /** The packet being read; its length (the remaining length of its header) once that is read, else -1. */
  packet: { length: number };
  /** What the parser knows of its connection: the CONNECT packet, once it has read one. */
  settings: { readonly protocolVersion?: number };
  /** The names of its steps, in order: the same for every parser. */
  _states: readonly string[];
  /** EventEmitter's listeners: none here (`emit`). */
  _events: object | undefined;
  /** Sets the parser up (its settings, states and an empty list). */
  parser(options?: object): unknown;
  /** Appends the bytes read and parses every packet they complete; answers the bytes left over. */
  parse(buf: Buffer): number;
  /** Reads the remaining length of a packet's header; false while its bytes have not all arrived. */
  _parseLength(): boolean;
  /** Ends the parse with an error (emitted as `error`). */
  _emitError(error: Error): void;
  /** Where in the packet being read the parse is (of its bytes after the fixed header). */
  _pos: number;
  /** Reads a property's value of a type (`byte`, `int16`, `string`...) at `_pos`. */
  _parseByType(type: string): unknown;
  /** Reads one byte at `_pos`; undefined past the bytes held. */
  _parseByte(): number | undefined;
  /** Reads a DISCONNECT's fields (`packet`). */
  _parseDisconnect(): unknown;
}

const require = createRequire(import.meta.url);
/** mqtt-packet's Parser class: the package's `parser()` makes one of these. */
const Parser = require('mqtt-packet/parser.js') as new () => MqttParser;
/** The reason codes of an MQTT 5 DISCONNECT, by code. */
const DISCONNECT_CODES = (require('mqtt-packet/constants.js') as { MQTT5_DISCONNECT_CODES: Record<number, string> })
  .MQTT5_DISCONNECT_CODES;
/** mqtt-packet's steps, of which it makes each parser a new array: one for all. */
const STEPS: readonly string[] = Object.freeze((new Parser().parser() as MqttParser)._states);
/** The settings a parser keeps once its connection is open, one object for each protocol version. */
const SETTINGS = new Map([3, 4, 5].map((version) => [version, Object.freeze({ protocolVersion: version })]));

/** A packet longer than the connection may send (MQTT 5's DISCONNECT says "packet too large"). */
export class PacketTooLargeError extends Error {
  override readonly name = 'PacketTooLargeError';
}

/** The connection a parser reads for: it is handed each packet, and told when the bytes are not MQTT. */
export interface PacketReader {
  parsed(packet: Packet): void;
  /** The bytes are no packet the protocol allows (`error` says why), or pass a bound: the connection is to close. */
  malformed(error: Error): void;
}

/** The endpoint's bounds, one object for all its parsers. */
export interface PacketBounds {
  /** The longest packet a connection may send once open, and before (its CONNECT), bytes. */
  readonly maxPacketBytes: number;
  readonly maxConnectPacketBytes: number;
  readonly partial: PartialPackets;
  /** A packet was refused for its length. */
  refusedLength(length: number, limit: number): void;
  /** A connection took the bytes held of unfinished packets past the budget. */
  refusedHeld(held: number): void;
}

export class DeviceParser extends Parser {
  /** The longest packet allowed now. */
  private maxBytes: number;
  /** The bytes of unfinished packets it holds, as counted in the budget. */
  private counted = 0;
  /** Bytes its transport holds of a message not yet complete (a WebSocket's), counted with its own. */
  private transportHeld = 0;
  /** Whether its connection is open: the packets a device sends most are read without mqtt-packet (parseLean). */
  private lean = false;

  constructor(
    private readonly reader: PacketReader,
    private readonly bounds: PacketBounds,
  ) {
    super();
    this.parser();
    useLeanBuffer(this);
    this._states = STEPS;
    // Packets go to the reader (`emit`): an EventEmitter's table of listeners is made if one is added.
    this._events = undefined;
    this.maxBytes = bounds.maxConnectPacketBytes;
  }

  /**
   * Its connection is open: packets may be as long as the endpoint allows, and the CONNECT is let go.
   * Of it mqtt-packet reads the protocol version, and a bridge's flag, which only adds subscription
   * options the endpoint does not read.
   */
  opened(): void {
    this.lean = true;
    this.maxBytes = this.bounds.maxPacketBytes;
    const version = this.settings.protocolVersion;
    this.settings = SETTINGS.get(version ?? 0) ?? { protocolVersion: version };
  }

  /**
   * Reads what a device sends most once it is signed in (its messages, its acknowledgements of their
   * answers, its pings) straight from the bytes read, and the rest with mqtt-packet; counts what it
   * holds after each parse, and a connection that takes the total past the budget is refused.
   */
  override parse(buf: Buffer): number {
    // Only at the start of a packet: mqtt-packet, having read a packet's fixed header, holds none of its
    // bytes until the rest arrives, and those are no packet of their own.
    const plain = this.lean && this._list.length === 0 && this._stateCounter === 0 ? this.parseLean(buf) : 0;
    const result = plain === buf.length ? 0 : super.parse(plain === 0 ? buf : buf.subarray(plain));
    this.count();
    return result;
  }

  /**
   * Reads the whole PUBLISH, PUBACK and PINGREQ packets at the start of `buf` as mqtt-packet would,
   * without its buffer list, its steps and its `debug` calls (a third of what an event's two packets
   * cost the server thread at a steady load: docs/benchmarks-history.md). It stops at the first packet
   * that is cut by the end of `buf`, of another type, longer than allowed, or in any way unusual (an
   * MQTT 5 PUBLISH with properties, a topic longer than its packet, QoS 3...), and answers where: from
   * there mqtt-packet reads, and refuses what it refuses.
   */
  private parseLean(buf: Buffer): number {
    const properties = this.settings.protocolVersion === 5;
    let at = 0;
    while (at + 2 <= buf.length) {
      const first = buf[at] as number;
      let i = at + 1;
      let byte = buf[i++] as number;
      let length = byte & 0x7f;
      // Remaining lengths of up to three bytes (2 MiB): longer ones are mqtt-packet's.
      if (byte & 0x80) {
        if (i >= buf.length) return at;
        byte = buf[i++] as number;
        length += (byte & 0x7f) << 7;
        if (byte & 0x80) {
          if (i >= buf.length) return at;
          byte = buf[i++] as number;
          if (byte & 0x80) return at;
          length += byte << 14;
        }
      }
      const end = i + length;
      // The limit is of the whole packet, its fixed header included (MQTT 5 §3.1.2.11.4).
      if (end > buf.length || end - at > this.maxBytes) return at;
      let packet: Packet;
      if (first >> 4 === 3) {
        const qos = (first >> 1) & 3;
        if (qos === 3 || length < 2) return at;
        let pos = i + 2 + ((buf[i] as number) << 8) + (buf[i + 1] as number);
        const topicEnd = pos;
        let messageId: number | undefined;
        if (qos > 0) {
          if (pos + 2 > end) return at;
          messageId = ((buf[pos] as number) << 8) + (buf[pos + 1] as number);
          pos += 2;
        }
        if (properties) {
          if (pos >= end || buf[pos] !== 0) return at;
          pos++;
        }
        if (pos > end) return at;
        const topic = buf.toString('utf8', i + 2, topicEnd);
        const retain = (first & 1) !== 0;
        const dup = (first & 8) !== 0;
        const payload = buf.subarray(pos, end);
        packet =
          messageId === undefined
            ? { cmd: 'publish', retain, qos: 0, dup, length, topic, payload }
            : { cmd: 'publish', retain, qos: qos as 1 | 2, dup, length, topic, payload, messageId };
      } else if (first === 0x40 && length === 2) {
        const messageId = ((buf[i] as number) << 8) + (buf[i + 1] as number);
        // MQTT 5: a PUBACK without its reason code is a success (mqtt-packet says 0).
        packet = properties ? { cmd: 'puback', messageId, reasonCode: 0 } : { cmd: 'puback', messageId };
      } else if (first === 0xc0 && length === 0) {
        packet = { cmd: 'pingreq' };
      } else {
        return at;
      }
      at = end;
      this.reader.parsed(packet);
    }
    return at;
  }

  /**
   * Its transport holds `bytes` of a message not yet complete (a WebSocket's, whose messages may be as
   * long as a packet): they count in the budget as its own unfinished packets do.
   */
  transportHolds(bytes: number): void {
    if (bytes === this.transportHeld) return;
    this.transportHeld = bytes;
    this.count();
  }

  private count(): void {
    const now = this._list.length + this.transportHeld;
    const partial = this.bounds.partial;
    const refused = partial.change(this.counted, now);
    this.counted = now;
    if (refused) {
      this.bounds.refusedHeld(partial.held);
      this._emitError(new Error(`unfinished packets of ${partial.held} bytes, over the limit of ${partial.budget}`));
    }
  }

  /**
   * Refuses a packet longer than the limit as soon as its header says how long it is: the parser
   * would otherwise keep every byte of it until the last arrives, up to the 256 MiB the protocol
   * allows, so one connection could fill the server's memory.
   */
  override _parseLength(): boolean {
    const read = super._parseLength();
    const max = this.maxBytes;
    // The whole packet counts, its fixed header included (MQTT 5 §3.1.2.11.4).
    const bytes = read ? packetBytes(this.packet.length) : 0;
    if (bytes > max) {
      this.bounds.refusedLength(bytes, max);
      this._emitError(new PacketTooLargeError(`packet of ${bytes} bytes, over the limit of ${max}`));
    }
    return read;
  }

  /**
   * A property MQTT 5 allows only 0 or 1 for (Request Problem Information, Payload Format Indicator...)
   * is read as mqtt-packet reads it (true for any byte but 0), except that another value stays a
   * number, which packet-checks.ts `propertiesFault` calls a protocol error.
   */
  override _parseByType(type: string): unknown {
    if (type !== 'byte') return super._parseByType(type);
    const byte = this._parseByte();
    return byte === undefined || byte <= 1 ? byte !== 0 : byte;
  }

  /**
   * An MQTT 5 DISCONNECT of fewer than two bytes has no properties (MQTT 5 §3.14.2.2.1), and one of
   * none reason code 0: mqtt-packet reads both from the bytes after it when it is not the last packet
   * of a read (the reason code from the next packet's first byte).
   */
  override _parseDisconnect(): unknown {
    const length = this.packet.length;
    if (this.settings.protocolVersion !== 5 || length >= 2) return super._parseDisconnect();
    const packet = this.packet as { reasonCode?: number };
    packet.reasonCode = length === 0 ? 0 : this._parseByte();
    if (DISCONNECT_CODES[packet.reasonCode as number] === undefined) {
      this._emitError(new Error('Invalid disconnect reason code'));
    }
    return true;
  }

  /**
   * mqtt-packet emits each packet read, and the error that ends a parse; they go to the reader. A
   * packet whose fields do not end where its remaining length says is malformed (`lengthFault`).
   */
  emit(event: string, value?: unknown): boolean {
    if (event === 'packet') {
      const fault = lengthFault(value as Packet, this._pos);
      if (fault === undefined) this.reader.parsed(value as Packet);
      else this._emitError(new Error(fault));
    } else if (event === 'error') this.reader.malformed(value as Error);
    return true;
  }

  /** Whether it holds bytes of a packet begun and not yet complete. */
  holdsPartialPacket(): boolean {
    return this._list.length > 0 || this._stateCounter !== 0;
  }

  /** Its connection has closed: the bytes it holds leave the budget. */
  release(): void {
    this.bounds.partial.change(this.counted, 0);
    this.counted = 0;
    this.transportHeld = 0;
  }
}

/**
 * Why a packet mqtt-packet read is malformed for its length, or undefined. mqtt-packet reads a packet's
 * fields from the bytes it holds, which may run on into the next packet's, and never checks that they
 * end where the packet does (`read`: the position its parse reached): bytes after a CONNECT's payload,
 * an MQTT 3.1.1 PUBACK of three bytes, a PINGREQ with a body, a topic filter running past its SUBSCRIBE
 * or a topic past its PUBLISH (whose payload is the rest) are malformed (MQTT 3.1.1 §4.8, MQTT 5
 * §4.13).
 */
export function lengthFault(packet: Packet, read: number): string | undefined {
  const length = (packet as { length?: number }).length ?? 0;
  switch (packet.cmd) {
    case 'publish':
      return read > length ? `a PUBLISH whose topic runs past its ${length} bytes` : undefined;
    case 'connect':
    case 'disconnect':
    case 'puback':
    case 'pubrec':
    case 'pubrel':
    case 'pubcomp':
    case 'subscribe':
    case 'unsubscribe':
    case 'pingreq':
      break;
    default:
      // Packets only a server sends, and AUTH, are refused whole (connection.ts).
      return undefined;
  }
  return read === length ? undefined : `a ${packet.cmd.toUpperCase()} of ${length} bytes whose fields take ${read}`;
}

/** The bytes of a whole packet whose remaining length is `remaining`: its type byte and length's bytes too. */
export function packetBytes(remaining: number): number {
  const lengthBytes = remaining < 0x80 ? 1 : remaining < 0x4000 ? 2 : remaining < 0x200000 ? 3 : 4;
  return 1 + lengthBytes + remaining;
}

/** Gives a parser that holds no bytes yet a plain BufferList in place of its stream; answers whether it did. */
export function useLeanBuffer(parser: Pick<MqttParser, '_list'>): boolean {
  const list = parser._list;
  const Plain = list.constructor.BufferList;
  if (Plain === undefined || list.constructor === Plain || list.length !== 0) return false;
  parser._list = new Plain() as MqttParser['_list'];
  return true;
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

  constructor(readonly budget: number) {}

  /**
   * A parser holds `now` bytes where it held `before`: answers whether that takes the total past the
   * budget while other parsers hold some too.
   */
  change(before: number, now: number): boolean {
    this.held += now - before;
    return now > 0 && this.held > this.budget && this.held > now;
  }
}
