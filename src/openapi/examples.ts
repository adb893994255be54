/**
 * Example requests written by hand, keyed by operation id (document.ts): where an example made from
 * the schema alone would not show how the operation is meant to be used, or would fail when run as
 * it is from /docs (a read whose made-up key names nothing). Every example is checked against its
 * operation's schema by test/api/openapi.test.ts.
 */
export const EXAMPLES: Record<string, Record<string, unknown>> = {
  postApiSignIn: { email: 'admin@localhost', password: 'the password printed at first start' },
  postQueryThingData: { per: 10, order: 'desc', timestamp_format: 'str', time_zone: 'UTC' },
  postQueryThingAggregatedData: { functions: ['avg', 'min', 'max'] },
  postQueryFleetAggregatedData: { functions: ['avg', 'min', 'max'], timestamp_format: 'str' },
  postExpressionsValidate: { expression: "temperature > 80 and thing.name == 'boiler'", kind: 'rule' },
  postThings: {
    thing: { name: 'Boiler 7', thing_template_key: 'k3y0example', tags: 'boiler,plant-7', bi_directional: true },
  },
  postThingsImport: {
    mode: 'upsert',
    dry_run: true,
    things: [
      { thing_key: 'boiler-7', name: 'Boiler 7', tags: 'boiler,plant-7' },
      { thing_key: 'boiler-8', name: 'Boiler 8', user_defined_properties: { site: 'Pune' } },
    ],
  },
  postRules: {
    rule: {
      name: 'Boiler too hot',
      condition: 'temperature > 80',
      thing_template_key: 'k3y0example',
      alert_type: 2,
      alert_message: 'Boiler too hot',
    },
  },
  postKeyPairs: { key_pair: { name: 'Line 3 gateway' } },
  postRoles: { role: { name: 'Viewers', abilities: [11, 91, 121] } },
  getAlerts: { page: 1, per: 10, status: ['open'] },
  getAuditTrails: { page: 1, per: 10, entity_type: 'Thing' },
  postDashboards: {
    dashboard: {
      name: 'Line 3',
      time_range: { last: '24h' },
      variables: [{ name: 'boiler', thing_template_key: 'k3y0example' }],
      widgets: [
        {
          type: 'timeseries',
          title: 'Fleet temperature',
          layout: { x: 0, y: 0, w: 8, h: 4 },
          source: { thing_template_key: 'k3y0example' },
          metrics: ['temperature'],
          aggregate: 'avg',
        },
        {
          type: 'gauge',
          title: 'Pressure',
          layout: { x: 8, y: 0, w: 4, h: 4 },
          thing_key: '$boiler',
          metric: 'pressure',
          unit: 'bar',
          min: 0,
          max: 10,
          thresholds: [
            { from: 0, color: '#2e7d32' },
            { from: 8, color: '#c62828' },
          ],
        },
        { type: 'text', title: 'Notes', layout: { x: 0, y: 4, w: 12, h: 2 }, text: '**Shift A** checks at 06:00' },
      ],
    },
  },
};
