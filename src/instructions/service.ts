/**
 * Instructions (docs/devices.md, "Instructions"): a message to a bi-directional thing. Sending stores
 * it with its alert (Info, carrying the instruction) in one transaction, audited, and then hands it to
 * the MQTT side, which delivers it to the devices listening for it; the device's acknowledgement (an
 * alert naming the alert_key) updates that alert and marks the instruction acknowledged
 * (alerts/service.ts).
 */
import { onAlertAcknowledged, raiseAlert } from '../alerts/service.ts';
import { type Actor, recordChange } from '../audit/recorder.ts';
import { invalidParam, notFound } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import { STORED_TIME } from '../core/time.ts';
import { type Executor, noteChange, type Store } from '../store/store.ts';
import type { InstructionRow } from '../store/tables.ts';
import { requireThing } from '../things/service.ts';
import { presentInstruction } from './presenter.ts';
import * as instructions from './repository.ts';

export interface InstructionInput {
  name: string;
  description?: string | null | undefined;
  definition: Record<string, unknown>;
}

/** What carries instructions to devices (the MQTT broker, embedded or external). */
export interface InstructionCarrier {
  send(instruction: InstructionRow): Promise<void>;
}

/** `data.instruction` of the instruction's alert (docs/rules.md, "Alerts"). */
const alertView = (row: InstructionRow) => {
  const { definition, description, instruction_key, name, created_at, updated_at } = presentInstruction(
    row,
    STORED_TIME,
  );
  return { definition, description, instruction_key, name, created_at, updated_at };
};

/** A device's acknowledgement of an instruction's alert acknowledges the instruction. */
onAlertAcknowledged(async (db, alert, now) => {
  if (alert.instruction_key === null) return;
  const row = await instructions.markAcknowledged(db, alert.instruction_key, now);
  if (row) await noteStatus(db, row);
});

/** Tells the change feed an instruction's new status (realtime push, docs/realtime.md). */
function noteStatus(db: Executor, row: InstructionRow) {
  return noteChange(db, {
    entityType: 'Instruction',
    organisationKey: row.organisation_key,
    entityKey: row.instruction_key,
    action: 'update',
    detail: row,
  });
}

export async function sendInstruction(
  store: Store,
  carrier: InstructionCarrier | undefined,
  actor: Actor,
  organisationKeys: string[],
  thingKey: string,
  input: InstructionInput,
): Promise<InstructionRow> {
  const row = await store.transaction(async (tx) => {
    const thing = await requireThing(tx, organisationKeys, thingKey);
    if (thing.bi_directional !== 1) {
      throw invalidParam('thing_key', 'names a thing that is not bi-directional: it takes no instructions');
    }
    const now = Date.now();
    const instruction: InstructionRow = {
      instruction_key: newKey(),
      organisation_key: thing.organisation_key,
      thing_key: thing.thing_key,
      name: input.name,
      description: input.description ?? null,
      definition: JSON.stringify(input.definition),
      alert_key: newKey(),
      status: 'pending',
      delivered_at: null,
      acknowledged_at: null,
      created_at: now,
      updated_at: now,
    };
    await instructions.insertInstruction(tx, instruction);
    await raiseAlert(
      tx,
      {
        organisationKey: thing.organisation_key,
        thing,
        alertType: 0,
        message: `Instruction ${instruction.name} sent to ${thing.name}`,
        timestamp: now,
        alertKey: instruction.alert_key,
        instruction: { instruction_key: instruction.instruction_key, name: instruction.name },
        data: { instruction: alertView(instruction) },
      },
      now,
    );
    await recordChange(tx, actor, {
      organisationKey: thing.organisation_key,
      action: 'create',
      entityType: 'Instruction',
      entityKey: instruction.instruction_key,
      entityName: instruction.name,
      after: presentInstruction(instruction, STORED_TIME),
      detail: instruction,
    });
    return instruction;
  });
  // Stored first: a device that is not connected now gets it when it subscribes again.
  await carrier?.send(row);
  return row;
}

/** A page of the instructions of a thing the caller can see. */
export async function listInstructionsOfThing(
  db: Executor,
  organisationKeys: string[],
  thingKey: string,
  list: ListQuery,
) {
  const thing = await requireThing(db, organisationKeys, thingKey);
  return instructions.listInstructions(db, thing.organisation_key, thing.thing_key, list);
}

/** An instruction of a thing the caller can see. */
export async function requireInstruction(
  db: Executor,
  organisationKeys: string[],
  thingKey: string,
  instructionKey: string,
): Promise<InstructionRow> {
  const thing = await requireThing(db, organisationKeys, thingKey);
  const row = await instructions.findInstruction(db, thing.organisation_key, thing.thing_key, instructionKey);
  if (!row) throw notFound('instruction', 'instruction_key');
  return row;
}

/** The instructions of an organisation (one thing, or all) not yet acknowledged, newest first: sent again when a device subscribes. */
export function unacknowledgedInstructions(db: Executor, organisationKey: string, thingKey: string | undefined) {
  return instructions.unacknowledged(db, organisationKey, thingKey);
}

/** The newest `limit` instructions no device or broker has taken yet, of every organisation. */
export function pendingInstructions(db: Executor, limit: number) {
  return instructions.pendingEverywhere(db, limit);
}

/** A device has the instruction's message (docs/devices.md, "Instructions"). */
export async function markInstructionDelivered(db: Executor, alertKey: string): Promise<void> {
  const row = await instructions.markDelivered(db, alertKey);
  if (row) await noteStatus(db, row);
}

/** An instruction of an organisation, or undefined (realtime push reads one it was told of without detail). */
export function findInstructionByKey(db: Executor, organisationKey: string, key: string) {
  return instructions.findInstructionByKey(db, organisationKey, key);
}
