/**
 * Alerts (docs/rules.md, "Alerts"): raised by rules, by devices (out-of-band alerts) and by
 * instructions, whose device acknowledgement updates the instruction's alert instead of adding another.
 * `data.thing` is the thing as it was when the alert was raised.
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { conflict, notFound, requiredParam } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import type { Principal } from '../core/principal.ts';
import { STORED_TIME } from '../core/time.ts';
import { readTimestamp } from '../events/ingest.ts';
import { type Executor, noteChange, type Store } from '../store/store.ts';
import type { AlertRow, AlertStatus } from '../store/tables.ts';
import { findThing, type ThingWithTemplate, thingSnapshot } from '../things/service.ts';
import { alertTypeName, presentAlert } from './presenter.ts';
import * as alerts from './repository.ts';

export interface NewAlert {
  organisationKey: string;
  thing: ThingWithTemplate;
  alertType: number;
  message: string;
  /** When it happened (ms). */
  timestamp: number;
  /** Members added to `data` beside `thing` and `alert_type_string`. */
  data?: Record<string, unknown> | undefined;
  ruleKey?: string | undefined;
  instruction?: { instruction_key: string; name: string } | undefined;
  /** A key chosen beforehand (instructions hand theirs to the device). */
  alertKey?: string | undefined;
}

export function listAlerts(db: Executor, filter: alerts.AlertFilter, list: ListQuery) {
  return alerts.listAlerts(db, filter, list);
}

/** An alert of these organisations, or undefined. */
export function findAlert(db: Executor, organisationKeys: string[], alertKey: string): Promise<AlertRow | undefined> {
  return alerts.findAlert(db, organisationKeys, alertKey);
}

export async function requireAlert(db: Executor, organisationKeys: string[], alertKey: string): Promise<AlertRow> {
  const row = await alerts.findAlert(db, organisationKeys, alertKey);
  if (!row) throw notFound('alert', 'alert_key');
  return row;
}

/** Writes an alert inside the caller's transaction. */
export async function raiseAlert(db: Executor, alert: NewAlert, now = Date.now()): Promise<AlertRow> {
  const row: AlertRow = {
    alert_key: alert.alertKey ?? newKey(),
    organisation_key: alert.organisationKey,
    thing_key: alert.thing.thing_key,
    thing_name: alert.thing.name,
    rule_key: alert.ruleKey ?? null,
    instruction_key: alert.instruction?.instruction_key ?? null,
    instruction_name: alert.instruction?.name ?? null,
    alert_type: alert.alertType,
    message: alert.message,
    data: JSON.stringify({
      ...alert.data,
      thing: thingSnapshot(alert.thing),
      alert_type_string: alertTypeName(alert.alertType),
    }),
    timestamp: alert.timestamp,
    created_at: now,
    updated_at: now,
    status: 'open',
    acknowledged_at: null,
    acknowledged_by: null,
    cleared_at: null,
    cleared_by: null,
    comment: null,
  };
  await alerts.insertAlert(db, row);
  await noteAlert(db, row, 'create');
  return row;
}

/** Tells the change feed an alert as it now is (realtime push, docs/realtime.md). */
function noteAlert(db: Executor, row: AlertRow, action: 'create' | 'update') {
  return noteChange(db, {
    entityType: 'Alert',
    organisationKey: row.organisation_key,
    entityKey: row.alert_key,
    action,
    detail: row,
  });
}

/**
 * What another capability does, in the same transaction, when a device acknowledges an existing alert
 * (instructions register theirs: instructions/service.ts, which raises its alerts through this module).
 */
export type AlertAcknowledgement = (db: Executor, alert: AlertRow, now: number) => Promise<void>;

const acknowledgements: AlertAcknowledgement[] = [];

export function onAlertAcknowledged(acknowledgement: AlertAcknowledgement): void {
  if (!acknowledgements.includes(acknowledgement)) acknowledgements.push(acknowledgement);
}

export interface DeviceAlert {
  thing_key?: string | null | undefined;
  device_key?: string | null | undefined;
  alert_key?: string | null | undefined;
  message: string;
  alert_type: number;
  data?: Record<string, unknown> | null | undefined;
  timestamp?: unknown;
}

/**
 * A device's alert (docs/devices.md, "Alerts from devices"). One naming the `alert_key` of an existing
 * alert is an acknowledgement: it updates that alert's message, type and data (keeping what the server
 * put in its data: KEPT_MEMBERS) and marks the instruction acknowledged. Any other needs a thing and
 * raises a new alert.
 */
/**
 * What the server put in an alert's data, which a device's acknowledgement keeps: the thing as it was,
 * the instruction, and a rule's alert's rule and the event that fired it (docs/rules.md, "Alerts").
 */
const KEPT_MEMBERS = ['thing', 'instruction', 'rule_key', 'rule_name', 'event'] as const;

export async function receiveDeviceAlert(store: Store, principal: Principal, input: DeviceAlert): Promise<AlertRow> {
  const organisations = [principal.organisationKey];
  const now = Date.now();
  const timestamp = readTimestamp(input.timestamp, now, 'alert.timestamp');
  // The members only the server puts there are not taken from a device: an alert it raises is no
  // instruction's or rule's (docs/rules.md, "Alerts"), and one it updates keeps the server's own.
  const { instruction: _instruction, rule_key: _ruleKey, rule_name: _ruleName, ...sent } = input.data ?? {};
  return store.transaction(async (tx) => {
    if (input.alert_key) {
      const existing = await alerts.findAlert(tx, organisations, input.alert_key);
      if (existing) {
        const before = JSON.parse(existing.data) as Record<string, unknown>;
        const kept = Object.fromEntries(
          KEPT_MEMBERS.filter((name) => before[name] !== undefined).map((name) => [name, before[name]]),
        );
        const data = { ...sent, ...kept, alert_type_string: alertTypeName(input.alert_type) };
        const changes = {
          message: input.message,
          alert_type: input.alert_type,
          data: JSON.stringify(data),
          updated_at: now,
        };
        await alerts.updateAlert(tx, existing.alert_key, changes);
        const updated = { ...existing, ...changes };
        await noteAlert(tx, updated, 'update');
        for (const acknowledge of acknowledgements) await acknowledge(tx, existing, now);
        return updated;
      }
    }
    const thingKey = input.thing_key || input.device_key;
    if (!thingKey) {
      if (input.alert_key) throw notFound('alert', 'alert.alert_key');
      throw requiredParam('alert.thing_key');
    }
    const thing = await findThing(tx, organisations, thingKey);
    if (!thing) throw notFound('thing', 'alert.thing_key');
    return raiseAlert(
      tx,
      {
        organisationKey: principal.organisationKey,
        thing,
        alertType: input.alert_type,
        message: input.message,
        timestamp,
        data: sent,
      },
      now,
    );
  });
}

/** What a user does to an alert (docs/rules.md, "Alert lifecycle"). */
export type AlertStep = 'acknowledge' | 'clear';

/** The statuses each step may start from. */
const STEP_FROM: Record<AlertStep, readonly AlertStatus[]> = {
  acknowledge: ['open'],
  clear: ['open', 'acknowledged'],
};

/**
 * What another capability does, in the same transaction and before the alert changes, when a user
 * clears an alert (the rule engine registers its own, rules/engine.ts: it forgets the alert it kept
 * open, so that its rule may raise another).
 */
export type AlertClearing = (db: Executor, alert: AlertRow) => Promise<void>;

const clearings: AlertClearing[] = [];

export function onAlertCleared(clearing: AlertClearing): void {
  if (!clearings.includes(clearing)) clearings.push(clearing);
}

/**
 * Acknowledges or clears an alert for a user, recorded as `by` (the user's e-mail), with an audit
 * trail: a 404 for an alert the caller cannot see, a 409 for a step its status does not allow
 * (acknowledging a cleared alert, repeating a step).
 */
export async function stepAlert(
  store: Store,
  actor: Actor,
  by: string,
  organisationKeys: string[],
  alertKey: string,
  step: AlertStep,
  comment: string | undefined,
): Promise<AlertRow> {
  return store.transaction(async (tx) => {
    // Locked until the step commits: concurrent steps on one alert take turns.
    const before = await alerts.findAlert(tx, organisationKeys, alertKey, { lock: true });
    if (!before) throw notFound('alert', 'alert_key');
    if (!STEP_FROM[step].includes(before.status)) {
      throw conflict(
        'alert_key',
        `the alert is ${before.status}: it cannot be ${step === 'clear' ? 'cleared' : 'acknowledged'}`,
      );
    }
    if (step === 'clear') for (const clearing of clearings) await clearing(tx, before);
    const now = Date.now();
    const changes =
      step === 'acknowledge'
        ? { status: 'acknowledged' as const, acknowledged_at: now, acknowledged_by: by }
        : { status: 'cleared' as const, cleared_at: now, cleared_by: by };
    const after: AlertRow = { ...before, ...changes, comment: comment ?? before.comment, updated_at: now };
    await alerts.changeStatus(tx, alertKey, STEP_FROM[step], { ...changes, comment: after.comment, updated_at: now });
    await recordChange(
      tx,
      actor,
      {
        organisationKey: before.organisation_key,
        action: 'update',
        entityType: 'Alert',
        entityKey: alertKey,
        entityName: before.message,
        before: presentAlert(before, STORED_TIME),
        after: presentAlert(after, STORED_TIME),
        detail: after,
      },
      now,
    );
    return after;
  });
}

/**
 * Clears an alert a rule kept open (`cleared_by: "rule"`), inside the caller's transaction; nothing
 * when it is cleared already. Answers whether it changed.
 */
export async function clearAlertByRule(db: Executor, organisationKey: string, alertKey: string, now = Date.now()) {
  const changes = { status: 'cleared' as const, cleared_at: now, cleared_by: 'rule', updated_at: now };
  if (!(await alerts.changeStatus(db, alertKey, STEP_FROM.clear, changes))) return false;
  const row = await alerts.findAlert(db, [organisationKey], alertKey);
  if (row) await noteAlert(db, row, 'update');
  return true;
}

/** Whether an alert is still open or acknowledged (not cleared, not gone). */
export async function isAlertActive(db: Executor, organisationKey: string, alertKey: string): Promise<boolean> {
  const row = await alerts.findAlert(db, [organisationKey], alertKey);
  return row !== undefined && row.status !== 'cleared';
}
