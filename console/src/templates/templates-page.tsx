import { useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useAllows } from '../caller.ts';
import { EditDelete } from '../components/edit-delete.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Pager } from '../components/pager.tsx';
import type { Template } from '../components/template-select.tsx';
import { useLoad } from '../components/use-load.ts';
import { TemplateForm } from './template-form.tsx';

const PER = 50;

const showSeconds = (value: number): string => `${value} s`;

/** Thing templates: what each kind of thing measures, how often it is heard from, how long it is kept. */
export function TemplatesPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () =>
      answer(
        api.GET('/api/v3/thing_templates', { params: { query: { page, per: PER, order_by: 'name', order: 'asc' } } }),
      ),
    [page],
  );
  const mayCreate = useAllows('thing_template', 'create');
  const mayUpdate = useAllows('thing_template', 'update');
  const mayDelete = useAllows('thing_template', 'delete');
  const [editing, setEditing] = useState<Template | 'new' | undefined>();
  const startNew = () => setEditing('new');
  return (
    <section>
      <h1>Templates</h1>
      {editing === undefined && mayCreate && (
        <button type="button" onClick={startNew}>
          New template
        </button>
      )}
      {editing !== undefined && (
        <TemplateForm
          key={editing === 'new' ? 'new' : editing.thing_template_key}
          template={editing === 'new' ? undefined : editing}
          onDone={(saved) => {
            setEditing(undefined);
            if (saved) list.reload();
          }}
        />
      )}
      <Failure message={list.error} />
      {list.data?.total_count === 0 && editing === undefined && (
        <EmptyState
          title="No templates yet"
          action={
            mayCreate && editing === undefined ? (
              <button type="button" onClick={startNew}>
                New template
              </button>
            ) : undefined
          }
        >
          A template says what a kind of thing measures and how often it is heard from.
        </EmptyState>
      )}
      {list.data && list.data.total_count > 0 && (
        <>
          <table aria-label="Templates" class="cards">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Metrics</th>
                <th scope="col">Heartbeat interval</th>
                <th scope="col">Idle timeout</th>
                <th scope="col">Retention (days)</th>
                {(mayUpdate || mayDelete) && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {list.data.thing_templates.map((template) => (
                <tr key={template.thing_template_key}>
                  <td>
                    {template.name}
                    {template.description && <div class="muted">{template.description}</div>}
                  </td>
                  <td data-label="Key" class="key">
                    <code>{template.thing_template_key}</code>
                  </td>
                  <td data-label="Metrics">
                    {template.metrics
                      .map((metric) => (metric.unit ? `${metric.name} (${metric.unit})` : metric.name))
                      .join(', ')}
                  </td>
                  <td data-label="Heartbeat interval">{showSeconds(template.heartbeat_interval)}</td>
                  <td data-label="Idle timeout">{showSeconds(template.idle_timeout)}</td>
                  <td data-label="Retention (days)">{template.retention_days ?? 'organisation default'}</td>
                  {(mayUpdate || mayDelete) && (
                    <td class="row-actions">
                      <EditDelete
                        name={template.name}
                        mayUpdate={mayUpdate}
                        mayDelete={mayDelete}
                        onEdit={() => setEditing(template)}
                        question={
                          <>
                            The template <strong>{template.name}</strong> is deleted. A template that things use cannot
                            be deleted.
                          </>
                        }
                        onDelete={async () => {
                          await answer(
                            api.DELETE('/api/v3/thing_templates/{thing_template_key}', {
                              params: { path: { thing_template_key: template.thing_template_key } },
                            }),
                          );
                          list.reload();
                        }}
                      />
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
          {list.data.total_count > PER && (
            <Pager page={page} per={PER} total={list.data.total_count} noun="templates" onPage={setPage} />
          )}
        </>
      )}
    </section>
  );
}
