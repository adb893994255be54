import { useEffect, useRef, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useAllows } from '../caller.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { DataTable } from '../components/data-table.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Field, SearchField, TextField } from '../components/field.tsx';
import { FormActions } from '../components/form-actions.tsx';
import { Pager } from '../components/pager.tsx';
import { useAction } from '../components/use-action.ts';
import { useDebounced, useLoad } from '../components/use-load.ts';
import { showTime } from '../format.ts';
import { currentQuery, keepQuery, Link, navigate, readSegment, segment } from '../router.tsx';
import type { SectionProps } from '../sections.tsx';
import { DashboardPage } from './dashboard-page.tsx';
import type { Dashboard } from './model.ts';

const PER = 50;

/** The Dashboards section: the list, or one dashboard (`dashboards/<key>`, `dashboards/<key>/full`). */
export function DashboardsPage({ rest, fullScreen }: SectionProps) {
  if (rest) return <DashboardPage dashboardKey={readSegment(rest)} fullScreen={fullScreen === true} />;
  return <DashboardList />;
}

/** The organisation's dashboards, searched and paged by the API; new ones made by name or imported. */
function DashboardList() {
  const [opened] = useState(currentQuery);
  const [search, setSearch] = useState(opened.get('search') ?? '');
  const [page, setPage] = useState(() => Math.max(1, Number.parseInt(opened.get('page') ?? '', 10) || 1));
  const keywords = useDebounced(search.trim(), 250);
  const shownKeywords = useRef(keywords);
  useEffect(() => {
    if (keywords === shownKeywords.current) return;
    shownKeywords.current = keywords;
    setPage(1);
  }, [keywords]);
  useEffect(() => keepQuery({ search, page: page > 1 ? String(page) : '' }), [search, page]);
  const list = useLoad(
    () =>
      answer(
        api.GET('/api/v3/dashboards', {
          params: {
            query: { page, per: PER, order_by: 'name', order: 'asc', ...(keywords ? { search: keywords } : {}) },
          },
        }),
      ),
    [page, keywords],
  );
  const mayCreate = useAllows('dashboard', 'create');
  const mayDelete = useAllows('dashboard', 'delete');
  const [form, setForm] = useState<'new' | 'import' | undefined>();
  const newButton = (
    <button type="button" onClick={() => setForm('new')}>
      New dashboard
    </button>
  );
  const empty = list.data?.total_count === 0 && keywords === '';
  return (
    <section>
      <h1>Dashboards</h1>
      {mayCreate && !form && !empty && (
        <div class="actions">
          {newButton}
          <button type="button" class="secondary" onClick={() => setForm('import')}>
            Import dashboard
          </button>
        </div>
      )}
      {form === 'new' && <NewDashboard onCancel={() => setForm(undefined)} />}
      {form === 'import' && <ImportDashboard onCancel={() => setForm(undefined)} />}
      <Failure message={list.error} retry={list.retry} />
      {empty && !form && (
        <EmptyState
          title="No dashboards yet"
          action={
            mayCreate && (
              <>
                {newButton}
                <button type="button" class="secondary" onClick={() => setForm('import')}>
                  Import dashboard
                </button>
              </>
            )
          }
        >
          A dashboard shows several things' telemetry, a fleet's average, latest values, a map and open alerts on one
          screen, kept live.
        </EmptyState>
      )}
      {list.data && !empty && (
        <>
          <SearchField
            label="Search dashboards"
            hint="keywords in the name, key or description"
            value={search}
            onInput={setSearch}
          />
          <DataTable<Dashboard>
            label="Dashboards"
            rows={list.data.dashboards}
            rowKey={(d) => d.dashboard_key}
            columns={[
              { header: 'Name', cell: (d) => <Link to={`dashboards/${segment(d.dashboard_key)}`}>{d.name}</Link> },
              { header: 'Description', cell: (d) => d.description ?? '' },
              { header: 'Widgets', cell: (d) => String(d.widgets.length) },
              { header: 'Updated', cell: (d) => showTime(d.updated_at) },
              ...(mayDelete
                ? [
                    {
                      header: 'Actions',
                      cell: (d: Dashboard) => (
                        <ConfirmButton
                          label="Delete"
                          about={d.name}
                          title={`Delete the dashboard ${d.name}?`}
                          question={`The dashboard ${d.name} is deleted for everyone in the organisation.`}
                          onConfirm={async () => {
                            await answer(
                              api.DELETE('/api/v3/dashboards/{dashboard_key}', {
                                params: { path: { dashboard_key: d.dashboard_key } },
                              }),
                            );
                            list.reload();
                          }}
                        />
                      ),
                    },
                  ]
                : []),
            ]}
          />
          <Pager page={page} per={PER} total={list.data.total_count} noun="dashboards" onPage={setPage} />
        </>
      )}
    </section>
  );
}

/** Creates a dashboard from `fields` and opens it. */
async function createAndOpen(fields: Record<string, unknown>): Promise<void> {
  const created = await answer(api.POST('/api/v3/dashboards', { body: { dashboard: fields } as never }));
  navigate(`dashboards/${segment(created.dashboard.dashboard_key)}`);
}

function NewDashboard(props: { onCancel: () => void }) {
  const [name, setName] = useState('');
  const action = useAction();
  return (
    <form
      class="panel"
      aria-label="New dashboard"
      onSubmit={(event) => {
        event.preventDefault();
        action.run(() => createAndOpen({ name }));
      }}
    >
      <h2>New dashboard</h2>
      <TextField label="Name" required value={name} onInput={setName} />
      <FormActions action={action} submit="Create" onCancel={props.onCancel} />
    </form>
  );
}

/**
 * A dashboard from a file that `Export` wrote (the API's `dashboard` object, or `{"dashboard": ...}`):
 * created anew by the API's import, so the dashboard and its widgets get new keys, and a name the
 * organisation has already is numbered (docs/api.md, "Dashboards").
 */
function ImportDashboard(props: { onCancel: () => void }) {
  const [file, setFile] = useState<File | undefined>();
  const action = useAction();
  return (
    <form
      class="panel"
      aria-label="Import dashboard"
      onSubmit={(event) => {
        event.preventDefault();
        action.run(async () => {
          if (!file) throw new Error('Choose a file exported from a dashboard.');
          let parsed: unknown;
          try {
            parsed = JSON.parse(await file.text());
          } catch {
            throw new Error(`${file.name} is not JSON: choose a file exported from a dashboard.`);
          }
          const object = parsed as { dashboard?: Dashboard } & Dashboard;
          const dashboard = object && typeof object === 'object' && object.dashboard ? object.dashboard : object;
          if (!dashboard || typeof dashboard !== 'object' || !Array.isArray(dashboard.widgets ?? []))
            throw new Error(`${file.name} holds no dashboard.`);
          // The import answer names the copy apart when the organisation has a dashboard of its name.
          const made = await answer(
            api.POST('/api/v3/dashboards/import', {
              body: { dashboard: { ...dashboard, widgets: dashboard.widgets ?? [] } } as never,
            }),
          );
          navigate(`dashboards/${segment(made.dashboard.dashboard_key)}`);
        });
      }}
    >
      <h2>Import dashboard</h2>
      <Field
        label="File"
        hint="a dashboard's exported JSON file; it is created anew, with new keys, and named Name (2) when the name is taken"
      >
        {(id, describedBy) => (
          <input
            id={id}
            type="file"
            accept="application/json,.json"
            required
            aria-describedby={describedBy}
            onChange={(e) => setFile(e.currentTarget.files?.[0])}
          />
        )}
      </Field>
      <FormActions action={action} submit="Import" onCancel={props.onCancel} />
    </form>
  );
}
