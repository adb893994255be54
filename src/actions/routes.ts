import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import { EmptyObject } from '../core/http/schema.ts';
import { grants } from '../core/permissions.ts';
import type { Principal } from '../core/principal.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { TimeFormatter } from '../core/time.ts';
import type { Store } from '../store/store.ts';
import type { NotificationAction } from '../store/tables.ts';
import { redactedAction } from './credentials.ts';
import { type AnswerKind, presentAction } from './presenter.ts';
import { ActionList, ActionOne, actionSchemas, DELIVERY_LIST, DeliveryList, ListDeliveriesParams } from './schemas.ts';
import {
  createAction,
  deleteAction,
  listActionsOfRule,
  listDeliveriesOfAction,
  refusePrivateUrl,
  requireAction,
  updateAction,
} from './service.ts';
import type { ApiVersion } from './versions.ts';

const tags = ['Notification actions'];

export function actionRoutes(
  store: Store,
  box: SecretBox,
  publicBaseUrl: string,
  /** ALLOW_PRIVATE_WEBHOOKS: URLs naming private addresses are taken. */
  allowPrivateWebhooks = false,
): AnyRoute[] {
  return [
    ...versionRoutes(store, box, publicBaseUrl, 'v3', allowPrivateWebhooks),
    ...versionRoutes(store, box, publicBaseUrl, 'v2', allowPrivateWebhooks),
    deliveriesRoute(store),
  ];
}

function versionRoutes(
  store: Store,
  box: SecretBox,
  publicBaseUrl: string,
  version: ApiVersion,
  allowPrivateWebhooks: boolean,
): AnyRoute[] {
  const schemas = actionSchemas(version);
  const base = `/api/${version}/notification_actions`;
  const present = (row: NotificationAction, time: TimeFormatter, answer: AnswerKind = 'read') =>
    presentAction(row, version, time, publicBaseUrl, answer);
  /**
   * A read's answer: whole to a caller who may change the action (and so must see what it edits),
   * else with its credentials redacted as audit trails show them (docs/rules.md, "Notification actions").
   */
  const presentRead = (row: NotificationAction, time: TimeFormatter, principal: Principal) =>
    present(grants(principal.abilities, 'notification_action', 'update') ? row : redactedAction(row), time);
  return [
    defineRoute({
      method: 'GET',
      url: base,
      tags,
      summary: `List the notification actions of a rule (${version})`,
      description: 'search and scope are accepted and ignored.',
      access: permission('notification_action', 'read'),
      params: schemas.ListParams,
      response: ActionList,
      handler: async ({ params, principal, time, pageEcho, visibleOrganisations }) => {
        const { total, rows } = await listActionsOfRule(
          store.db,
          box,
          await visibleOrganisations(),
          version,
          params.rule_key,
          params.type,
          toListQuery(params, schemas.list),
        );
        return listAnswer(
          'notification_actions',
          total,
          pageEcho,
          rows.map((r) => presentRead(r, time, principal)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: `${base}/:notification_action_key`,
      tags,
      summary: `Get a notification action (${version})`,
      access: permission('notification_action', 'read'),
      params: schemas.KeyParams,
      response: ActionOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        const row = await requireAction(
          store.db,
          box,
          await visibleOrganisations(),
          version,
          params.notification_action_key,
        );
        return { notification_action: presentRead(row, time, principal) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: base,
      tags,
      summary: `Create a notification action of a rule (${version})`,
      access: permission('notification_action', 'create'),
      params: schemas.CreateParams,
      response: ActionOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        if (!allowPrivateWebhooks) refusePrivateUrl((params.notification_action as { url?: unknown }).url);
        const row = await createAction(
          store,
          box,
          actorOf(principal),
          await visibleOrganisations(),
          version,
          params.notification_action as Parameters<typeof createAction>[5],
        );
        return { notification_action: present(row, time, 'create') };
      },
    }),
    defineRoute({
      method: 'PUT',
      url: `${base}/:notification_action_key`,
      tags,
      summary: `Update a notification action (${version}); type is required`,
      access: permission('notification_action', 'update'),
      params: schemas.UpdateParams,
      response: ActionOne,
      handler: async ({ params, principal, time, visibleOrganisations }) => {
        if (!allowPrivateWebhooks) refusePrivateUrl((params.notification_action as { url?: unknown }).url);
        const row = await updateAction(
          store,
          box,
          actorOf(principal),
          await visibleOrganisations(),
          principal.organisationKey,
          version,
          params.notification_action_key,
          params.notification_action as Parameters<typeof updateAction>[7],
        );
        return { notification_action: present(row, time, 'update') };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: `${base}/:notification_action_key`,
      tags,
      summary: `Delete a notification action (${version})`,
      access: permission('notification_action', 'delete'),
      params: schemas.KeyParams,
      response: EmptyObject,
      handler: async ({ params, principal, visibleOrganisations }) => {
        await deleteAction(
          store,
          actorOf(principal),
          await visibleOrganisations(),
          version,
          params.notification_action_key,
        );
        return {};
      },
    }),
  ];
}

function deliveriesRoute(store: Store): AnyRoute {
  return defineRoute({
    method: 'GET',
    url: '/api/v3/notification_actions/:notification_action_key/deliveries',
    tags,
    summary: 'List the delivery attempts of a notification action, newest first',
    access: permission('notification_action', 'read'),
    params: ListDeliveriesParams,
    response: DeliveryList,
    handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
      const { total, rows } = await listDeliveriesOfAction(
        store.db,
        await visibleOrganisations(),
        params.notification_action_key,
        toListQuery(params, DELIVERY_LIST),
      );
      return listAnswer(
        'deliveries',
        total,
        pageEcho,
        rows.map((r) => ({
          delivery_key: r.delivery_key,
          attempt: r.attempt,
          status: r.status,
          error: r.error,
          at: time(r.at),
          duration_ms: r.duration_ms,
          rule_key: r.rule_key,
          rule_name: r.rule_name,
          thing_key: r.thing_key,
          thing_name: r.thing_name,
          alert_key: r.alert_key,
          message: r.message,
        })),
      );
    },
  });
}
