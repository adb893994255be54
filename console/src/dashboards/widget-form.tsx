/**
 * A widget's form, to add one or to edit one (its settings filled in): the type's fields, checked on
 * `Add` or `Apply` by the API's own rules (widget-draft.ts). A field the API would refuse is marked
 * invalid, its problem is its description, and the first such field takes the focus.
 */
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { allows, useCaller } from '../caller.ts';
import { useEscapeCancels } from '../components/escape-cancels.ts';
import { Failure } from '../components/failure.tsx';
import { Field, TextField } from '../components/field.tsx';
import { loadGroups } from '../components/group-select.tsx';
import { loadTemplates } from '../components/template-select.tsx';
import { useLoad } from '../components/use-load.ts';
import { nextMetrics } from './metric-suggestions.ts';
import { WIDGET_TYPE_NAMES, WIDGET_TYPES, type Widget, type WidgetType } from './model.ts';
import { ThingPicker } from './thing-picker.tsx';
import {
  draftOf,
  type Problems,
  type Refusal,
  readDraft,
  type SourceKind,
  WITH_METRICS,
  WITH_SOURCE,
  WITH_THING,
  type WidgetDraft,
  type WidgetFields,
} from './widget-draft.ts';
import { StatusesField, ThresholdsField } from './widget-fields.tsx';

const SOURCE_KINDS: { kind: SourceKind; label: string }[] = [
  { kind: 'thing_keys', label: 'Things' },
  { kind: 'group_key', label: 'Group' },
  { kind: 'thing_template_key', label: 'Template' },
];
const AGGREGATES: [string, string][] = [
  ['', 'None: a line per thing'],
  ['avg', 'Average'],
  ['min', 'Minimum'],
  ['max', 'Maximum'],
  ['sum', 'Sum'],
  ['count', 'Count'],
];

/**
 * The organisation's groups and templates by name, to choose a widget's source from (the first 1,000 of
 * each), and the metrics the templates declare.
 */
async function loadSources(
  withGroups: boolean,
  withTemplates: boolean,
): Promise<Record<'group_key' | 'thing_template_key', { key: string; name: string }[]> & { metrics: string[] }> {
  const [groups, templates] = await Promise.all([withGroups ? loadGroups() : [], withTemplates ? loadTemplates() : []]);
  return {
    group_key: groups.map((g) => ({ key: g.group_key, name: g.name })),
    thing_template_key: templates.map((t) => ({ key: t.thing_template_key, name: t.name })),
    metrics: templates.flatMap((t) => t.metrics.map((m) => m.name)),
  };
}

const sentence = (text: string) => (text ? `${text[0]?.toUpperCase()}${text.slice(1)}.` : text);

export function WidgetForm(props: {
  /** The widget edited, and its place from 1; a new one when absent. */
  widget?: Widget | undefined;
  position?: number | undefined;
  /** The names of the dashboard's variables, which a widget may name as `$<name>`. */
  variables: readonly string[];
  /** Save's refusal about this widget, shown beside its field. */
  refusal?: Refusal | undefined;
  onDone: (fields: WidgetFields) => void;
  onCancel: () => void;
}) {
  const { refusal } = props;
  const [draft, setDraft] = useState<WidgetDraft>(() => draftOf(props.widget));
  const [problems, setProblems] = useState<Problems>(() =>
    refusal?.field ? { [refusal.field]: sentence(refusal.detail ?? '') } : {},
  );
  // Each check moves the focus to the first field marked (or, on opening, the form's first field).
  const [checks, setChecks] = useState(0);
  const form = useRef<HTMLFormElement>(null);
  useEscapeCancels(form, props.onCancel);
  const headingId = useId();
  useEffect(() => {
    const root = form.current;
    const marked = root?.querySelector<HTMLElement>('[aria-invalid="true"]');
    (marked ?? (checks === 0 ? root?.querySelector<HTMLElement>('select, input') : undefined))?.focus();
  }, [checks]);
  // A group or template is offered as a source to a role that may read them, and only their lists are
  // asked for; a widget edited keeps its own source (docs/console.md, "Pages").
  const caller = useCaller();
  const readable: Record<SourceKind, boolean> = {
    thing_keys: true,
    group_key: allows(caller, 'group', 'read'),
    thing_template_key: allows(caller, 'thing_template', 'read'),
  };
  const sources = useLoad(
    async () => (caller === undefined ? undefined : loadSources(readable.group_key, readable.thing_template_key)),
    [caller === undefined, readable.group_key, readable.thing_template_key],
  );
  const { type } = draft;
  /** Changes fields, dropping the problems of those changed (`thresholds` drops every threshold's). */
  const update = (changes: Partial<WidgetDraft>) => {
    setDraft((d) => ({ ...d, ...changes }));
    if (changes.type) return setProblems({});
    const changed = Object.keys(changes);
    setProblems((p) =>
      Object.fromEntries(Object.entries(p).filter(([field]) => !changed.includes(field.split('.')[0] as string))),
    );
  };
  const submit = (event: Event) => {
    event.preventDefault();
    const read = readDraft(draft, props.variables);
    if (read.problems) {
      setProblems(read.problems);
      setChecks((c) => c + 1);
      return;
    }
    props.onDone(read.fields);
  };
  const input = (
    label: string,
    field: 'title' | 'metric' | 'metrics' | 'unit' | 'min' | 'max',
    hint?: string,
    kind: 'text' | 'number' = 'text',
    list?: string,
  ) => (
    <TextField
      label={label}
      hint={hint}
      type={kind}
      {...(kind === 'number' ? { step: 'any' as const } : {})}
      value={draft[field]}
      onInput={(value) => update({ [field]: value })}
      error={problems[field]}
      {...(list ? { list } : {})}
    />
  );
  // The metrics the organisation's templates declare, suggested as a metric is typed (one may still
  // name another: the Default template's things send what they like).
  const known = [...new Set((sources.data?.metrics ?? []).filter((name) => name !== ''))].sort();
  const metricList = `${headingId}-metric`;
  const metricsList = `${headingId}-metrics`;
  const editing = props.widget !== undefined;
  const sourceOptions = draft.sourceKind === 'thing_keys' ? [] : (sources.data?.[draft.sourceKind] ?? []);
  return (
    <form ref={form} class="panel widget-form" aria-labelledby={headingId} noValidate onSubmit={submit}>
      <h2 id={headingId}>{editing ? `Edit widget ${props.position ?? ''}, “${props.widget?.title}”` : 'Add widget'}</h2>
      {refusal && !refusal.field && <Failure message={refusal.message} />}
      <Field label="Widget type">
        {(id) => (
          <select id={id} value={type} onChange={(e) => update({ type: e.currentTarget.value as WidgetType })}>
            {WIDGET_TYPES.map((t) => (
              <option key={t} value={t}>
                {WIDGET_TYPE_NAMES[t]}
              </option>
            ))}
          </select>
        )}
      </Field>
      {input('Title', 'title')}
      {WITH_SOURCE.includes(type) && (
        <>
          <Field label="Source">
            {(id) => (
              <select
                id={id}
                value={draft.sourceKind}
                onChange={(e) => update({ sourceKind: e.currentTarget.value as SourceKind, sourceKey: '', things: [] })}
              >
                {SOURCE_KINDS.filter((s) => readable[s.kind] || s.kind === draft.sourceKind).map((s) => (
                  <option key={s.kind} value={s.kind}>
                    {s.label}
                  </option>
                ))}
              </select>
            )}
          </Field>
          {draft.sourceKind === 'thing_keys' ? (
            <ThingPicker
              legend="Things"
              chosen={draft.things}
              variables={props.variables}
              error={problems.things}
              onChange={(things) => update({ things })}
            />
          ) : caller !== undefined && !readable[draft.sourceKind] ? (
            <p class="muted">
              Your role may not read {draft.sourceKind === 'group_key' ? 'groups' : 'templates'}: the widget keeps its
              own.
            </p>
          ) : (
            <Field
              label={draft.sourceKind === 'group_key' ? 'Group' : 'Template'}
              error={problems.sourceKey ?? sources.error}
            >
              {(id, describedBy) => (
                <select
                  id={id}
                  aria-describedby={describedBy}
                  aria-invalid={problems.sourceKey ? true : undefined}
                  value={draft.sourceKey}
                  onChange={(e) => update({ sourceKey: e.currentTarget.value })}
                >
                  <option value="">Choose…</option>
                  {sourceOptions.map((o) => (
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
          <ThingPicker
            legend="Thing"
            single
            chosen={draft.thing}
            variables={props.variables}
            error={problems.thing}
            onChange={(thing) => update({ thing })}
          />
          {input('Metric', 'metric', 'a name of the data, machine.temp for a nested one', 'text', metricList)}
          <datalist id={metricList}>
            {known.map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
          {input('Unit', 'unit')}
        </>
      )}
      {type === 'gauge' && (
        <>
          {input('Min', 'min', undefined, 'number')}
          {input('Max', 'max', undefined, 'number')}
        </>
      )}
      {WITH_THING.includes(type) && (
        <ThresholdsField
          thresholds={draft.thresholds}
          problems={problems}
          onChange={(thresholds) => update({ thresholds })}
        />
      )}
      {WITH_METRICS.includes(type) && (
        <>
          {input(
            'Metrics',
            'metrics',
            type === 'timeseries' ? 'comma-separated, 1 to 8' : 'comma-separated, up to 8',
            'text',
            metricsList,
          )}
          <datalist id={metricsList}>
            {nextMetrics(draft.metrics, known).map((value) => (
              <option key={value} value={value} />
            ))}
          </datalist>
        </>
      )}
      {type === 'timeseries' && (
        <Field
          label="Aggregate"
          hint={draft.aggregate ? 'one line per metric across the things' : 'a line per thing and metric'}
        >
          {(id, describedBy) => (
            <select
              id={id}
              aria-describedby={describedBy}
              value={draft.aggregate}
              onChange={(e) => update({ aggregate: e.currentTarget.value })}
            >
              {AGGREGATES.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      {type === 'alerts' && (
        <StatusesField status={draft.status} problem={problems.status} onChange={(status) => update({ status })} />
      )}
      {type === 'text' && (
        <TextField
          label="Text"
          hint="Markdown; HTML is shown as text"
          rows={5}
          value={draft.text}
          onInput={(text) => update({ text })}
          error={problems.text}
        />
      )}
      <div class="actions">
        <button type="submit">{editing ? 'Apply' : 'Add'}</button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
