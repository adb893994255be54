/**
 * The change feed across instances on PostgreSQL (docs/architecture.md, "The change feed"): what one
 * instance wants reaches the others while it catches up on the same listening connection, whose
 * statements go one at a time (pg warns of, and will stop, a statement sent while another runs).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openStore, type Store } from '../../src/store/store.ts';
import { eventually } from '../support/peers.ts';
import { POSTGRES_URL, STORES } from '../support/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres');

describe('the change feed across instances [postgres]', { skip: postgres?.skip ?? 'no PostgreSQL case' }, () => {
  const settings = postgres?.fresh() ?? { databaseUrl: POSTGRES_URL };
  let here: Store;
  let there: Store;
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  before(async () => {
    process.on('warning', onWarning);
    here = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema, onFault: () => {} });
    there = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema, onFault: () => {} });
  });
  after(async () => {
    process.off('warning', onWarning);
    await here?.close();
    await there?.close();
    await postgres?.dispose?.(settings);
  });

  it('when an instance changes what it wants while it catches up then the others learn its last wants, and its statements go one at a time', async () => {
    const catchingUp: Promise<void>[] = [];
    let release = () => {};
    for (let round = 0; round < 20; round += 1) {
      release();
      release = there.changes.want(round % 2 === 0 ? ['Event', 'Alert'] : ['Alert']);
      catchingUp.push(Promise.resolve(there.changes.catchUp()));
    }
    await Promise.all(catchingUp);
    await eventually(
      async () => here.changes.wantedByOthers('Alert') && !here.changes.wantedByOthers('Event'),
      'the other instance to learn the last wants',
    );
    release();
    await eventually(
      async () => !here.changes.wantedByOthers('Alert'),
      'the other instance to learn nothing is wanted',
    );
    assert.deepEqual(
      warnings.filter((w) => /already executing a query/.test(w)),
      [],
      'no statement sent while another runs',
    );
  });
});
