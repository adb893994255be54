import { actorOf } from '../audit/recorder.ts';
import { notFound } from '../core/errors.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { requireThing } from '../things/service.ts';
import { presentInstruction } from './presenter.ts';
import { findInstruction, listInstructions } from './repository.ts';
import {
  INSTRUCTION_LIST,
  InstructionKeyParams,
  InstructionList,
  InstructionOne,
  ListInstructionsParams,
  SendInstructionParams,
} from './schemas.ts';
import { type InstructionCarrier, sendInstruction } from './service.ts';

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
        const thing = await requireThing(store.db, await visibleOrganisations(), params.thing_key);
        const { total, rows } = await listInstructions(
          store.db,
          thing.organisation_key,
          thing.thing_key,
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
        const thing = await requireThing(store.db, await visibleOrganisations(), params.thing_key);
        const row = await findInstruction(store.db, thing.organisation_key, thing.thing_key, params.instruction_key);
        if (!row) throw notFound('instruction');
        return { instruction: presentInstruction(row, time) };
      },
    }),
  ];
}
