import type { TimeFormatter } from '../core/time.ts';
import type { InstructionRow } from '../store/tables.ts';

export function presentInstruction(row: InstructionRow, time: TimeFormatter) {
  return {
    instruction_key: row.instruction_key,
    thing_key: row.thing_key,
    name: row.name,
    description: row.description,
    definition: JSON.parse(row.definition) as Record<string, unknown>,
    alert_key: row.alert_key,
    status: row.status,
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
  };
}
