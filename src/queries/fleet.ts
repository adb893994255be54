/**
 * `fleet_aggregated_data` (docs/api.md, "Data queries"): the numbers of `thing_aggregated_data`
 * added up across the things of a list, a group or a template, overall and per time bucket. Where the
 * buckets fall on slot boundaries, the whole slots are read from the rollups of every thing at once,
 * added up per slot by the store (events/fleet-rollups.ts); only the partial slots at the ends of the
 * range, and the slots a thing's rollups do not cover, are read event by event.
 */
import { JsonText } from '../core/http/json-text.ts';
import type { TimeFormatter } from '../core/time.ts';
import { fleetRollups } from '../events/fleet-rollups.ts';
import { rollupsOf, SLOT_MS } from '../events/rollups.ts';
import { firstKeptSlot, retentionCuts } from '../events/service.ts';
import type { MetricStats } from '../events/slot-stats.ts';
import { templateRollups } from '../events/template-rollups.ts';
import { memberKeysOfGroup, requireGroup } from '../groups/service.ts';
import type { Executor } from '../store/store.ts';
import { requireTemplate } from '../templates/service.ts';
import { thingCountsOfTemplates } from '../things/service.ts';
import {
  type AggregateFunction,
  addEventsOfThing,
  aggregationRange,
  cellWriter,
  checkAnswerCells,
  keyedBuckets,
  rollupPlan,
  Stats,
  statsOfThing,
} from './aggregation.ts';
import { checkOneChoice, namedThingKeys, namedThingsParam, type QueriedThing, queriedThings } from './things.ts';
import type { TimeGrouping } from './time-buckets.ts';

export interface FleetRequest {
  organisationKeys: string[];
  thingKeys?: string[] | undefined;
  /** A shorthand for thingKeys: [thingKey]. */
  thingKey?: string | undefined;
  groupKey?: string | undefined;
  thingTemplateKey?: string | undefined;
  grouping?: TimeGrouping | undefined;
  groupingValue: number;
  from?: string | number | undefined;
  to?: string | number | undefined;
  metrics?: string[] | undefined;
  functions?: AggregateFunction[] | undefined;
}

/** Far beyond any event time, as in aggregation.ts. */
const FAR = 8.64e15;

/** The things chosen: by keys, a group's members, a template's things, or every thing the caller may read. */
async function fleetThings(db: Executor, request: FleetRequest): Promise<QueriedThing[]> {
  checkOneChoice({
    thing_keys: request.thingKeys,
    thing_key: request.thingKey,
    group_key: request.groupKey,
    thing_template_key: request.thingTemplateKey,
  });
  const organisations = request.organisationKeys;
  if (request.groupKey !== undefined) {
    const group = await requireGroup(db, organisations, request.groupKey);
    return queriedThings(db, organisations, await memberKeysOfGroup(db, group));
  }
  if (request.thingTemplateKey !== undefined) {
    await requireTemplate(db, organisations, request.thingTemplateKey);
    return queriedThings(db, organisations, undefined, request.thingTemplateKey);
  }
  const thingKeys = namedThingKeys(request.thingKeys, request.thingKey);
  return queriedThings(
    db,
    organisations,
    thingKeys && [...new Set(thingKeys)],
    undefined,
    namedThingsParam(request.thingKeys),
  );
}

/**
 * The templates every thing of which is among these (things the caller cannot read, or kept for
 * another time, leave theirs out), with those things: their slots are read from the template's
 * rollups (events/template-rollups.ts), one row per slot.
 */
async function wholeTemplates(db: Executor, things: QueriedThing[]): Promise<Map<string, QueriedThing[]>> {
  const chosen = new Map<string, QueriedThing[]>();
  for (const thing of things) {
    const same = chosen.get(thing.thing_template_key);
    if (same) same.push(thing);
    else chosen.set(thing.thing_template_key, [thing]);
  }
  for (const [templateKey, count] of await thingCountsOfTemplates(db, [...chosen.keys()])) {
    if ((chosen.get(templateKey)?.length ?? 0) !== count) chosen.delete(templateKey);
  }
  return chosen;
}

/** Slots as event ranges (inclusive bounds), neighbours joined. */
function slotRanges(slots: number[]): { from: number; to: number }[] {
  const ranges: { from: number; to: number }[] = [];
  for (const slot of slots.sort((a, b) => a - b)) {
    const last = ranges[ranges.length - 1];
    if (last && last.to + 1 === slot) last.to = slot + SLOT_MS - 1;
    else ranges.push({ from: slot, to: slot + SLOT_MS - 1 });
  }
  return ranges;
}

/** Things that keep their data alike (retention) share the slots read for them. */
function byRetention(things: QueriedThing[]): QueriedThing[][] {
  const classes = new Map<string, QueriedThing[]>();
  for (const thing of things) {
    const id = `${thing.retention_days}:${thing.rollup_retention_days}`;
    const same = classes.get(id);
    if (same) same.push(thing);
    else classes.set(id, [thing]);
  }
  return [...classes.values()];
}

export async function fleetAggregatedData(db: Executor, request: FleetRequest, time: TimeFormatter): Promise<JsonText> {
  const { from, to, buckets, functions } = aggregationRange({ ...request, idle: false }, time);
  const things = await fleetThings(db, request);
  const discovered = new Set<string>();
  for (const thing of things) for (const m of thing.metrics) if (m.data_type === 'number') discovered.add(m.name);
  const metrics = [...new Set(request.metrics ?? discovered)];
  // The fleet answers one thing's worth of cells.
  checkAnswerCells(1, metrics.length, buckets);
  const overall = metrics.map(() => new Stats(1, false));
  const bucketed = buckets ? metrics.map(() => new Stats(buckets.length, false)) : [];
  const target = { metrics, buckets, overall, bucketed };
  const addStats = (add: { overall: Stats[]; bucketed: Stats[] }) => {
    for (let m = 0; m < metrics.length; m++) {
      (overall[m] as Stats).addCell(0, add.overall[m] as Stats, 0);
      if (buckets)
        for (let b = 0; b < buckets.length; b++) (bucketed[m] as Stats).addCell(b, add.bucketed[m] as Stats, b);
    }
  };

  const plan = rollupPlan(from, to, buckets, false);
  const now = Date.now();
  if (!plan?.stored) {
    // No whole slot in the range, or buckets that do not fall on slot boundaries: thing by thing.
    for (const thing of things)
      addStats(await statsOfThing(db, thing, { from, to, buckets, plan, metrics, idle: false, now }));
  } else {
    const addSlot = (slot: number, stats: MetricStats[]) => {
      const index = buckets ? buckets.indexOf(slot) : -1;
      for (let m = 0; m < metrics.length; m++) {
        const [count, sum, min, max] = stats[m] as MetricStats;
        (overall[m] as Stats).merge(0, count, sum, min, max);
        if (index >= 0) (bucketed[m] as Stats).merge(index, count, sum, min, max);
      }
    };
    for (const group of byRetention(things)) {
      const [first] = group as [QueriedThing];
      const cuts = retentionCuts(first.retention_days, first.rollup_retention_days, now);
      const slotsFrom = Math.max(plan.from, firstKeptSlot(cuts.rollups) ?? -FAR);
      const uncovered = new Map<number, number[]>();
      if (slotsFrom < plan.to) {
        // Slot ranges whose rollups are summed thing by thing, and the things they are summed over.
        const byThing: { thingIds: number[]; from: number; to: number }[] = [];
        const whole = await wholeTemplates(db, group);
        const rest = group.filter((t) => !whole.has(t.thing_template_key));
        if (rest.length > 0) byThing.push({ thingIds: rest.map((t) => t.thing_id), from: slotsFrom, to: plan.to });
        for (const [templateKey, members] of whole) {
          const { counted, uncounted } = await templateRollups(db, templateKey, metrics, slotsFrom, plan.to);
          for (const { slot, stats } of counted) addSlot(slot, stats);
          for (const range of slotRanges(uncounted)) {
            byThing.push({ thingIds: members.map((t) => t.thing_id), from: range.from, to: range.to + 1 });
          }
        }
        for (const { thingIds, from: rangeFrom, to: rangeTo } of byThing) {
          for (const { slot, stats, uncovered: missing } of await fleetRollups(
            db,
            thingIds,
            metrics,
            rangeFrom,
            rangeTo,
          )) {
            addSlot(slot, stats);
            for (const thingId of missing) uncovered.set(thingId, [...(uncovered.get(thingId) ?? []), slot]);
          }
        }
      }
      const expiredBefore = cuts.events ?? -FAR;
      for (const thing of group) {
        const missing = uncovered.get(thing.thing_id) ?? [];
        // A slot whose events have all expired counts what its rollup has (as thing_aggregated_data does).
        for (const slot of missing.filter((s) => s + SLOT_MS <= expiredBefore)) {
          const index = buckets ? buckets.indexOf(slot) : -1;
          for (const [, stats] of await rollupsOf(db, thing.thing_id, slot, slot + SLOT_MS)) {
            for (let m = 0; m < metrics.length; m++) {
              const metric = stats[metrics[m] as string];
              if (metric === undefined) continue;
              (overall[m] as Stats).merge(0, ...metric);
              if (index >= 0) (bucketed[m] as Stats).merge(index, ...metric);
            }
          }
        }
        const unexpired = missing.filter((s) => s + SLOT_MS > expiredBefore);
        await addEventsOfThing(db, thing.thing_id, [...plan.rest, ...slotRanges(unexpired)], cuts.events, target);
      }
    }
  }

  const cellJson = cellWriter(functions);
  const metricNames = metrics.map((metric) => JSON.stringify(metric));
  const summary = metrics.map((_, m) => `${metricNames[m]}:${cellJson(overall[m] as Stats, 0)}`);
  let text = `{"thing_count":${things.length},"summary_result":{${summary.join(',')}}`;
  if (buckets) {
    const cells: string[] = [];
    for (const [key, indices] of keyedBuckets(buckets, time)) {
      const members = metrics.map((_, m) => {
        // Most keys name one bucket: written from it as it is.
        if (indices.length === 1) return `${metricNames[m]}:${cellJson(bucketed[m] as Stats, indices[0] as number)}`;
        const merged = new Stats(1, false);
        for (const i of indices) merged.addCell(0, bucketed[m] as Stats, i);
        return `${metricNames[m]}:${cellJson(merged, 0)}`;
      });
      cells.push(`${JSON.stringify(key)}:{${members.join(',')}}`);
    }
    text += `,"time_grouped_result":{${cells.join(',')}}`;
  }
  return new JsonText(`${text}}`);
}
