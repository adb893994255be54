import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { CommonParams, Key, Nullable, OemParams } from '../core/http/schema.ts';

const Timestamp = Type.Union([Type.Integer(), Type.String()]);

export const Instruction = Type.Object({
  instruction_key: Type.String(),
  thing_key: Type.String(),
  name: Type.String(),
  description: Nullable(Type.String()),
  definition: Type.Object({}, { additionalProperties: true, description: 'what the device receives' }),
  alert_key: Type.String({ description: 'the alert of this instruction; the device acknowledges with it' }),
  status: Type.String({ description: 'pending, delivered (the device has it) or acknowledged' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const InstructionInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    definition: Type.Object(
      {},
      { additionalProperties: true, description: 'sent to the device as instruction_wrapper.instruction' },
    ),
  },
  { additionalProperties: false },
);

export const INSTRUCTION_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'name', 'status', 'instruction_key'],
  searchDescription: 'keywords matched against instruction_key, name and status',
};

export const SendInstructionParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  thing_key: Key(),
  instruction: InstructionInput,
});
export const ListInstructionsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  ...listParams(INSTRUCTION_LIST),
  thing_key: Key(),
});
export const InstructionKeyParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  thing_key: Key(),
  instruction_key: Key(),
});

export const InstructionList = ListResponse('instructions', Instruction);
export const InstructionOne = OneResponse('instruction', Instruction);
