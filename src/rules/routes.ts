import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import { EmptyObject } from '../core/http/schema.ts';
import type { Store } from '../store/store.ts';
import { presentRule } from './presenter.ts';
import {
  CreateRuleParams,
  ListRulesParams,
  RULE_LIST,
  RuleKeyParams,
  RuleList,
  RuleOne,
  UpdateRuleParams,
} from './schemas.ts';
import { createRule, deleteRule, listRules, requireRule, updateRule } from './service.ts';

const tags = ['Rules'];

export function ruleRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/rules',
      tags,
      summary: 'List rules',
      access: permission('rule', 'read'),
      params: ListRulesParams,
      response: RuleList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const { total, rows } = await listRules(
          store.db,
          {
            organisationKeys: await visibleOrganisations(),
            thingTemplateKey: params.thing_template_key,
            groupKey: params.group_key,
            enabled: params.enabled,
          },
          toListQuery(params, RULE_LIST),
        );
        return listAnswer(
          'rules',
          total,
          pageEcho,
          rows.map((r) => presentRule(r, time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/rules/:rule_key',
      tags,
      summary: 'Get a rule',
      access: permission('rule', 'read'),
      params: RuleKeyParams,
      response: RuleOne,
      handler: async ({ params, time, visibleOrganisations }) => ({
        rule: presentRule(await requireRule(store.db, await visibleOrganisations(), params.rule_key), time),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/rules',
      tags,
      summary: 'Create a rule',
      description:
        'The rule watches the union of thing_template_key, thing_keys and group_key (none: every thing) and fires when condition holds (docs/rules.md).',
      access: permission('rule', 'create'),
      params: CreateRuleParams,
      response: RuleOne,
      handler: async ({ params, principal, time, targetOrganisation }) => ({
        rule: presentRule(await createRule(store, actorOf(principal), await targetOrganisation(), params.rule), time),
      }),
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/rules/:rule_key',
      tags,
      summary: 'Update a rule',
      access: permission('rule', 'update'),
      params: UpdateRuleParams,
      response: RuleOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => ({
        rule: presentRule(
          await updateRule(store, actorOf(principal), await visibleOrganisations(), params.rule_key, params.rule),
          time,
        ),
      }),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/rules/:rule_key',
      tags,
      summary: 'Delete a rule with its notification actions',
      access: permission('rule', 'delete'),
      params: RuleKeyParams,
      response: EmptyObject,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteRule(store, actorOf(principal), await visibleOrganisations(), params.rule_key);
        return {};
      },
    }),
  ];
}
