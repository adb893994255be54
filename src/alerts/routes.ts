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
  DeviceAlertBody,
  DeviceAlertUpdateBody,
  GetAlertParams,
  ListAlertsParams,
} from './schemas.ts';
import { listAlerts, requireAlert } from './service.ts';

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
