import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { presentInstruction } from './presenter.ts';
import {
  INSTRUCTION_LIST,
  InstructionKeyParams,
  InstructionList,
  InstructionOne,
  ListInstructionsParams,
  SendInstructionParams,
} from './schemas.ts';
import { type InstructionCarrier, listInstructionsOfThing, requireInstruction, sendInstruction } from './service.ts';

const tags = ['Instructions'];

/** `carrier` is looked up at each request: the MQTT side starts after the routes are declared. */
export function instructionRoutes(store: Store, carrier: () => InstructionCarrier | undefined): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api/v3/things/:thing_key/instructions',
      tags,
      summary: 'Send an instruction to a bi-directional thing',
      description:
        'Stored with its alert, then delivered over MQTT at QoS 2; sent again when the device subscribes again, until acknowledged.',
      access: permission('instruction', 'create'),
      params: SendInstructionParams,
      response: InstructionOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        const row = await sendInstruction(
          store,
          carrier(),
          actorOf(principal),
          await visibleOrganisations(),
          params.thing_key,
          params.instruction,
        );
        return { instruction: presentInstruction(row, time) };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/things/:thing_key/instructions',
      tags,
      summary: 'List the instructions of a thing with their status',
      access: permission('instruction', 'read'),
      params: ListInstructionsParams,
      response: InstructionList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const { total, rows } = await listInstructionsOfThing(
          store.db,
          await visibleOrganisations(),
          params.thing_key,
          toListQuery(params, INSTRUCTION_LIST),
        );
        return listAnswer(
          'instructions',
          total,
          pageEcho,
          rows.map((r) => presentInstruction(r, time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/things/:thing_key/instructions/:instruction_key',
      tags,
      summary: 'Get an instruction',
      access: permission('instruction', 'read'),
      params: InstructionKeyParams,
      response: InstructionOne,
      handler: async ({ params, time, visibleOrganisations }) => {
        const row = await requireInstruction(
          store.db,
          await visibleOrganisations(),
          params.thing_key,
          params.instruction_key,
        );
        return { instruction: presentInstruction(row, time) };
      },
    }),
  ];
}
