import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import { Failure } from '../components/failure.tsx';
import { Field, TextField } from '../components/field.tsx';
import { answerByField, useFieldSubmit } from '../components/field-errors.ts';
import { FormButtons } from '../components/form-buttons.tsx';
import type { Template } from '../components/template-select.tsx';

type Metric = Template['metrics'][number];
type DataType = Metric['data_type'];

const DATA_TYPES: DataType[] = ['number', 'string', 'boolean'];

/** The fields whose refusal the API names (`thing_template.name`), each said under its field. */
const FIELDS = [
  'thing_template.name',
  'thing_template.description',
  'thing_template.heartbeat_interval',
  'thing_template.idle_timeout',
  'thing_template.retention_days',
];
/** The API's name of a field of the metric at `index` (`thing_template.metrics.0.name`). */
const metricParam = (index: number, field: keyof Metric) => `thing_template.metrics.${index}.${field}`;
const METRIC_FIELDS: (keyof Metric)[] = ['name', 'data_type', 'unit'];

/** Whole seconds from a field, or undefined when it is empty (the API's default or the value kept). */
const seconds = (text: string): number | undefined => (text.trim() === '' ? undefined : Number(text));

/**
 * A template's fields and its metrics, created with `New template` or changed with `Edit`. Retention
 * is sent only when it was changed, as only an account admin may set it (docs/api.md, "Thing templates").
 */
export function TemplateForm({
  template,
  onDone,
}: {
  template: Template | undefined;
  onDone: (saved: boolean) => void;
}) {
  const [name, setName] = useState(template?.name ?? '');
  const [description, setDescription] = useState(template?.description ?? '');
  const [heartbeat, setHeartbeat] = useState(template ? String(template.heartbeat_interval) : '60');
  const [idle, setIdle] = useState(template ? String(template.idle_timeout) : '300');
  const shownRetention = template?.retention_days == null ? '' : String(template.retention_days);
  const [retention, setRetention] = useState(shownRetention);
  const [metrics, setMetrics] = useState<Metric[]>(template?.metrics ?? []);
  const changeMetric = (index: number, change: Partial<Metric>) =>
    setMetrics((list) => list.map((metric, i) => (i === index ? { ...metric, ...change } : metric)));
  const fieldParams = [...FIELDS, ...metrics.flatMap((_, i) => METRIC_FIELDS.map((field) => metricParam(i, field)))];
  const submit = useFieldSubmit(fieldParams, async () => {
    const fields = {
      name,
      description,
      metrics: metrics.map((m) => ({ name: m.name, data_type: m.data_type, unit: m.unit ?? '' })),
      heartbeat_interval: seconds(heartbeat),
      idle_timeout: seconds(idle),
      ...(retention !== shownRetention ? { retention_days: retention === '' ? null : Number(retention) } : {}),
    };
    if (template) {
      await answerByField(
        api.PUT('/api/v3/thing_templates/{thing_template_key}', {
          params: { path: { thing_template_key: template.thing_template_key } },
          body: { thing_template: fields },
        }),
      );
    } else {
      await answerByField(api.POST('/api/v3/thing_templates', { body: { thing_template: fields } }));
    }
    onDone(true);
  });
  const title = template ? `Edit ${template.name}` : 'New template';
  return (
    <form onSubmit={submit.onSubmit} class="panel" aria-label={title}>
      <h2>{title}</h2>
      <TextField label="Name" required value={name} onInput={setName} error={submit.of('thing_template.name')} />
      <TextField
        label="Description"
        rows={2}
        value={description}
        onInput={setDescription}
        error={submit.of('thing_template.description')}
      />
      <TextField
        label="Heartbeat interval"
        hint="seconds; a thing is online while heard from within twice this"
        type="number"
        min={1}
        value={heartbeat}
        onInput={setHeartbeat}
        error={submit.of('thing_template.heartbeat_interval')}
      />
      <TextField
        label="Idle timeout"
        hint="seconds without events counted as idle time"
        type="number"
        min={1}
        value={idle}
        onInput={setIdle}
        error={submit.of('thing_template.idle_timeout')}
      />
      <TextField
        label="Retention (days)"
        hint="empty: the organisation's retention; set by an account admin only"
        type="number"
        min={1}
        value={retention}
        onInput={setRetention}
        error={submit.of('thing_template.retention_days')}
      />
      <fieldset class="metrics">
        <legend>Metrics</legend>
        {metrics.length === 0 && <p>No metrics: the chart draws every numeric value its things send.</p>}
        {metrics.map((metric, i) => (
          // Rows are edited in place and removed by position, so the position is their identity.
          <fieldset class="metric" key={i} aria-label={`Metric ${i + 1}`}>
            <TextField
              label="Metric name"
              required
              value={metric.name}
              onInput={(name) => changeMetric(i, { name })}
              error={submit.of(metricParam(i, 'name'))}
            />
            <Field label="Data type" error={submit.of(metricParam(i, 'data_type'))}>
              {(id, describedBy, invalid) => (
                <select
                  id={id}
                  aria-describedby={describedBy}
                  aria-invalid={invalid}
                  value={metric.data_type}
                  onChange={(e) => changeMetric(i, { data_type: e.currentTarget.value as DataType })}
                >
                  {DATA_TYPES.map((type) => (
                    <option key={type} value={type}>
                      {type}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <TextField
              label="Unit"
              value={metric.unit ?? ''}
              onInput={(unit) => changeMetric(i, { unit })}
              error={submit.of(metricParam(i, 'unit'))}
            />
            <button
              type="button"
              class="secondary"
              aria-label={`Remove metric ${i + 1}`}
              onClick={() => setMetrics((list) => list.filter((_, j) => j !== i))}
            >
              Remove
            </button>
          </fieldset>
        ))}
        <button
          type="button"
          class="secondary"
          onClick={() => setMetrics((list) => [...list, { name: '', data_type: 'number', unit: '' }])}
        >
          Add metric
        </button>
      </fieldset>
      <Failure message={submit.error} />
      <FormButtons busy={submit.busy} onCancel={() => onDone(false)} />
    </form>
  );
}
