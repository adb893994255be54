import { type Kysely, sql } from 'kysely';
import { engineOfDb } from '../dialect.ts';

/**
 * On PostgreSQL, `event_blocks` becomes a table partitioned by range of its blocks' first event time
 * (`min_timestamp`), one partition per calendar month (UTC), so that the sweeper drops a month whose
 * blocks have all expired instead of deleting them (docs/storage.md, "Partitions"). SQLite is
 * unchanged.
 *
 * The blocks are copied into the new table under the lock of this migration's transaction: the
 * table is small (a couple of bytes per event) and is only read by queries of compacted events,
 * which wait for the copy. The block ids go on from the same sequence, so a block keeps its id.
 * The primary key includes the partition key, as PostgreSQL requires of a partitioned table's unique
 * indexes: a block is named by (block_id, min_timestamp), which also picks its partition.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (engineOfDb(db) !== 'postgres') return;
  await sql`lock table event_blocks in access exclusive mode`.execute(db);
  await sql`alter table event_blocks rename to event_blocks_unpartitioned`.execute(db);
  await sql`
    create table event_blocks (
      block_id bigint not null default nextval('event_blocks_block_id_seq'),
      thing_id bigint not null,
      min_timestamp bigint not null,
      max_timestamp bigint not null,
      min_created_at bigint not null,
      max_created_at bigint not null,
      event_count integer not null,
      body bytea not null
    ) partition by range (min_timestamp)`.execute(db);
  await sql`alter sequence event_blocks_block_id_seq owned by event_blocks.block_id`.execute(db);
  const { rows } = await sql<{ month: string }>`
    select distinct (extract(epoch from date_trunc('month', to_timestamp(min_timestamp / 1000.0) at time zone 'UTC'))
      * 1000)::bigint as month from event_blocks_unpartitioned`.execute(db);
  for (const { month } of rows) {
    const from = Number(month);
    const start = new Date(from);
    const to = Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
    const name = `event_blocks_${start.toISOString().slice(0, 7).replace('-', '_')}`;
    await sql`create table ${sql.id(name)} partition of event_blocks
      for values from (${sql.lit(from)}) to (${sql.lit(to)})`.execute(db);
  }
  await sql`insert into event_blocks select * from event_blocks_unpartitioned`.execute(db);
  await sql`drop table event_blocks_unpartitioned`.execute(db);
  await sql`alter table event_blocks add primary key (block_id, min_timestamp)`.execute(db);
  await sql`create index event_blocks_thing_min on event_blocks (thing_id, min_timestamp)`.execute(db);
  await sql`create index event_blocks_thing_max on event_blocks (thing_id, max_timestamp)`.execute(db);
}
