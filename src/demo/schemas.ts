import { Type } from '@sinclair/typebox';
import { CommonParams } from '../core/http/schema.ts';

export const DemoParams = Type.Object({ ...CommonParams });

export const StartDemoParams = Type.Object({
  ...CommonParams,
  demo: Type.Optional(
    Type.Object(
      {
        devices: Type.Optional(
          Type.Integer({ minimum: 1, maximum: 20, default: 5, description: 'simulated machines' }),
        ),
        rate: Type.Optional(
          Type.Number({ exclusiveMinimum: 0, maximum: 10, default: 1, description: 'readings a second from each' }),
        ),
      },
      { additionalProperties: false },
    ),
  ),
});

export const DemoAnswer = Type.Object({
  demo: Type.Object({
    running: Type.Boolean(),
    simulated: Type.Literal(true, { description: 'always true: the demo machines are not real devices' }),
    devices: Type.Integer(),
    rate: Type.Number(),
    thing_keys: Type.Array(Type.String()),
    started_at: Type.Union([Type.Integer(), Type.String(), Type.Null()]),
    readings_sent: Type.Integer(),
    readings_stored: Type.Integer(),
    readings_refused: Type.Integer(),
  }),
});
