import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { presentTemplate } from './presenter.ts';
import {
  CreateTemplateParams,
  ListTemplatesParams,
  TEMPLATE_LIST,
  TemplateKeyParams,
  TemplateList,
  TemplateOne,
  UpdateTemplateParams,
} from './schemas.ts';
import {
  checkRetentionChange,
  createTemplate,
  deleteTemplate,
  listTemplates,
  requireTemplate,
  updateTemplate,
} from './service.ts';

const tags = ['Thing templates'];

export function templateRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/thing_templates',
      tags,
      summary: 'List thing templates',
      access: permission('thing_template', 'read'),
      params: ListTemplatesParams,
      response: TemplateList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const list = toListQuery(params, TEMPLATE_LIST);
        const { total, rows } = await listTemplates(store.db, await visibleOrganisations(), list);
        return listAnswer(
          'thing_templates',
          total,
          pageEcho,
          rows.map((r) => presentTemplate(r, time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/thing_templates/:thing_template_key',
      tags,
      summary: 'Get a thing template',
      access: permission('thing_template', 'read'),
      params: TemplateKeyParams,
      response: TemplateOne,
      handler: async ({ params, time, visibleOrganisations }) => ({
        thing_template: presentTemplate(
          await requireTemplate(store.db, await visibleOrganisations(), params.thing_template_key),
          time,
        ),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/thing_templates',
      tags,
      summary: 'Create a thing template',
      access: permission('thing_template', 'create'),
      params: CreateTemplateParams,
      response: TemplateOne,
      handler: async ({ params, principal, time, targetOrganisation }) => {
        checkRetentionChange(principal, params.thing_template);
        const row = await createTemplate(store, actorOf(principal), await targetOrganisation(), params.thing_template);
        return { thing_template: presentTemplate(row, time) };
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/thing_templates/:thing_template_key',
      tags,
      summary: 'Update a thing template',
      access: permission('thing_template', 'update'),
      params: UpdateTemplateParams,
      response: TemplateOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        checkRetentionChange(principal, params.thing_template);
        const row = await updateTemplate(
          store,
          actorOf(principal),
          await visibleOrganisations(),
          params.thing_template_key,
          params.thing_template,
        );
        return { thing_template: presentTemplate(row, time) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/thing_templates/:thing_template_key',
      tags,
      summary: 'Delete a thing template',
      description: 'A template that things use, and the Default template, cannot be deleted (409).',
      access: permission('thing_template', 'delete'),
      params: TemplateKeyParams,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteTemplate(store, actorOf(principal), await visibleOrganisations(), params.thing_template_key);
        return {};
      },
    }),
  ];
}
