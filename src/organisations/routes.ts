import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { presentOrganisation } from './presenter.ts';
import {
  CreateOrganisationParams,
  ListOrganisationsParams,
  ORGANISATION_LIST,
  OrganisationKeyParams,
  OrganisationList,
  OrganisationOne,
  UpdateOrganisationParams,
} from './schemas.ts';
import {
  createChildOrganisation,
  deleteChildOrganisation,
  listChildOrganisations,
  readOrganisation,
  updateOrganisation,
} from './service.ts';

const tags = ['Organisations'];
const access = { kind: 'oem_admin' } as const;

export function organisationRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/organisations',
      tags,
      summary: 'List the child organisations of an OEM organisation',
      access,
      params: ListOrganisationsParams,
      response: OrganisationList,
      handler: async ({ params, principal, time, pageEcho }) => {
        const list = toListQuery(params, ORGANISATION_LIST);
        const { total, rows } = await listChildOrganisations(store.db, principal.organisationKey, list);
        return listAnswer(
          'organisations',
          total,
          pageEcho,
          rows.map((r) => presentOrganisation(r, time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/organisations/:organisation_key',
      tags,
      summary: 'Get the own organisation (any account admin) or a child organisation (an OEM account admin)',
      access: { kind: 'account_admin' },
      params: OrganisationKeyParams,
      response: OrganisationOne,
      handler: async ({ params, principal, time }) => ({
        organisation: presentOrganisation(await readOrganisation(store.db, principal, params.organisation_key), time),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/organisations',
      tags,
      summary: 'Create a child organisation',
      description: 'The new organisation gets its built-in roles (Account Admin, Agent) and a Default thing template.',
      access,
      params: CreateOrganisationParams,
      response: OrganisationOne,
      handler: async ({ params, principal, time }) => {
        const row = await createChildOrganisation(
          store,
          actorOf(principal),
          principal.organisationKey,
          params.organisation,
        );
        return { organisation: presentOrganisation(row, time) };
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/organisations/:organisation_key',
      tags,
      summary: 'Update the own organisation (any account admin) or a child organisation (an OEM account admin)',
      description:
        'retention_days and rollup_retention_days: whole days from 1 to 36500, or null for ever (docs/storage.md). is_oem and events_per_second (events a second, beyond which 429; null: the server default; 0: no limit; docs/operations.md) are set by the parent only.',
      access: { kind: 'account_admin' },
      params: UpdateOrganisationParams,
      response: OrganisationOne,
      handler: async ({ params, principal, time }) => {
        const row = await updateOrganisation(
          store,
          actorOf(principal),
          principal,
          params.organisation_key,
          params.organisation,
        );
        return { organisation: presentOrganisation(row, time) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/organisations/:organisation_key',
      tags,
      summary: 'Delete a child organisation and all its data',
      access,
      params: OrganisationKeyParams,
      handler: async ({ params, principal }) => {
        await deleteChildOrganisation(store, actorOf(principal), principal.organisationKey, params.organisation_key);
        return {};
      },
    }),
  ];
}
