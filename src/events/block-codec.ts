/**
 * The body of an event block (docs/storage.md, "The compact event store"): a thing's events of one
 * block, column by column, deflated. Each event decodes back to exactly the row it was: its id, event
 * time, receipt time, waypoint and data text, byte for byte (member order included).
 *
 * - Event times as deltas of deltas (a device reporting every second: all zeros), receipt times as
 *   their lag behind the event time, delta-coded, and event ids as deltas.
 * - The data of each event is split into a template (its JSON text with every number and string
 *   replaced by a marker; one list of templates per block, usually one) and its values, which go to
 *   one column per (type, dotted path): numbers as decimal integers (the value times a power of ten
 *   that makes every value of the column an integer, e.g. 21.35 as 2135) delta-coded, or, when no
 *   such power exists, as the XOR of their 64 bits with the previous value's; strings through a
 *   dictionary of the column.
 * - Encoding checks that the block decodes back to its events; when it does not (a value the scheme
 *   cannot hold), the events are kept as whole texts, which always do.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/** An event as a block holds it: exactly its row in the events table. */
export interface BlockEvent {
  eventId: number;
  timestamp: number;
  createdAt: number;
  /** The data, as the JSON text it was stored as. */
  data: string;
  waypoint: string | null;
}

/** Stands for a value in a template: JSON text never holds it raw (it is escaped in strings). */
const MARK = '\u0001';
const FORMAT = 1;
/** Numbers held as integers stay below this in magnitude, so their deltas are exact doubles. */
const SAFE = 2 ** 50;

class Writer {
  private buffer = Buffer.alloc(1024);
  length = 0;

  private room(bytes: number) {
    if (this.length + bytes <= this.buffer.length) return;
    const bigger = Buffer.alloc(Math.max(this.buffer.length * 2, this.length + bytes));
    this.buffer.copy(bigger, 0, 0, this.length);
    this.buffer = bigger;
  }

  /** An unsigned integer (up to 2^53) in 7-bit groups. */
  varint(value: number) {
    this.room(8);
    let v = value;
    while (v >= 0x80) {
      this.buffer[this.length++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buffer[this.length++] = v;
  }

  /** A signed integer, small magnitudes in few bytes. */
  signed(value: number) {
    this.varint(value >= 0 ? value * 2 : -value * 2 - 1);
  }

  bytes(data: Uint8Array) {
    this.room(data.length);
    this.buffer.set(data, this.length);
    this.length += data.length;
  }

  done(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

class Reader {
  offset = 0;
  constructor(private readonly buffer: Buffer) {}

  varint(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.buffer[this.offset++];
      if (byte === undefined) throw new Error('event block: truncated');
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
  }

  signed(): number {
    const v = this.varint();
    return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
  }

  bytes(length: number): Buffer {
    const slice = this.buffer.subarray(this.offset, this.offset + length);
    this.offset += length;
    return slice;
  }
}

interface Column {
  kind: 'n' | 's';
  values: (number | string)[];
}

interface Split {
  template: string;
  leaves: { key: string; value: number | string }[];
}

/** An event's data text as its template and its values (numbers and strings) with their column keys. */
function split(text: string): Split {
  const leaves: Split['leaves'] = [];
  let template = '';
  const walk = (value: unknown, path: string) => {
    if (typeof value === 'number' || typeof value === 'string') {
      leaves.push({ key: `${typeof value === 'number' ? 'n' : 's'}${path}`, value });
      template += MARK;
    } else if (Array.isArray(value)) {
      template += '[';
      value.forEach((item, i) => {
        if (i > 0) template += ',';
        walk(item, `${path}\u0000${i}`);
      });
      template += ']';
    } else if (value !== null && typeof value === 'object') {
      template += '{';
      let first = true;
      for (const [name, item] of Object.entries(value)) {
        if (!first) template += ',';
        first = false;
        template += `${JSON.stringify(name)}:`;
        walk(item, `${path}\u0000${name}`);
      }
      template += '}';
    } else {
      template += JSON.stringify(value);
    }
  };
  walk(JSON.parse(text), '');
  return { template, leaves };
}

/** Characters that continue a JSON number: digits, `.`, `e`, `E`, `+`, `-`. */
const inNumber = (c: number) =>
  (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;

/**
 * An event's data text as its template and its values, read off the text without building objects:
 * numbers and strings become markers, names and everything else stay. This is split()'s answer when
 * the text is JSON as the server writes it (no spaces), which encodeWith checks for each new template;
 * the values themselves are checked by decoding the whole block back.
 */
function scan(text: string): { template: string; values: (number | string)[] } {
  const values: (number | string)[] = [];
  let template = '';
  /** Where the part of the text not yet copied into the template begins. */
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: to its closing quote, past escaped characters.
      let j = i + 1;
      let escaped = false;
      while (j < text.length && text.charCodeAt(j) !== 0x22) {
        if (text.charCodeAt(j) === 0x5c) {
          escaped = true;
          j += 1;
        }
        j += 1;
      }
      // A member's name stays in the template.
      if (text.charCodeAt(j + 1) === 0x3a) {
        i = j + 2;
        continue;
      }
      template += `${text.slice(copied, i)}${MARK}`;
      values.push(escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j));
      i = j + 1;
      copied = i;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < text.length && inNumber(text.charCodeAt(j))) j++;
      template += `${text.slice(copied, i)}${MARK}`;
      values.push(Number(text.slice(i, j)));
      i = j;
      copied = i;
    } else {
      i++;
    }
  }
  return { template: template + text.slice(copied), values };
}

/** Thrown when an event's text is not as the server writes JSON: the block keeps whole texts. */
class NotColumnar extends Error {}

/** The power of ten that makes every number an integer below SAFE exactly, or -1 for none. */
function decimalScale(values: number[]): number {
  let scale = 0;
  for (const v of values) {
    while (scale <= 15) {
      const m = Math.round(v * 10 ** scale);
      if (Math.abs(m) < SAFE && m / 10 ** scale === v) break;
      scale++;
    }
    if (scale > 15) return -1;
  }
  for (const v of values) if (Math.round(v * 10 ** scale) / 10 ** scale !== v) return -1;
  return scale;
}

/** Encodes events sorted by (event time, id) into a block body. */
export function encodeBlock(events: readonly BlockEvent[]): Buffer {
  try {
    const body = encodeWith(events, true);
    if (sameEvents(decodeBlock(body), events)) return body;
  } catch (error) {
    if (!(error instanceof NotColumnar)) throw error;
  }
  return encodeWith(events, false);
}

function sameEvents(a: BlockEvent[], b: readonly BlockEvent[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((e, i) => {
    const o = b[i] as BlockEvent;
    return (
      e.eventId === o.eventId &&
      e.timestamp === o.timestamp &&
      e.createdAt === o.createdAt &&
      e.data === o.data &&
      e.waypoint === o.waypoint
    );
  });
}

function encodeWith(events: readonly BlockEvent[], columnar: boolean): Buffer {
  const templates: string[] = [];
  const templateIds = new Map<string, number>();
  /** Per template, the column of each of its values. */
  const templateColumns: number[][] = [];
  const columns: Column[] = [];
  const columnIds = new Map<string, number>();
  const waypoints: string[] = [];
  const waypointIds = new Map<string, number>();
  const shapes = new Writer();
  const places = new Writer();
  for (const e of events) {
    const parts = columnar ? scan(e.data) : { template: e.data, values: [] };
    let id = templateIds.get(parts.template);
    if (id === undefined) {
      // The columns of a new template's values, named by their paths (which the template determines).
      const leaves = columnar ? split(e.data) : { template: e.data, leaves: [] };
      if (leaves.template !== parts.template) throw new NotColumnar();
      id = templates.length;
      templates.push(parts.template);
      templateIds.set(parts.template, id);
      templateColumns.push(
        leaves.leaves.map((leaf) => {
          let column = columnIds.get(leaf.key);
          if (column === undefined) {
            column = columns.length;
            columns.push({ kind: leaf.key[0] as 'n' | 's', values: [] });
            columnIds.set(leaf.key, column);
          }
          return column;
        }),
      );
    }
    // The same template names the same paths, so the same columns, in order.
    shapes.varint(id);
    const columnsOfTemplate = templateColumns[id] as number[];
    for (let i = 0; i < parts.values.length; i++) {
      (columns[columnsOfTemplate[i] as number] as Column).values.push(parts.values[i] as number | string);
    }
    if (e.waypoint === null) {
      places.varint(0);
    } else {
      let w = waypointIds.get(e.waypoint);
      if (w === undefined) {
        w = waypoints.length;
        waypoints.push(e.waypoint);
        waypointIds.set(e.waypoint, w);
      }
      places.varint(w + 1);
    }
  }
  const times = new Writer();
  let previousTime = 0;
  let previousDelta = 0;
  let previousLag = 0;
  let previousId = 0;
  const lags = new Writer();
  const ids = new Writer();
  for (const e of events) {
    const delta = e.timestamp - previousTime;
    times.signed(delta - previousDelta);
    previousTime = e.timestamp;
    previousDelta = delta;
    const lag = e.createdAt - e.timestamp;
    lags.signed(lag - previousLag);
    previousLag = lag;
    ids.signed(e.eventId - previousId);
    previousId = e.eventId;
  }
  const streams = [times, lags, ids, shapes, places];
  const columnHeads: { k: string; s?: number; d?: string[] }[] = [];
  for (const column of columns) {
    const out = new Writer();
    if (column.kind === 's') {
      const dictionary: string[] = [];
      const entries = new Map<string, number>();
      for (const value of column.values as string[]) {
        let d = entries.get(value);
        if (d === undefined) {
          d = dictionary.length;
          dictionary.push(value);
          entries.set(value, d);
        }
        out.varint(d);
      }
      columnHeads.push({ k: 's', d: dictionary });
    } else {
      const numbers = column.values as number[];
      const scale = decimalScale(numbers);
      if (scale >= 0) {
        let previous = 0;
        for (const v of numbers) {
          const m = Math.round(v * 10 ** scale);
          out.signed(m - previous);
          previous = m;
        }
        columnHeads.push({ k: 'n', s: scale });
      } else {
        const view = new DataView(new ArrayBuffer(8));
        let previous = 0n;
        for (const v of numbers) {
          view.setFloat64(0, v);
          const bits = view.getBigUint64(0);
          view.setBigUint64(0, bits ^ previous);
          out.bytes(new Uint8Array(view.buffer.slice(0)));
          previous = bits;
        }
        columnHeads.push({ k: 'f' });
      }
    }
    streams.push(out);
  }
  const head = Buffer.from(
    JSON.stringify({
      v: FORMAT,
      n: events.length,
      t: templates,
      c: templateColumns,
      w: waypoints,
      k: columnHeads,
      l: streams.map((s) => s.length),
    }),
  );
  const all = new Writer();
  all.varint(head.length);
  all.bytes(head);
  for (const s of streams) all.bytes(s.done());
  return deflateRawSync(all.done(), { level: 6 });
}

interface Head {
  v: number;
  n: number;
  t: string[];
  c: number[][];
  w: string[];
  k: { k: string; s?: number; d?: string[] }[];
  l: number[];
}

/** The events of a block body, in (event time, id) order. */
export function decodeBlock(body: Uint8Array): BlockEvent[] {
  const reader = new Reader(inflateRawSync(body));
  const head = JSON.parse(reader.bytes(reader.varint()).toString()) as Head;
  if (head.v !== FORMAT) throw new Error(`event block: unknown format ${head.v}`);
  const streams = head.l.map((length) => new Reader(reader.bytes(length)));
  const [times, lags, ids, shapes, places] = streams as [Reader, Reader, Reader, Reader, Reader];
  const values: (number | string)[][] = head.k.map((column, i) => {
    const stream = streams[5 + i] as Reader;
    const end = head.l[5 + i] as number;
    const out: (number | string)[] = [];
    if (column.k === 's') {
      const dictionary = column.d as string[];
      while (stream.offset < end) out.push(dictionary[stream.varint()] as string);
    } else if (column.k === 'n') {
      const power = 10 ** (column.s as number);
      let m = 0;
      while (stream.offset < end) {
        m += stream.signed();
        out.push(m / power);
      }
    } else {
      const view = new DataView(new ArrayBuffer(8));
      let previous = 0n;
      while (stream.offset < end) {
        const bytes = stream.bytes(8);
        for (let b = 0; b < 8; b++) view.setUint8(b, bytes[b] as number);
        previous ^= view.getBigUint64(0);
        view.setBigUint64(0, previous);
        out.push(view.getFloat64(0));
      }
    }
    return out;
  });
  const cursors = values.map(() => 0);
  const templateParts = head.t.map((t) => t.split(MARK));
  const events: BlockEvent[] = [];
  let time = 0;
  let delta = 0;
  let lag = 0;
  let id = 0;
  for (let i = 0; i < head.n; i++) {
    delta += times.signed();
    time += delta;
    lag += lags.signed();
    id += ids.signed();
    const shape = shapes.varint();
    const parts = templateParts[shape] as string[];
    const columnsOf = head.c[shape] as number[];
    let data = parts[0] as string;
    for (let p = 1; p < parts.length; p++) {
      const column = columnsOf[p - 1] as number;
      const cursor = cursors[column] as number;
      cursors[column] = cursor + 1;
      const value = (values[column] as (number | string)[])[cursor];
      data += JSON.stringify(value) + (parts[p] as string);
    }
    const place = places.varint();
    events.push({
      eventId: id,
      timestamp: time,
      createdAt: time + lag,
      data,
      waypoint: place === 0 ? null : (head.w[place - 1] as string),
    });
  }
  return events;
}
