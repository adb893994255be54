import { useEffect, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { Field } from '../components/field.tsx';
import { Pager } from '../components/pager.tsx';
import { useDebounced, useLoad } from '../components/use-load.ts';
import { showTime } from '../format.ts';
import { realtime } from '../realtime.ts';
import { Link } from '../router.tsx';

type ThingList = paths['/api/v3/things']['get']['responses'][200]['content']['application/json'];
type Thing = ThingList['things'][number];
type Options = { key: string; name: string }[];

const PER = 50;

/**
 * The fleet, one server page at a time (so 10,000 things cost what 50 do), searched and filtered by
 * the API; status and last event of the things shown follow the `things` and `events` topics live.
 */
export function ThingsPage() {
  const [search, setSearch] = useState('');
  const [template, setTemplate] = useState('');
  const [group, setGroup] = useState('');
  const [page, setPage] = useState(1);
  const keywords = useDebounced(search.trim(), 250);
  useEffect(() => setPage(1), [keywords, template, group]);
  const list = useLoad(
    () =>
      answer(
        api.GET('/api/v3/things', {
          params: {
            query: {
              page,
              per: PER,
              order_by: 'name',
              order: 'asc',
              ...(keywords ? { search: keywords } : {}),
              ...(template ? { thing_template_key: template } : {}),
              ...(group ? { group_key: group } : {}),
            },
          },
        }),
      ),
    [page, keywords, template, group],
  );
  const options = useLoad(loadFilterOptions, []);
  const keys = list.data?.things.map((t) => t.thing_key).join(',') ?? '';

  useEffect(() => {
    const stopThings = realtime.subscribe('things', {}, (message) => {
      if (message.type !== 'thing') return;
      if (message.change === 'created' || message.change === 'deleted') return list.reload();
      list.set((data) => ({
        ...data,
        things: data.things.map((t) =>
          t.thing_key === message.thing_key
            ? { ...t, alive: message.alive as boolean, last_event: message.last_event as Thing['last_event'] }
            : t,
        ),
      }));
    });
    const stopEvents =
      keys === ''
        ? undefined
        : realtime.subscribe('events', { thing_keys: keys.split(',') }, (message) => {
            if (message.type !== 'event') return;
            list.set((data) => ({
              ...data,
              things: data.things.map((t) =>
                t.thing_key === message.thing_key
                  ? {
                      ...t,
                      alive: true,
                      last_event: {
                        timestamp: message.timestamp as number,
                        data: message.data as Record<string, never>,
                      },
                    }
                  : t,
              ),
            }));
          });
    return () => {
      stopThings();
      stopEvents?.();
    };
  }, [keys]);

  return (
    <section>
      <h1>Things</h1>
      <div class="filters">
        <Field label="Search things" hint="keywords in the name, key, description or tags">
          {(id, describedBy) => (
            <input
              id={id}
              type="search"
              aria-describedby={describedBy}
              value={search}
              onInput={(e) => setSearch(e.currentTarget.value)}
            />
          )}
        </Field>
        <Choice label="Template" value={template} onChange={setTemplate} options={options.data?.templates} />
        <Choice label="Group" value={group} onChange={setGroup} options={options.data?.groups} />
      </div>
      {list.error && (
        <p role="alert" class="error">
          {list.error}
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Status</th>
            <th scope="col">Last event</th>
          </tr>
        </thead>
        <tbody>
          {list.data?.things.map((thing) => (
            <tr key={thing.thing_key}>
              <td>
                <Link to={`things/${encodeURIComponent(thing.thing_key)}`}>{thing.name}</Link>
              </td>
              <td>
                <code>{thing.thing_key}</code>
              </td>
              <td class={thing.alive ? 'online' : 'offline'}>{thing.alive ? 'Online' : 'Offline'}</td>
              <td>{thing.last_event ? showTime(thing.last_event.timestamp) : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && <Pager page={page} per={PER} total={list.data.total_count} noun="things" onPage={setPage} />}
    </section>
  );
}

function Choice(props: { label: string; value: string; onChange: (v: string) => void; options: Options | undefined }) {
  return (
    <Field label={props.label}>
      {(id) => (
        <select id={id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
          <option value="">All</option>
          {props.options?.map((o) => (
            <option key={o.key} value={o.key}>
              {o.name}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

async function loadFilterOptions(): Promise<{ templates: Options; groups: Options }> {
  const [templates, groups] = await Promise.all([
    answer(api.GET('/api/v3/thing_templates', { params: { query: { per: 1000, order_by: 'name', order: 'asc' } } })),
    answer(api.GET('/api/v3/groups', { params: { query: { per: 1000 } } })),
  ]);
  return {
    templates: templates.thing_templates.map((t) => ({ key: t.thing_template_key, name: t.name })),
    groups: groups.groups.map((g) => ({ key: g.group_key, name: g.name })),
  };
}
