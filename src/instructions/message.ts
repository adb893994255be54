/**
 * The text a device receives for an instruction (docs/devices.md, "Instructions"): compact ASCII JSON,
 * members in this order, signed with the key pair's secret over the text before `,"access_key"` closed
 * with `}`.
 */
import { createHmac } from 'node:crypto';
import type { InstructionRow } from '../store/tables.ts';

/** JSON text with every non-ASCII character escaped as \uXXXX, as the SDKs expect. */
const asciiJson = (value: unknown): string =>
  JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

export function instructionMessage(instruction: InstructionRow, accessKey: string, secretKey: string): string {
  const signed =
    `{"timestamp":${instruction.created_at},"thing_key":${asciiJson(instruction.thing_key)},` +
    `"alert_key":${asciiJson(instruction.alert_key)},` +
    `"instruction_wrapper":{"instruction":${asciiJson(JSON.parse(instruction.definition))}}}`;
  const hash = createHmac('sha256', secretKey).update(signed).digest('hex');
  return `${signed.slice(0, -1)},"access_key":${asciiJson(accessKey)},"hash":"${hash}"}`;
}
