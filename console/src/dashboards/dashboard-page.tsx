import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { allows, type Caller, useAllows, useCaller } from '../caller.ts';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { useLoad } from '../components/use-load.ts';
import { Link, segment, useLeaveGuard } from '../router.tsx';
import { DashboardEditing, type FocusRequest, type OpenForm } from './dashboard-editing.tsx';
import { arrowStep, LayoutControls, leastHeight, place, WidgetActions } from './editor.tsx';
import { type Dashboard, rangeSeconds, TIME_RANGES, type Widget } from './model.ts';
import { type Drag, followPointer, layoutDrawn } from './pointer-layout.ts';
import { WIDGETS } from './widgets.tsx';

/**
 * One dashboard: its widgets on a 12-column grid sharing a `Time range`, a control per variable, and
 * `Edit` (add, edit, move, resize, remove widgets, then `Save`). At `dashboards/<key>/full` the same page
 * without the navigation, for a wall screen (docs/console.md, "Dashboards").
 */
export function DashboardPage({ dashboardKey, fullScreen }: { dashboardKey: string; fullScreen: boolean }) {
  const loaded = useLoad(
    async () =>
      (
        await answer(
          api.GET('/api/v3/dashboards/{dashboard_key}', { params: { path: { dashboard_key: dashboardKey } } }),
        )
      ).dashboard,
    [dashboardKey],
  );
  const mayUpdate = useAllows('dashboard', 'update');
  const caller = useCaller();
  const [draft, setDraft] = useState<Dashboard | undefined>();
  const [last, setLast] = useState<string | undefined>();
  const [chosen, setChosen] = useState<Record<string, string>>({});
  const [now, setNow] = useState(() => Math.floor(Date.now() / 1000));
  const [form, setForm] = useState<OpenForm | undefined>();
  const [focus, setFocus] = useState<FocusRequest>();
  const shown = draft ?? loaded.data;
  const name = shown?.name;
  // Edits not saved are not lost to a click elsewhere: leaving asks first.
  const unsaved = draft !== undefined && (form !== undefined || JSON.stringify(draft) !== JSON.stringify(loaded.data));
  useLeaveGuard(unsaved ? 'This dashboard has changes that are not saved. Leave it and lose them?' : undefined);
  useEffect(() => {
    if (name === undefined) return;
    document.title = `${name} · Thingbase`;
  }, [name]);
  // A rolling range ("last hour") moves on: read again every minute, so a wall screen stays current.
  useEffect(() => {
    const timer = setInterval(() => setNow(Math.floor(Date.now() / 1000)), 60_000);
    return () => clearInterval(timer);
  }, []);
  if (!shown)
    return (
      <section>
        <h1>Dashboard</h1>
        <Failure message={loaded.error} retry={loaded.retry} />
        {!loaded.error && <p aria-busy="true">Loading…</p>}
      </section>
    );
  const timeRange = last ? { last } : shown.time_range;
  const range = rangeSeconds(timeRange, 'last' in timeRange ? now : undefined);
  const change = (update: (d: Dashboard) => Dashboard) => setDraft((d) => update(d ?? shown));
  const path = `dashboards/${segment(shown.dashboard_key)}`;
  const readingOrder = [...shown.widgets].sort((a, b) => a.layout.y - b.layout.y || a.layout.x - b.layout.x);
  return (
    <section class={fullScreen ? 'dashboard full-screen' : 'dashboard'}>
      <h1>{shown.name}</h1>
      {shown.description && <p>{shown.description}</p>}
      <div class="filters dashboard-controls">
        <Field label="Time range">
          {(id) => (
            <select
              id={id}
              value={'last' in timeRange ? timeRange.last : ''}
              onChange={(e) => {
                setLast(e.currentTarget.value);
                if (draft) change((d) => ({ ...d, time_range: { last: e.currentTarget.value } }));
              }}
            >
              {'from' in timeRange && <option value="">Saved range</option>}
              {!TIME_RANGES.some((r) => 'last' in timeRange && r.last === timeRange.last) && 'last' in timeRange && (
                <option value={timeRange.last}>Last {timeRange.last}</option>
              )}
              {TIME_RANGES.map((r) => (
                <option key={r.last} value={r.last}>
                  {r.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        {/* A variable chooses among things: nothing to choose from for a role that may not read them. */}
        {allows(caller, 'thing', 'read') &&
          shown.variables.map((variable) => (
            <VariableChoice
              key={variable.name}
              variable={variable}
              value={chosen[variable.name]}
              onChange={(thingKey) => setChosen((c) => ({ ...c, [variable.name]: thingKey }))}
            />
          ))}
        <div class="actions">
          {fullScreen ? (
            <Link to={path}>Leave full screen</Link>
          ) : (
            <>
              <Link to={`${path}/full`}>Full screen</Link>
              <button type="button" class="secondary" onClick={() => exportDashboard(loaded.data ?? shown)}>
                Export
              </button>
              {mayUpdate && !draft && (
                <button
                  type="button"
                  onClick={() => {
                    setDraft(shown);
                    // The button goes: the focus moves to what takes its place.
                    setFocus({ target: 'add' });
                  }}
                >
                  Edit
                </button>
              )}
            </>
          )}
        </div>
      </div>
      {draft && (
        <DashboardEditing
          draft={draft}
          form={form}
          setForm={setForm}
          focus={focus}
          setFocus={setFocus}
          change={change}
          onSaved={(saved) => {
            loaded.set(() => saved);
            setForm(undefined);
            setDraft(undefined);
          }}
          onCancel={() => {
            setForm(undefined);
            setDraft(undefined);
          }}
        />
      )}
      {shown.widgets.length === 0 && <p>{emptyNote(draft !== undefined, form !== undefined, mayUpdate)}</p>}
      <div class="dashboard-grid">
        {/* In reading order, but while edited in the dashboard's own order, so that a step never moves the focused widget. */}
        {(draft ? shown.widgets : readingOrder).map((widget, index) => (
          <WidgetRegion
            key={widget.widget_key}
            widget={widget}
            order={readingOrder.indexOf(widget)}
            range={range}
            rolling={'last' in timeRange}
            chosen={chosen}
            caller={caller}
            focused={focus?.target === widget.widget_key ? focus : undefined}
            editing={
              draft
                ? {
                    change: (next) => change((d) => ({ ...d, widgets: place(d.widgets, index, next.layout) })),
                    edit: () => setForm({ widgetKey: widget.widget_key, opened: Date.now() }),
                    remove: () => {
                      if (form?.widgetKey === widget.widget_key) setForm(undefined);
                      change((d) => ({ ...d, widgets: d.widgets.filter((_, i) => i !== index) }));
                    },
                  }
                : undefined
            }
          />
        ))}
      </div>
    </section>
  );
}

/** A widget: a region named by its title, placed on the grid by its layout. */
function WidgetRegion(props: {
  widget: Widget;
  /** Its place in reading order, where the widgets stack in one column (style.css). */
  order: number;
  range: [number, number];
  rolling: boolean;
  chosen: Record<string, string>;
  /** The signed-in role; the widget's content waits for it, so that none asks what it may not read. */
  caller: Caller | undefined;
  /** Asks for the focus (after its form closes). */
  focused: FocusRequest;
  editing: { change: (widget: Widget) => void; edit: () => void; remove: () => void } | undefined;
}) {
  const { widget } = props;
  const titleId = useId();
  const region = useRef<HTMLElement>(null);
  useEffect(() => {
    if (props.focused) region.current?.focus();
  }, [props.focused]);
  const Body = WIDGETS[widget.type];
  const { x, y, w, h } = widget.layout;
  // While editing, the title and the corner follow the mouse (pointer-layout.ts).
  const drag = (kind: Drag) => (event: PointerEvent) => {
    const edit = props.editing;
    if (edit) {
      followPointer(event, kind, widget.layout, leastHeight(widget.type), (layout) =>
        edit.change({ ...widget, layout }),
      );
    }
  };
  return (
    // Focusable, so that a widget whose content overflows scrolls from the keyboard; while editing, the
    // arrow keys move the focused widget and Shift with them resizes it.
    <section
      ref={region}
      class={`widget widget-${widget.type}`}
      aria-labelledby={titleId}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard.
      tabIndex={0}
      onKeyDown={(event) => {
        const edit = props.editing;
        if (!edit || event.target !== event.currentTarget || !layoutDrawn(event.currentTarget)) return;
        const step = arrowStep(event.key, event.shiftKey);
        if (!step) return;
        event.preventDefault();
        edit.change({ ...widget, layout: step(widget.layout, leastHeight(widget.type)) });
      }}
      style={{ '--column': x + 1, '--row': y + 1, '--width': w, '--height': h, order: props.order }}
    >
      <h2 id={titleId} class={props.editing ? 'widget-move' : undefined} onPointerDown={drag('move')}>
        {widget.title}
      </h2>
      {props.editing && <WidgetActions edit={props.editing.edit} remove={props.editing.remove} />}
      {props.editing && <LayoutControls widget={widget} change={props.editing.change} />}
      {props.caller === undefined ? null : notReadable(widget.type, props.caller) ? (
        <p class="muted">{notReadable(widget.type, props.caller)}</p>
      ) : Body ? (
        <Body widget={widget} range={props.range} rolling={props.rolling} chosen={props.chosen} />
      ) : (
        <p class="notice">This console cannot draw widgets of type {widget.type}.</p>
      )}
      {/* The mouse's way to resize; the keyboard's is Shift with the arrows, or the buttons above. */}
      {props.editing && <span class="widget-resize" aria-hidden="true" onPointerDown={drag('resize')} />}
    </section>
  );
}

/**
 * What the role may not read of what a widget of this type draws, said in place of the widget
 * (docs/console.md, "Pages"): every widget but text reads things, a chart their events, and the
 * alerts widget alerts.
 */
function notReadable(type: Widget['type'], caller: Caller): string | undefined {
  if (type === 'text') return undefined;
  if (!allows(caller, 'thing', 'read')) return 'Your role may not read things.';
  if (type === 'timeseries' && !allows(caller, 'data', 'read')) return "Your role may not read things' events.";
  if (type === 'alerts' && !allows(caller, 'alert', 'read')) return 'Your role may not read alerts.';
  return undefined;
}

/** A variable's control: named after it, choosing one thing of its template. */
function VariableChoice(props: {
  variable: Dashboard['variables'][number];
  value: string | undefined;
  onChange: (thingKey: string) => void;
}) {
  const { variable } = props;
  const things = useLoad(
    async () =>
      (
        await answer(
          api.GET('/api/v3/things', {
            params: {
              query: { thing_template_key: variable.thing_template_key, per: 1000, order_by: 'name', order: 'asc' },
            },
          }),
        )
      ).things,
    [variable.thing_template_key],
  );
  const first = things.data?.[0]?.thing_key;
  useEffect(() => {
    if (props.value === undefined && first !== undefined) props.onChange(first);
  }, [first]);
  return (
    <Field label={variable.name} error={things.error}>
      {(id, describedBy) => (
        <select
          id={id}
          aria-describedby={describedBy}
          value={props.value ?? ''}
          onChange={(e) => props.onChange(e.currentTarget.value)}
        >
          {things.data?.length === 0 && <option value="">No things of its template</option>}
          {things.data?.map((t) => (
            <option key={t.thing_key} value={t.thing_key}>
              {t.name}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** Downloads `<name>.json` holding the API's `dashboard` object, as `Import dashboard` reads it. */
function exportDashboard(dashboard: Dashboard): void {
  const blob = new Blob([`${JSON.stringify(dashboard, null, 2)}\n`], { type: 'application/json' });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = `${dashboard.name}.json`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

/** What an empty dashboard says, in the words of the controls the page shows now. */
function emptyNote(editing: boolean, formOpen: boolean, mayUpdate: boolean): string {
  if (formOpen) return 'This dashboard has no widgets yet: the form above adds one.';
  if (editing) return 'This dashboard has no widgets yet: Add widget adds one.';
  return `This dashboard has no widgets yet${mayUpdate ? ': Edit adds them.' : '.'}`;
}
