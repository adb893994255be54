import { openStore } from './src/store/store.ts';
import { aggregatedData } from './src/queries/aggregation.ts';
import { timeFormatter } from './src/core/time.ts';
const store = await openStore({ databaseUrl: 'sqlite:.bench/query-v2-1000x10000.db' });
const org = (await store.db.selectFrom('things').select('organisation_key').where('thing_key', '=', 'q-0').executeTakeFirstOrThrow()).organisation_key;
const req = { organisationKeys: [org], thingKeys: ['q-0'], grouping: 'minute' as const, groupingValue: 15, idle: false, from: '2026/10/01 00:00:00', to: '2026/10/30 23:59:59', metrics: ['temperature', 'pressure', 'rpm'] };
const time = timeFormatter('str', 'Asia/Kolkata');
const t = (name: string, f: () => unknown) => async () => { const ts: number[] = []; let r; for (let i = 0; i < 30; i++) { const s = performance.now(); r = await f(); ts.push(performance.now() - s); } ts.sort((a, b) => a - b); console.log(name, ts[15]!.toFixed(2), 'ms'); return r; };
const answer = await t('aggregatedData', () => aggregatedData(store.db, req, time))();
await t('stringify', () => JSON.stringify(answer))();
if (process.env.PROF) { const { Session } = await import('node:inspector/promises'); const s = new Session(); s.connect(); await s.post('Profiler.enable'); await s.post('Profiler.start'); for (let i = 0; i < 50; i++) await aggregatedData(store.db, req, time); const { profile } = await s.post('Profiler.stop'); (await import('node:fs')).writeFileSync('/tmp/prof/agg.cpuprofile', JSON.stringify(profile)); }
await store.close();
