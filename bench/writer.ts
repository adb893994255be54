/**
 * `npm run bench -- writer [--things 5000] [--per 10] [--transactions 3000] [--rounds 3]`
 * The CPU a stored event costs in the event writer alone, without devices, sockets or answers, next to
 * the fleet floor's store (bench/servers/floor-store.ts) in the same run. Each transaction holds `--per`
 * events of as many things, one event each, as the steady fleet's 10 ms ticks bring (5,000 devices at
 * 1,000 events a second: 10 a tick); both stores are SQLite in WAL with `synchronous = FULL`.
 * - Thingbase: the server's event writer (events/writer.ts) on a store opened and migrated as the
 *   server opens it, with `--things` things of a template of 3 numeric metrics: each event stored
 *   with its thing's rollup, its template's rollup and its last event, after the staleness check.
 * - the floor: its store as the floor server uses it, a transaction a turn of the event loop.
 * Rounds alternate the two, each writing `--transactions` transactions after a first unmeasured round
 * of each (V8 compiling the code). Reported: microseconds of the process's CPU (every thread, the
 * kernel's work for it included) per event, each round's and the medians, and Thingbase's as a ratio.
 * A wait for `fsync` is not CPU and does not count.
 */
import { openFloorStore } from './servers/floor-store.ts';
import { fillableStore, readings } from './storage.ts';
import { benchStore, describeMachine, median, option, table } from './support.ts';

export async function run(args: string[]): Promise<void> {
  const thingCount = Number(option(args, 'things', '5000'));
  const per = Number(option(args, 'per', '10'));
  const transactions = Number(option(args, 'transactions', '3000'));
  const rounds = Number(option(args, 'rounds', '3'));
  console.log(
    `writer: ${thingCount} things, ${per} events of as many things a transaction, ${transactions} transactions a round`,
  );
  console.log(describeMachine());

  const filled = await fillableStore(benchStore('sqlite'), thingCount);
  const things = [...filled.things];
  let next = 0;
  /** One transaction's worth of single-event batches through the writer, as the device endpoint writes them. */
  const thingbaseTurn = () => {
    const writes: Promise<number>[] = [];
    for (let k = 0; k < per; k++, next++) {
      const [thingId, thing] = things[next % things.length] as (typeof things)[number];
      writes.push(
        filled.writer.write({
          events: [{ thingId, timestamp: Date.now(), data: readings(next), waypoint: null }],
          subject: { organisationKey: filled.organisationKey, things: new Map([[thingId, thing]]) },
        }),
      );
    }
    return Promise.all(writes);
  };
  const floorStore = openFloorStore();
  const floorTurn = async () => {
    const rows: [string, number, string][] = [];
    for (let k = 0; k < per; k++, next++) {
      rows.push([`thing-${next % thingCount}`, Date.now(), JSON.stringify(readings(next))]);
    }
    floorStore.store(rows);
    // A turn of the event loop a transaction, as the floor server stores once a turn.
    await new Promise((resolve) => setImmediate(resolve));
  };
  /** CPU microseconds per event of `transactions` turns. */
  const measure = async (turn: () => Promise<unknown>) => {
    const started = process.cpuUsage();
    for (let t = 0; t < transactions; t++) await turn();
    const { user, system } = process.cpuUsage(started);
    return (user + system) / (transactions * per);
  };

  await measure(floorTurn);
  await measure(thingbaseTurn);
  const floor: number[] = [];
  const thingbase: number[] = [];
  for (let r = 0; r < rounds; r++) {
    floor.push(await measure(floorTurn));
    thingbase.push(await measure(thingbaseTurn));
  }
  const us = (v: number) => v.toFixed(1);
  console.log(
    table([
      ['store', 'CPU us an event, median', 'each round', 'vs the floor'],
      ['the floor', us(median(floor)), floor.map(us).join(', '), '1.00x'],
      [
        'Thingbase event writer',
        us(median(thingbase)),
        thingbase.map(us).join(', '),
        `${(median(thingbase) / median(floor)).toFixed(2)}x`,
      ],
    ]),
  );
  await filled.store.close();
  floorStore.close();
}
