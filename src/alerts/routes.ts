import { actorOf } from '../audit/recorder.ts';
import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import { EmptyObject } from '../core/http/schema.ts';
import type { DeviceService } from '../devices/service.ts';
import type { Store } from '../store/store.ts';
import { presentAlert } from './presenter.ts';
import {
  ALERT_LIST,
  AlertList,
  AlertOne,
  AlertStepParams,
  DeviceAlertBody,
  DeviceAlertUpdateBody,
  GetAlertParams,
  ListAlertsParams,
} from './schemas.ts';
import { type AlertStep, listAlerts, requireAlert, stepAlert } from './service.ts';

const tags = ['Alerts'];
const device = { kind: 'device' } as const;

export function alertRoutes(store: Store, devices: DeviceService): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/alerts',
      tags,
      summary: 'List alerts',
      access: permission('alert', 'read'),
      params: ListAlertsParams,
      response: AlertList,
      handler: async ({ params, time, pageEcho, visibleOrganisations }) => {
        const { total, rows } = await listAlerts(
          store.db,
          {
            organisationKeys: await visibleOrganisations(),
            thingKey: params.thing_key,
            instructionKey: params.instruction_key,
            alertTypes: params.alert_type,
            statuses: params.status,
            ruleKey: params.rule_key,
          },
          toListQuery(params, ALERT_LIST),
        );
        return listAnswer(
          'alerts',
          total,
          pageEcho,
          rows.map((r) => presentAlert(r, time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/alerts/:alert_key',
      tags,
      summary: 'Get an alert',
      access: permission('alert', 'read'),
      params: GetAlertParams,
      response: AlertOne,
      handler: async ({ params, time, visibleOrganisations }) => {
        const row = await requireAlert(store.db, await visibleOrganisations(), params.alert_key);
        return { alert: presentAlert(row, time) };
      },
    }),
    ...(['acknowledge', 'clear'] as const).map((step: AlertStep) =>
      defineRoute({
        method: 'POST',
        url: `/api/v3/alerts/:alert_key/${step}`,
        tags,
        summary: step === 'acknowledge' ? 'Acknowledge an alert' : 'Clear an alert',
        description:
          step === 'acknowledge'
            ? 'From open to acknowledged; a cleared or already acknowledged alert is a 409 (docs/rules.md, "Alert lifecycle").'
            : 'From open or acknowledged to cleared; an alert already cleared is a 409 (docs/rules.md, "Alert lifecycle").',
        access: permission('alert', 'update'),
        params: AlertStepParams,
        response: AlertOne,
        handler: async ({ params, principal, time, visibleOrganisations }) => ({
          alert: presentAlert(
            await stepAlert(
              store,
              actorOf(principal),
              // The user's e-mail; an API key's creator's (docs/rules.md, "Alert lifecycle").
              principal.email ?? principal.userName,
              await visibleOrganisations(),
              params.alert_key,
              step,
              params.comment ?? undefined,
            ),
            time,
          ),
        }),
      }),
    ),
    defineRoute({
      method: 'POST',
      url: '/api/v3/alerts',
      aliases: ['/api/v3/alerts.json'],
      tags,
      summary: 'Raise an alert, or acknowledge an instruction by its alert_key (devices)',
      access: device,
      params: DeviceAlertBody,
      response: EmptyObject,
      handler: async ({ principal, params }) => {
        await devices.alert(principal, params.alert);
        return {};
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/v3/alerts/:alert_key',
      aliases: ['/api/v3/alerts/:alert_key.json'],
      tags,
      summary: 'Acknowledge an instruction: update its alert (devices)',
      access: device,
      params: DeviceAlertUpdateBody,
      response: EmptyObject,
      handler: async ({ principal, params }) => {
        await devices.alert(principal, { ...params.alert, alert_key: params.alert_key });
        return {};
      },
    }),
  ];
}
