import { actorOf } from '../audit/recorder.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { TimeFormatter } from '../core/time.ts';
import { DemoAnswer, DemoParams, StartDemoParams } from './schemas.ts';
import type { DemoService, DemoStatus } from './service.ts';

const tags = ['Demo'];

const presentDemo = (status: DemoStatus, time: TimeFormatter) => ({
  demo: {
    running: status.running,
    simulated: true as const,
    devices: status.devices,
    rate: status.rate,
    thing_keys: status.thingKeys,
    started_at: status.startedAt === null ? null : time(status.startedAt),
    readings_sent: status.sent,
    readings_stored: status.stored,
    readings_refused: status.refused,
  },
});

export function demoRoutes(demos: DemoService): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/demo',
      tags,
      summary: "Whether the organisation's demo of simulated machines runs on this instance",
      access: permission('thing', 'read'),
      params: DemoParams,
      response: DemoAnswer,
      handler: ({ principal, time }) => presentDemo(demos.status(principal.organisationKey), time),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v3/demo',
      tags,
      summary: 'Start simulated machines that send readings through the device interface',
      description:
        'Things demo-<organisation key>-1 ... -N (described as simulated) register and send readings with a key pair of their ' +
        'own (role Agent, which the caller must be able to grant), until stopped; 409 when already running.',
      access: permission('thing', 'create'),
      params: StartDemoParams,
      response: DemoAnswer,
      handler: async ({ principal, params, time }) =>
        presentDemo(
          await demos.start(principal, actorOf(principal), {
            devices: params.demo?.devices ?? 5,
            rate: params.demo?.rate ?? 1,
          }),
          time,
        ),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v3/demo',
      tags,
      summary: 'Stop the demo; its key pair is deleted, its things and readings stay',
      access: permission('thing', 'create'),
      params: DemoParams,
      response: DemoAnswer,
      handler: async ({ principal, time }) =>
        presentDemo(await demos.stop(principal.organisationKey, actorOf(principal)), time),
    }),
  ];
}
