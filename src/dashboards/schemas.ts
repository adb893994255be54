import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { namedPattern } from '../core/http/pattern-messages.ts';
import { ChildOrganisationParams, CommonParams, Key, Nullable, OemParams, StringEnum } from '../core/http/schema.ts';
import {
  AGGREGATES,
  ALERT_STATUSES,
  MAX_DASHBOARD_NAME,
  MAX_SOURCE_THINGS,
  MAX_WIDGETS,
  WIDGET_TYPES,
} from './widgets.ts';

const LastRange = Type.Object(
  {
    last: Type.String({
      pattern: namedPattern(
        '^[1-9][0-9]{0,5}[mhd]$',
        'must be like 15m, 24h or 7d: 1 to 999999 minutes (m), hours (h) or days (d)',
      ),
      description: 'the last n minutes, hours or days: 15m, 1h, 7d',
    }),
  },
  { additionalProperties: false },
);
const FixedRange = Type.Object(
  {
    // The instants the queries read (a time series groups by time, which reads up to 8.6e12).
    from: Type.Integer({ minimum: -8_640_000_000_000, maximum: 8_600_000_000_000, description: 'epoch seconds' }),
    to: Type.Integer({
      minimum: -8_640_000_000_000,
      maximum: 8_600_000_000_000,
      description: 'epoch seconds, not before from',
    }),
  },
  { additionalProperties: false },
);
const TimeRange = Type.Union([LastRange, FixedRange], {
  description: 'the time range the widgets share: {"last": "1h"} or {"from", "to"} in epoch seconds',
});

const Variable = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64, description: 'a letter or _, then letters, digits or _' }),
    thing_template_key: Key('the template of the things the variable chooses from'),
  },
  { additionalProperties: false },
);

const Source = Type.Object(
  {
    thing_keys: Type.Optional(
      Type.Array(Type.String(), { maxItems: MAX_SOURCE_THINGS, description: 'thing keys, or "$<variable>"' }),
    ),
    group_key: Type.Optional(Type.String()),
    thing_template_key: Type.Optional(Type.String()),
  },
  { description: 'exactly one of thing_keys, group_key, thing_template_key' },
);

/** A widget as answered: the common fields, and those of its type (docs/api.md, "Dashboards"). */
export const Widget = Type.Object({
  widget_key: Type.String({ description: 'kept as given; generated when absent (10 characters of 0-9a-z)' }),
  type: StringEnum([...WIDGET_TYPES]),
  title: Type.String(),
  layout: Type.Object({
    x: Type.Integer({ minimum: 0 }),
    y: Type.Integer({ minimum: 0 }),
    w: Type.Integer({ minimum: 1, description: 'columns of the 12-column grid; x + w <= 12' }),
    h: Type.Integer({ minimum: 1 }),
  }),
  source: Type.Optional(Source),
  metrics: Type.Optional(
    Type.Array(Type.String(), { maxItems: 8, description: 'timeseries: 1-8 (required); things: 0-8' }),
  ),
  aggregate: Type.Optional(
    StringEnum([...AGGREGATES], { description: 'timeseries: one line per metric across the things' }),
  ),
  thing_key: Type.Optional(Type.String({ description: 'value, gauge: a thing key or "$<variable>"' })),
  metric: Type.Optional(Type.String({ description: 'value, gauge' })),
  unit: Type.Optional(Type.String()),
  thresholds: Type.Optional(
    Type.Array(Type.Object({ from: Type.Number(), color: Type.String({ description: '#rrggbb' }) }), {
      description: 'value, gauge: ascending by from',
    }),
  ),
  min: Type.Optional(Type.Number({ description: 'gauge' })),
  max: Type.Optional(Type.Number({ description: 'gauge' })),
  status: Type.Optional(Type.Array(StringEnum([...ALERT_STATUSES]), { description: 'alerts: statuses shown' })),
  text: Type.Optional(Type.String({ description: 'text: Markdown, at most 8 KiB, never drawn as HTML' })),
});

export const Dashboard = Type.Object({
  dashboard_key: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  time_range: TimeRange,
  variables: Type.Array(Variable),
  widgets: Type.Array(Widget),
  created_at: Type.Union([Type.Integer(), Type.String()]),
  updated_at: Type.Union([Type.Integer(), Type.String()]),
});

/** Widgets are checked field by field by widgets.ts, which names the field of each mistake. */
const WidgetsInput = Type.Array(
  // No type here: widgets.ts refuses anything but an object as `dashboard.widgets[0]`, as it names the
  // field of any other mistake.
  Type.Unsafe<Record<string, unknown>>({
    description:
      'a widget, an object: {"widget_key"?, "type", "title", "layout": {x, y, w, h}} and the fields of its type (see the Dashboard schema)',
  }),
  { description: `at most ${MAX_WIDGETS}; the whole dashboard at most 256 KiB of JSON` },
);

const fields = {
  name: Type.String({ minLength: 1, maxLength: MAX_DASHBOARD_NAME }),
  description: Nullable(Type.String({ maxLength: 2000 })),
  time_range: TimeRange,
  // Checked field by field by widgets.ts, which names the field of each mistake, as for widgets.
  variables: Type.Array(
    Type.Unsafe<Record<string, unknown>>({
      description: 'a variable, an object: {"name", "thing_template_key"} (see the Dashboard schema)',
    }),
    { maxItems: 20 },
  ),
  widgets: WidgetsInput,
};

export const DashboardInput = Type.Object(
  {
    name: fields.name,
    description: Type.Optional(fields.description),
    time_range: Type.Optional(fields.time_range),
    variables: Type.Optional(fields.variables),
    widgets: Type.Optional(fields.widgets),
  },
  { additionalProperties: false },
);

/** A dashboard as Export writes it (the Dashboard object): its keys and times are read and not kept. */
export const ExportedDashboard = Type.Object(
  {
    ...DashboardInput.properties,
    dashboard_key: Type.Optional(Type.String({ description: 'the exported dashboard’s; the copy gets a new one' })),
    created_at: Type.Optional(Type.Union([Type.Integer(), Type.String()], { description: 'not kept' })),
    updated_at: Type.Optional(Type.Union([Type.Integer(), Type.String()], { description: 'not kept' })),
  },
  { additionalProperties: false },
);

export const DashboardChanges = Type.Object(
  {
    name: Type.Optional(fields.name),
    description: Type.Optional(fields.description),
    time_range: Type.Optional(fields.time_range),
    variables: Type.Optional(fields.variables),
    widgets: Type.Optional(fields.widgets),
  },
  { additionalProperties: false },
);

export const DASHBOARD_LIST: ListSpec = {
  defaultPer: 20,
  sortable: ['created_at', 'updated_at', 'name', 'dashboard_key'],
  searchDescription: 'keywords matched against dashboard_key, name and description',
};

export const ListDashboardsParams = Type.Object({ ...CommonParams, ...OemParams, ...listParams(DASHBOARD_LIST) });
export const DashboardKeyParams = Type.Object({ ...CommonParams, ...OemParams, dashboard_key: Key() });
export const CreateDashboardParams = Type.Object({
  ...CommonParams,
  ...ChildOrganisationParams,
  dashboard: DashboardInput,
});
export const ImportDashboardParams = Type.Object({
  ...CommonParams,
  ...ChildOrganisationParams,
  dashboard: ExportedDashboard,
});
export const UpdateDashboardParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  dashboard_key: Key(),
  dashboard: DashboardChanges,
});

export const DashboardList = ListResponse('dashboards', Dashboard);
export const DashboardOne = OneResponse('dashboard', Dashboard);
