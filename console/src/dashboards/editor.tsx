/**
 * Editing a dashboard's widgets: `Add widget` with the type's fields, and each widget's layout changed
 * with buttons (`Move left`, `Wider`...) that work from the keyboard, on the API's 12-column grid.
 */
import { useState } from 'preact/hooks';
import { Field } from '../components/field.tsx';
import { loadGroups } from '../components/group-select.tsx';
import { loadTemplates } from '../components/template-select.tsx';
import { useLoad } from '../components/use-load.ts';
import { WIDGET_TYPES, type Widget, type WidgetType } from './model.ts';

const COLUMNS = 12;

type Layout = Widget['layout'];

/** The layout steps the buttons take, each kept on the grid. */
const STEPS: { label: string; step: (l: Layout) => Layout }[] = [
  { label: 'Move left', step: (l) => ({ ...l, x: Math.max(0, l.x - 1) }) },
  { label: 'Move right', step: (l) => ({ ...l, x: Math.min(COLUMNS - l.w, l.x + 1) }) },
  { label: 'Move up', step: (l) => ({ ...l, y: Math.max(0, l.y - 1) }) },
  { label: 'Move down', step: (l) => ({ ...l, y: l.y + 1 }) },
  { label: 'Narrower', step: (l) => ({ ...l, w: Math.max(1, l.w - 1) }) },
  { label: 'Wider', step: (l) => ({ ...l, w: Math.min(COLUMNS - l.x, l.w + 1) }) },
  { label: 'Shorter', step: (l) => ({ ...l, h: Math.max(1, l.h - 1) }) },
  { label: 'Taller', step: (l) => ({ ...l, h: Math.min(100, l.h + 1) }) },
];

const overlap = (a: Layout, b: Layout): boolean =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

/**
 * The widgets with widget `moved` given `layout`, any widget it now covers pushed down below it (and
 * so on), so that a step from the keyboard never leaves two widgets on the same cells.
 */
export function place(widgets: Widget[], moved: number, layout: Layout): Widget[] {
  const placed = widgets.map((w, i) => ({ ...w, layout: i === moved ? layout : { ...w.layout } }));
  const queue = [moved];
  for (let steps = 0; queue.length > 0 && steps < 10_000; steps++) {
    const pusher = placed[queue.shift() as number]?.layout;
    if (!pusher) continue;
    placed.forEach((w, i) => {
      if (w.layout === pusher || !overlap(pusher, w.layout)) return;
      w.layout.y = pusher.y + pusher.h;
      queue.push(i);
    });
  }
  return placed;
}

const ARROWS: Record<string, [string, string]> = {
  ArrowLeft: ['Move left', 'Narrower'],
  ArrowRight: ['Move right', 'Wider'],
  ArrowUp: ['Move up', 'Shorter'],
  ArrowDown: ['Move down', 'Taller'],
};

/** The step an arrow key takes on a focused widget: a move, or with Shift a resize. */
export function arrowStep(key: string, shift: boolean): ((l: Layout) => Layout) | undefined {
  const names = ARROWS[key];
  if (!names) return undefined;
  return STEPS.find((s) => s.label === names[shift ? 1 : 0])?.step;
}

export function LayoutControls(props: { widget: Widget; change: (widget: Widget) => void; remove: () => void }) {
  const { widget } = props;
  const { x, y, w, h } = widget.layout;
  return (
    <fieldset class="layout-controls" aria-label={`Layout of ${widget.title}`}>
      {STEPS.map(({ label, step }) => (
        <button
          key={label}
          type="button"
          class="secondary"
          onClick={() => props.change({ ...widget, layout: step(widget.layout) })}
        >
          {label}
        </button>
      ))}
      <button type="button" class="danger" onClick={props.remove}>
        Remove
      </button>
      <small class="hint">
        Column {x + 1}, row {y + 1}, {w} wide, {h} high
      </small>
    </fieldset>
  );
}

type SourceKind = 'thing_keys' | 'group_key' | 'thing_template_key';
const SOURCE_KINDS: { kind: SourceKind; label: string }[] = [
  { kind: 'thing_keys', label: 'Things' },
  { kind: 'group_key', label: 'Group' },
  { kind: 'thing_template_key', label: 'Template' },
];

/** The organisation's groups and templates by name, to choose a widget's source from (the first 1,000 of each). */
async function loadSources(): Promise<Record<'group_key' | 'thing_template_key', { key: string; name: string }[]>> {
  const [groups, templates] = await Promise.all([loadGroups(), loadTemplates()]);
  return {
    group_key: groups.map((g) => ({ key: g.group_key, name: g.name })),
    thing_template_key: templates.map((t) => ({ key: t.thing_template_key, name: t.name })),
  };
}

const WITH_SOURCE: WidgetType[] = ['timeseries', 'things', 'alerts', 'map'];
const WITH_THING: WidgetType[] = ['value', 'gauge'];

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** `0 #15803d, 50 #c2410c`: thresholds as the API takes them. */
function readThresholds(text: string): Widget['thresholds'] {
  return list(text).map((entry) => {
    const [from = '', color = ''] = entry.split(/\s+/);
    return { from: Number(from), color };
  });
}

/** `Add widget`: the type's fields; the widget goes below the others, half the grid wide. */
export function WidgetEditor(props: { widgets: Widget[]; onAdd: (widget: Widget) => void }) {
  const [open, setOpen] = useState(false);
  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Add widget
      </button>
    );
  return (
    <AddWidget
      widgets={props.widgets}
      onAdd={(widget) => {
        props.onAdd(widget);
        setOpen(false);
      }}
      onCancel={() => setOpen(false)}
    />
  );
}

/** The form of a new widget: each one starts from empty fields. */
function AddWidget(props: { widgets: Widget[]; onAdd: (widget: Widget) => void; onCancel: () => void }) {
  const [type, setType] = useState<WidgetType>('timeseries');
  const [title, setTitle] = useState('');
  const [sourceKind, setSourceKind] = useState<SourceKind>('thing_keys');
  const [sourceText, setSourceText] = useState('');
  const [thing, setThing] = useState('');
  const [metric, setMetric] = useState('');
  const [metrics, setMetrics] = useState('');
  const [aggregate, setAggregate] = useState('');
  const [unit, setUnit] = useState('');
  const [min, setMin] = useState('');
  const [max, setMax] = useState('');
  const [thresholds, setThresholds] = useState('');
  const [text, setText] = useState('');
  const add = (event: Event) => {
    event.preventDefault();
    const bottom = Math.max(0, ...props.widgets.map((w) => w.layout.y + w.layout.h));
    const widget: Record<string, unknown> = { type, title, layout: { x: 0, y: bottom, w: 6, h: 4 } };
    if (WITH_SOURCE.includes(type))
      widget.source =
        sourceKind === 'thing_keys' ? { thing_keys: list(sourceText) } : { [sourceKind]: sourceText.trim() };
    if (type === 'timeseries' || type === 'things') widget.metrics = list(metrics);
    if (type === 'timeseries' && aggregate) widget.aggregate = aggregate;
    if (WITH_THING.includes(type)) {
      widget.thing_key = thing.trim();
      widget.metric = metric.trim();
      if (unit) widget.unit = unit;
      if (thresholds.trim()) widget.thresholds = readThresholds(thresholds);
    }
    if (type === 'gauge') {
      widget.min = Number(min);
      widget.max = Number(max);
    }
    if (type === 'text') widget.text = text;
    props.onAdd(widget as unknown as Widget);
  };
  const sources = useLoad(loadSources, []);
  const input = (
    label: string,
    value: string,
    set: (v: string) => void,
    hint?: string,
    kindOf: 'text' | 'number' = 'text',
  ) => (
    <Field label={label} hint={hint}>
      {(id, describedBy) => (
        <input
          id={id}
          {...(kindOf === 'number' ? { type: 'number' as const, step: 'any' } : { type: 'text' as const })}
          aria-describedby={describedBy}
          value={value}
          onInput={(e) => set(e.currentTarget.value)}
        />
      )}
    </Field>
  );
  return (
    <form class="panel" aria-label="Add widget" onSubmit={add}>
      <h2>Add widget</h2>
      <Field label="Widget type">
        {(id) => (
          <select id={id} value={type} onChange={(e) => setType(e.currentTarget.value as WidgetType)}>
            {WIDGET_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        )}
      </Field>
      {input('Title', title, setTitle)}
      {WITH_SOURCE.includes(type) && (
        <>
          <Field label="Source">
            {(id) => (
              <select
                id={id}
                value={sourceKind}
                onChange={(e) => {
                  setSourceKind(e.currentTarget.value as SourceKind);
                  setSourceText('');
                }}
              >
                {SOURCE_KINDS.map((s) => (
                  <option key={s.kind} value={s.kind}>
                    {s.label}
                  </option>
                ))}
              </select>
            )}
          </Field>
          {sourceKind === 'thing_keys' ? (
            input('Thing keys', sourceText, setSourceText, 'comma-separated; $name for a variable')
          ) : (
            <Field label={sourceKind === 'group_key' ? 'Group' : 'Template'} error={sources.error}>
              {(id, describedBy) => (
                <select
                  id={id}
                  required
                  aria-describedby={describedBy}
                  value={sourceText}
                  onChange={(e) => setSourceText(e.currentTarget.value)}
                >
                  <option value="">Choose…</option>
                  {sources.data?.[sourceKind].map((o) => (
                    <option key={o.key} value={o.key}>
                      {o.name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
          )}
        </>
      )}
      {WITH_THING.includes(type) && (
        <>
          {input('Thing', thing, setThing, "the thing's key, or $name for a variable")}
          {input('Metric', metric, setMetric)}
          {input('Unit', unit, setUnit)}
        </>
      )}
      {type === 'gauge' && (
        <>
          {input('Min', min, setMin, undefined, 'number')}
          {input('Max', max, setMax, undefined, 'number')}
        </>
      )}
      {WITH_THING.includes(type) &&
        input('Thresholds', thresholds, setThresholds, 'from and colour, ascending: 0 #15803d, 80 #b91c1c')}
      {(type === 'timeseries' || type === 'things') &&
        input(
          'Metrics',
          metrics,
          setMetrics,
          type === 'timeseries' ? 'comma-separated, 1 to 8' : 'comma-separated, up to 8',
        )}
      {type === 'timeseries' && (
        <Field label="Aggregate" hint="one line per metric across the things">
          {(id, describedBy) => (
            <select
              id={id}
              aria-describedby={describedBy}
              value={aggregate}
              onChange={(e) => setAggregate(e.currentTarget.value)}
            >
              <option value="">None: a line per thing</option>
              {['avg', 'min', 'max', 'sum', 'count'].map((a) => (
                <option key={a} value={a}>
                  {a}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      {type === 'text' && (
        <Field label="Text" hint="Markdown; HTML is shown as text">
          {(id, describedBy) => (
            <textarea
              id={id}
              aria-describedby={describedBy}
              rows={5}
              value={text}
              onInput={(e) => setText(e.currentTarget.value)}
            />
          )}
        </Field>
      )}
      <div class="actions">
        <button type="submit">Add</button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
